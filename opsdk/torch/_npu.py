"""The NPU implementation (PrivateUse1) of a registered operator, through torch_npu.

Where ``torch_npu`` loads, each operator gets a kernel for the ``npu`` device:

* **aclnn** (operators with an AI Core kernel, installed by ``opsdk cann``): the operator's
  C++ kernel (:mod:`opsdk.torch._npu_ext`) wraps the tensors' device memory in aclTensors,
  takes the workspace from torch_npu's caching allocator and enqueues the generated
  ``aclnn<Op>`` pair on the current NPU stream. The outputs are allocated on the device from
  the spec's shape inference (metadata only). No host copy, no synchronisation: the call is
  capturable in an NPU graph.
* **aclop with host copies** (AI CPU operators, which have no aclnn API, or a vendor library
  without the operator): the inputs go to the host, opsdk's NPU executor runs the operator
  and the outputs come back. This path synchronises; it says so once per operator
  (:class:`~opsdk.torch.errors.NpuHostCopies`).

Without torch_npu nothing is registered, :func:`npu_unavailable` gives the reason and it is
logged once (logger ``opsdk.torch``). Nothing is emulated.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import warnings
from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from ._convert import from_numpy, to_numpy
from .errors import NpuHostCopies

if TYPE_CHECKING:
    from ._registered import Registered

__all__ = ["npu_unavailable", "register_npu"]

_LOG = logging.getLogger("opsdk.torch")


@functools.cache
def npu_unavailable() -> str:
    """Why there is no NPU implementation here ('' when torch_npu loads).

    Example:
        >>> isinstance(npu_unavailable(), str)
        True
    """
    if importlib.util.find_spec("torch_npu") is None:
        return "torch_npu is not installed (install it on an Ascend host with CANN)"
    try:
        import torch_npu  # noqa: F401  (registers the npu device as PrivateUse1)
    except Exception as e:  # noqa: BLE001 - any failure of its import is the reason
        return (f"torch_npu is installed but does not load ({type(e).__name__}: {e}); "
                "source CANN's set_env.sh before starting Python")
    return ""


@functools.cache
def _say_unavailable(reason: str) -> None:
    _LOG.info("opsdk.torch: no npu kernels are registered: %s", reason)


def register_npu(reg: Registered) -> bool:
    """Register the ``npu`` kernel of ``reg`` when torch_npu loads; True if done."""
    reason = npu_unavailable()
    if reason:
        _say_unavailable(reason)
        return False
    reg.custom_op.register_kernel("npu", _kernel(reg))
    return True


def _kernel(reg: Registered) -> Any:
    spec = reg.spec

    @functools.cache
    def api() -> Any:
        from ..ascend.npu import find_op_api

        found, why = find_op_api(spec.name)
        if found is None:
            warnings.warn(
                f"{spec.name}: npu calls go through aclop with host copies and a "
                f"synchronisation ({why}); an operator with an AI Core kernel, installed by "
                "opsdk cann, runs through aclnn on the device", NpuHostCopies, stacklevel=4)
        return found

    @functools.cache
    def module() -> Any:
        from ._cpp import load_module
        from ._npu_ext import build_npu_kernel, module_name

        return load_module(build_npu_kernel(spec), module_name(spec))

    @functools.cache
    def host_executor() -> Any:
        from ..runtime import load

        return load(str(reg.info.folder), device="npu")

    def npu(*inputs: Any, **attrs: Any) -> Any:
        found = api()
        if found is None:
            return _through_host(host_executor(), inputs, attrs)
        outs = _outputs_on_device(reg, inputs, attrs)
        resolved = spec.resolve_attrs(attrs)
        module().launch(str(found.path), list(inputs), outs,
                        *(resolved[a.name] for a in spec.attrs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    npu.__name__ = f"{spec.name}_npu"
    return npu


def _outputs_on_device(reg: Registered, inputs: tuple[Any, ...], attrs: dict[str, Any],
                       ) -> list[Any]:
    """The outputs, allocated on the inputs' device from the spec's shape inference."""
    import torch

    from ._fake import infer_outputs

    def unknown() -> Any:
        raise SpecError(
            f"{reg.spec.name}: an output's shape depends on the input values, so the npu "
            "kernel cannot allocate it before the launch; give spec.py's infer a shape "
            "from the input shapes and attributes")

    device = next(t.device for t in inputs if t is not None)
    return [torch.empty(shape, dtype=dtype, device=device)
            for shape, dtype in infer_outputs(reg.spec, inputs, attrs, unknown)]


def _through_host(executor: Any, inputs: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
    """The explicit host path of operators without an aclnn API (see the module doc)."""
    device = next(t.device for t in inputs if t is not None)
    arrays = [None if t is None else to_numpy(t.cpu()) for t in inputs]
    out = executor(*arrays, **attrs)
    outs = out if isinstance(out, tuple) else (out,)
    result = tuple(from_numpy(o).to(device) for o in outs)
    return result if isinstance(out, tuple) else result[0]
