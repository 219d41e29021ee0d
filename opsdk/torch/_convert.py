"""Zero-copy views between CPU tensors and NumPy arrays (bfloat16 through ml_dtypes).

A contiguous CPU tensor becomes a NumPy view of the same memory; any other layout is made
contiguous first (one copy). A kernel's NumPy output becomes a tensor over the same memory.

Example:
    >>> import torch
    >>> t = torch.ones(3, dtype=torch.bfloat16)
    >>> a = to_numpy(t)
    >>> str(a.dtype), a.ctypes.data == t.data_ptr()
    ('bfloat16', True)
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

__all__ = ["to_numpy", "from_numpy"]

_BF16 = torch.bfloat16
_NP_BF16 = np.dtype(ml_dtypes.bfloat16)


def to_numpy(t: Any) -> np.ndarray:
    """A NumPy view of CPU tensor ``t`` (a contiguous copy first when it is strided)."""
    if t.requires_grad:
        t = t.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype is _BF16:
        return t.view(torch.int16).numpy().view(_NP_BF16)
    return t.numpy()


def from_numpy(a: np.ndarray) -> Any:
    """A tensor over the memory of kernel output ``a`` (no copy)."""
    if a.dtype == _NP_BF16:
        return torch.from_numpy(a.view(np.int16)).view(_BF16)
    return torch.from_numpy(a)
