"""The NPU implementation (PrivateUse1) of a registered operator, through torch_npu.

Where ``torch_npu`` is importable, each operator gets a kernel for the ``npu`` device that
runs the operator's generated aclnn entry (or aclop, for AI CPU operators) through opsdk's
NPU executor (:mod:`opsdk.ascend.npu.executor`): the input tensors are copied to host
NumPy arrays (``Tensor.cpu()``), the executor uploads them, launches and downloads, and the
outputs go back to the input's NPU (``Tensor.to(device)``). Without torch_npu nothing is
registered and :func:`npu_unavailable` says why. Nothing is emulated.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import TYPE_CHECKING, Any

from ._convert import from_numpy, to_numpy

if TYPE_CHECKING:
    from ._registered import Registered

__all__ = ["npu_unavailable", "register_npu"]


def npu_unavailable() -> str:
    """Why there is no NPU implementation here ('' when torch_npu is importable)."""
    if importlib.util.find_spec("torch_npu") is None:
        return "torch_npu is not installed (install it on an Ascend host with CANN)"
    return ""


def register_npu(reg: Registered) -> bool:
    """Register the ``npu`` kernel of ``reg`` when torch_npu is importable; True if done."""
    if npu_unavailable():
        return False
    import torch_npu  # noqa: F401  (registers the npu device as PrivateUse1)

    from ..runtime import load

    executor = functools.cache(lambda: load(str(reg.info.folder), device="npu"))

    def npu(*inputs: Any, **attrs: Any) -> Any:
        device = next(t.device for t in inputs if t is not None)
        arrays = [None if t is None else to_numpy(t.cpu()) for t in inputs]
        out = executor()(*arrays, **attrs)
        outs = out if isinstance(out, tuple) else (out,)
        result = tuple(from_numpy(o).to(device) for o in outs)
        return result if isinstance(out, tuple) else result[0]

    reg.custom_op.register_kernel("npu", npu)
    return True
