"""The base of the precision standards: verdicts, the Standard class, shared helpers.

:mod:`._standards` (CANN's operator standards, allclose, exact) and :mod:`._methods`
(ops-test-kit's comparison methods, ULP, cosine) build on it; :mod:`._standards` holds the
registry of every standard by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import SpecError

__all__ = ["Standard", "Verdict", "tiny"]

_TINY = {
    "float16": float(np.finfo(np.float16).tiny),
    "bfloat16": 2.0**-126,
    "float32": float(np.finfo(np.float32).tiny),
    "float64": float(np.finfo(np.float64).tiny),
}
_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
        "float32": float(np.finfo(np.float32).max), "float64": float(np.finfo(np.float64).max)}
_INTS = ("int8", "int16", "int32", "int64", "uint8", "bool")


def tiny(dtype: str) -> float:
    """The smallest normal number of a float dtype (1.0 for integer dtypes).

    opsdk's statistics (max rel. error, MERE, MARE in a report) divide by
    ``max(|expected|, tiny(dtype))``; the standards use their own denominators.

    Example:
        >>> tiny("float16")
        6.103515625e-05
    """
    return _TINY.get(dtype, 1.0)


@dataclass(frozen=True)
class Verdict:
    """What a standard decided: ``passed``, the per-element ``failed`` mask and why."""

    passed: bool
    failed: np.ndarray
    reason: str


def _undefined(std: str, dtype: str, defined: Mapping[str, Any]) -> SpecError:
    return SpecError(
        f"precision standard {std!r} defines no tolerance for {dtype} (it covers "
        f"{', '.join(defined)}); set standard={{'{dtype}': 'allclose'}} (or another "
        "standard) in spec.py"
    )


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64).reshape(-1)


def _int_diff(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Exact ``|a - e|`` of integer or bool arrays (float64 up to 32 bits, else Python ints)."""
    if a.dtype.itemsize >= 8:
        return np.abs(a.astype(object) - e.astype(object)).astype(np.float64)
    return np.abs(_f64(a) - _f64(e))


class Standard(ABC):
    """A named precision standard; subclasses implement :meth:`judge`.

    ``share_over_all``: the rule divides a failing count by the whole tensor size, NaN
    and Inf positions included (opsdk then also runs the ``finite-share`` check).
    ``needs_reference``: the rule also needs a trusted device's output and the float64
    reference (:meth:`judge_against`).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    share_over_all: ClassVar[bool] = False
    #: The standard compares against a reference device's output (see :meth:`judge_against`).
    needs_reference: ClassVar[bool] = False

    def supports(self, dtype: str) -> bool:
        """Whether the standard defines tolerances for ``dtype``."""
        return True

    @abstractmethod
    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        """Judge flat ``actual`` against ``expected`` (output dtype) under ``dtype``'s rule."""

    def judge_against(
        self, actual: np.ndarray, expected: np.ndarray, dtype: str, *,
        golden: np.ndarray | None = None, reference: np.ndarray | None = None,
    ) -> Verdict:
        """Judge with what some standards need besides the rounded expectation.

        ``golden``: the float64 reference before rounding to the output dtype;
        ``reference``: a trusted device's output on the same inputs (output dtype). Only
        standards with ``needs_reference`` read them; the others judge as :meth:`judge`.
        """
        return self.judge(actual, expected, dtype)

    def __repr__(self) -> str:
        return f"<standard {self.name}: {self.summary}>"
