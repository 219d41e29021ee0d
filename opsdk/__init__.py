"""opsdk: custom operators for Ascend NPUs, from idea to a validated, served operator.

Example:
    >>> import numpy as np, opsdk
    >>> op = opsdk.load("ThresholdedRelu")  # doctest: +SKIP
    >>> op(np.array([0.5, 2.0], np.float32), alpha=1.0)  # doctest: +SKIP
    array([0., 2.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

from ._version import __version__
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
from .runtime import build_op, list_operators, load
from .spec import REQUIRED, Attr, Case, Input, OpSpec, Output, TensorType, Values

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
    "Values",
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

def check(op: Any, samples: Any = None, **kwargs: Any) -> Any:
    """The operator author's one-call check; see :func:`opsdk.testing.check`."""
    from .testing import check as _check

    if isinstance(op, str):
        op = load(op)
    return _check(op, samples, **kwargs)
