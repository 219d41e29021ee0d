"""The ascend wing's devices in the executor registry (:mod:`opsdk.runtime._devices`):
``npu`` (the operator on an Ascend NPU through CANN), ``ascendc-model`` (its AI Core kernel
on opsdk's CPU model of the Ascend C API) and ``ascendc-cpu``/``ascendc-sim`` (an installed
toolkit's CPU-debug mode and simulator). Each raises DeviceUnavailable with the reason
where it cannot run; nothing is emulated.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import DeviceUnavailable
from ..runtime import register_device
from ..spec import OpSpec


def _npu(folder: Path, spec: OpSpec, options: dict[str, Any]) -> Any:
    """``cann_op_type``: the CANN type (a string), or ``--opsdk-cann-op-type`` values (a
    list) read with ``cann_project`` folders (see :mod:`opsdk.testing._cann_type`)."""
    try:
        from .npu.executor import NpuOperator
    except ImportError as e:
        raise DeviceUnavailable(
            f"npu unavailable: opsdk.ascend.npu.executor cannot be imported ({e})"
        ) from e
    op_type = options.get("cann_op_type")
    if isinstance(op_type, (list, tuple)) or options.get("cann_project"):
        from ..testing._cann_type import cann_types

        op_type = cann_types(op_type or [], options.get("cann_project") or []).for_spec(spec)
    return NpuOperator(spec, op_type=op_type)


def _ascendc_model(folder: Path, spec: OpSpec, options: dict[str, Any]) -> Any:
    from .ascendc.model import AscendcModel
    from .ascendc.toolkit import DEFAULT_SOC

    threads = int(os.environ.get("OPSDK_ASCENDC_THREADS", "1"))
    soc = os.environ.get("OPSDK_ASCEND_SOC", DEFAULT_SOC)
    return AscendcModel(folder, spec, soc=soc, seed=int(options.get("seed") or 0),
                        threads=threads)


def _toolkit(device: str) -> Any:
    def opener(folder: Path, spec: OpSpec, options: dict[str, Any]) -> Any:
        from .ascendc.toolkit import open_toolkit_device

        return open_toolkit_device(device, folder, spec)

    return opener


register_device("npu", _npu)
register_device("ascendc-model", _ascendc_model)
register_device("ascendc-cpu", _toolkit("ascendc-cpu"))
register_device("ascendc-sim", _toolkit("ascendc-sim"))
