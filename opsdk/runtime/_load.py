"""Finding, building and loading operators: :func:`load`, :func:`build_op`,
:func:`list_operators` (re-exported as ``opsdk.load`` and friends).

This module sits at the bottom with the registry and the build driver, so every layer above
may call it; nothing here imports the package face.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import BuildError, DeviceUnavailable, SpecError

__all__ = ["load", "build_op", "list_operators"]

_LOADED: dict[tuple[str, str], Any] = {}


def build_op(name: str, *, force: bool = False, progress: Any = None) -> Path:
    """Compile an operator's kernel (cached); return the module path.

    Example:
        >>> build_op("ThresholdedRelu")  # doctest: +SKIP
        PosixPath('.../_opsdk_kernels.cpython-311-x86_64-linux-gnu.so')
    """
    from ..build import build_operator
    from ..registry import find_operator

    info = find_operator(name)
    if info.prebuilt is not None:
        return info.prebuilt
    try:
        return build_operator(
            info.folder, name=info.spec.snake_name, force=force, progress=progress
        ).module
    except BuildError as e:
        sep = "\n" if "\n" in str(e) else " "  # a compiler's lines stay lines; one stays one
        raise type(e)(f"{e}{sep}-- while building {info.name} from {info.folder}") from None


def load(
    name: str, *, device: str = "cpu", progress: Any = None, cann_op_type: str | None = None
) -> Any:
    """Find, build if needed, and load an operator; returns a callable executor.

    ``name`` is ``MyOp``, ``my_op``, ``domain::MyOp`` or a path to an operator folder.
    An operator from an installed wheel uses its prebuilt kernel and never compiles.
    With ``device="npu"``, ``cann_op_type`` is the operator's type name in CANN when
    ``opsdk cann --op-type`` renamed it (e.g. ``ThresholdedReluCustom``).

    Example:
        >>> op = load("ThresholdedRelu")  # doctest: +SKIP
        >>> op.spec.op_type  # doctest: +SKIP
        ('com.opsdk', 'ThresholdedRelu', 1)
    """
    from ..registry import find_operator

    info = find_operator(name)
    if device == "npu":  # the ascend wing's executor, through the registry
        from ._devices import open_registered

        return open_registered("npu", info.folder, info.spec, {"cann_op_type": cann_op_type})
    if cann_op_type is not None:
        raise SpecError(
            f"{info.name}: cann_op_type names the CANN operator for device='npu'; the "
            f"{device} executor runs kernel.cpp, drop cann_op_type"
        )
    if device != "cpu":
        raise DeviceUnavailable(f"{info.name}: unknown device {device!r}; use 'cpu' or 'npu'")
    module_path = (
        info.prebuilt
        if info.prebuilt is not None
        else build_op(str(info.folder), progress=progress)
    )
    key = (str(info.folder), str(module_path))
    if key not in _LOADED:
        from .cpu import Operator, load_module

        _LOADED[key] = Operator(info.spec, load_module(module_path), info.folder)
    return _LOADED[key]


def list_operators() -> list[Any]:
    """Every operator opsdk can find (source folders, installed wheels, shipped ones)."""
    from ..registry import find_operators

    return find_operators()
