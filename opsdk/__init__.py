"""opsdk: custom operators for Ascend NPUs, from idea to a validated, served operator.

Example:
    >>> import numpy as np, opsdk
    >>> op = opsdk.load("ThresholdedRelu")  # doctest: +SKIP
    >>> op(np.array([0.5, 2.0], np.float32), alpha=1.0)  # doctest: +SKIP
    array([0., 2.], dtype=float32)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .dtypes import TFloat, TFloatAll, TFloatBf, TInt, TNumeric
from .errors import (
    BuildError,
    DeviceUnavailable,
    KernelCrash,
    KernelError,
    ManifestError,
    OperatorNotFound,
    OpsdkError,
    RegistrationMismatch,
    ScaffoldError,
    SpecError,
    ValidationError,
)
from .spec import REQUIRED, Attr, Case, Input, OpSpec, Output, TensorType

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "load",
    "build_op",
    "check",
    "list_operators",
    "OpSpec",
    "Input",
    "Output",
    "Attr",
    "Case",
    "TensorType",
    "REQUIRED",
    "TFloat",
    "TFloatBf",
    "TFloatAll",
    "TInt",
    "TNumeric",
    "OpsdkError",
    "SpecError",
    "ScaffoldError",
    "BuildError",
    "KernelError",
    "KernelCrash",
    "RegistrationMismatch",
    "ValidationError",
    "OperatorNotFound",
    "DeviceUnavailable",
    "ManifestError",
]

_LOADED: dict[tuple[str, str], Any] = {}


def build_op(name: str, *, force: bool = False, progress: Any = None) -> Path:
    """Compile an operator's kernel (cached); return the module path.

    Example:
        >>> opsdk.build_op("ThresholdedRelu")  # doctest: +SKIP
        PosixPath('.../_opsdk_kernels.cpython-311-x86_64-linux-gnu.so')
    """
    from .build import build_operator
    from .registry import find_operator

    info = find_operator(name)
    if info.prebuilt is not None:
        return info.prebuilt
    try:
        return build_operator(
            info.folder, name=info.spec.snake_name, force=force, progress=progress
        ).module
    except BuildError as e:
        raise type(e)(f"{e}\n-- while building {info.name} from {info.folder}") from None


def load(
    name: str, *, device: str = "cpu", progress: Any = None, cann_op_type: str | None = None
) -> Any:
    """Find, build if needed, and load an operator; returns a callable executor.

    ``name`` is ``MyOp``, ``my_op``, ``domain::MyOp`` or a path to an operator folder.
    An operator from an installed wheel uses its prebuilt kernel and never compiles.
    With ``device="npu"``, ``cann_op_type`` is the operator's type name in CANN when
    ``opsdk cann --op-type`` renamed it (e.g. ``ThresholdedReluCustom``).

    Example:
        >>> op = opsdk.load("ThresholdedRelu")  # doctest: +SKIP
        >>> op.spec.op_type  # doctest: +SKIP
        ('com.opsdk', 'ThresholdedRelu', 1)
    """
    from .registry import find_operator

    info = find_operator(name)
    if device == "npu":
        from .runtime.npu import NpuOperator

        return NpuOperator(info.spec, op_type=cann_op_type)
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
        from .runtime.cpu import Operator, load_module

        _LOADED[key] = Operator(info.spec, load_module(module_path), info.folder)
    return _LOADED[key]


def list_operators() -> list[Any]:
    """Every operator opsdk can find (source folders, installed wheels, shipped ones)."""
    from .registry import find_operators

    return find_operators()


def check(op: Any, samples: Any = None, **kwargs: Any) -> Any:
    """The operator author's one-call check; see :func:`opsdk.testing.check`."""
    from .testing import check as _check

    if isinstance(op, str):
        op = load(op)
    return _check(op, samples, **kwargs)
