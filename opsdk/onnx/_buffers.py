"""Output buffers for custom nodes, reused once nobody holds them any more.

A fresh multi-megabyte NumPy array costs page faults and cold caches on every run; ONNX
Runtime avoids both with its arena. :class:`BufferPool` does the same for the kernels'
outputs: a buffer is handed out again only when the pool's own reference is the last one
(CPython reference counts), so an array a caller kept, or a view of it, is never reused.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dtypes import dtype_name, to_numpy
from ..spec import OpSpec, TensorType

__all__ = ["BufferPool", "output_layout"]


def _refs(bufs: list[np.ndarray], i: int) -> int:
    return sys.getrefcount(bufs[i])


class BufferPool:
    """Per-(shape, dtype) free lists of arrays, bounded to ``per_key`` arrays each.

    Example:
        >>> pool = BufferPool()
        >>> a = pool.take((4,), np.dtype("float32"))
        >>> b = pool.take((4,), np.dtype("float32"))  # ``a`` is still held: a new one
        >>> a is b
        False
    """

    def __init__(self, per_key: int = 4) -> None:
        self._lock = threading.Lock()
        self._bufs: dict[tuple[tuple[int, ...], str], list[np.ndarray]] = {}
        self._per_key = per_key
        self._free_refs = _refs([np.empty(0)], 0)  # a buffer only the pool holds

    def take(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
        """A C-contiguous array nobody else references (reused when possible)."""
        key = (shape, dtype.str)
        with self._lock:
            bufs = self._bufs.setdefault(key, [])
            for i in range(len(bufs)):
                if _refs(bufs, i) <= self._free_refs:
                    return bufs[i]
            buf = np.empty(shape, dtype)
            if len(bufs) < self._per_key:
                bufs.append(buf)
            return buf


def output_layout(
    spec: OpSpec, arrays: Sequence[np.ndarray | None], attrs: dict[str, Any]
) -> list[tuple[tuple[int, ...], np.dtype[Any]]] | None:
    """Concrete (shape, dtype) of each output, or None when inference cannot tell."""
    try:
        types = spec.infer(
            [None if a is None else TensorType(a.shape, dtype_name(a.dtype)) for a in arrays],
            attrs,
        )
    except (ValueError, TypeError):  # left to the kernel, which names the problem
        return None
    spec.check_allocation(types, attrs)  # beyond int64 or the memory ceiling: refused here
    layout = []
    for t in types:
        if not all(isinstance(d, int) and d >= 0 for d in t.shape):
            return None
        layout.append((tuple(int(d) for d in t.shape), to_numpy(t.dtype)))  # type: ignore[arg-type]
    return layout
