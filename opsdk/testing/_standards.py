"""Precision standards: named, documented rules that judge actual against expected.

Every standard sees float64 copies of the actual output and of the expected output (the
reference computed on upcast inputs, then rounded to the output dtype) restricted to the
elements where both are finite; NaN and Inf positions are checked before, by
:func:`opsdk.testing.compare`, and must agree under every standard.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import SpecError

__all__ = [
    "Standard",
    "Verdict",
    "Msopst",
    "DoubleThousandths",
    "MereMare",
    "AllClose",
    "Exact",
    "STANDARDS",
    "DEFAULT_STANDARD",
    "get_standard",
    "standard_for",
    "tiny",
]

F64 = np.ndarray[Any, np.dtype[np.float64]]

_TINY = {
    "float16": float(np.finfo(np.float16).tiny),
    "bfloat16": 2.0**-126,
    "float32": float(np.finfo(np.float32).tiny),
    "float64": float(np.finfo(np.float64).tiny),
}
_INTS = ("int8", "int16", "int32", "int64", "uint8", "bool")


def tiny(dtype: str) -> float:
    """The smallest normal number of a float dtype (1.0 for integer dtypes).

    Relative errors use ``max(|expected|, tiny(dtype))`` as denominator, so a subnormal
    expected value is judged by the dtype's absolute resolution, not divided by ~0.

    Example:
        >>> tiny("float16")
        6.103515625e-05
    """
    return _TINY.get(dtype, 1.0)


@dataclass(frozen=True)
class Verdict:
    """What a standard decided: ``passed``, the per-element ``failed`` mask and why.

    ``rel`` is the relative error ``|a - e| / max(|e|, tiny)`` when the standard computed
    it (the comparison reuses it instead of computing it again).
    """

    passed: bool
    failed: np.ndarray
    reason: str
    rel: np.ndarray | None = None


def _undefined(std: str, dtype: str, defined: Mapping[str, Any]) -> SpecError:
    return SpecError(
        f"precision standard {std!r} defines no tolerance for {dtype} (it covers "
        f"{', '.join(defined)}); set standard={{'{dtype}': 'allclose'}} (or another "
        "standard) in spec.py"
    )


class Standard(ABC):
    """A named precision standard; subclasses implement :meth:`judge`."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def supports(self, dtype: str) -> bool:
        """Whether the standard defines tolerances for ``dtype``."""
        return True

    @abstractmethod
    def judge(self, actual: F64, expected: F64, dtype: str) -> Verdict:
        """Judge finite float64 ``actual`` against ``expected`` of output ``dtype``."""

    def __repr__(self) -> str:
        return f"<standard {self.name}: {self.summary}>"


class Msopst(Standard):
    """CANN's default ST comparison (msopst ``data_compare``).

    Per element: ``d = |a - e|``; ``rdiff = d`` when ``d < diff_thd`` (small values are
    judged by their absolute error), else ``d / (max(|a|, |e|, 2**-14 / diff_thd) + 1e-9)``.
    An element fails when ``rdiff > diff_thd`` (0.01). The case fails when the failing
    share exceeds ``pct_thd`` (0.05) or the largest ``rdiff`` reaches ``max_diff_hd`` (0.1).
    """

    name = "msopst"
    summary = "rel. error <= 0.01 on >= 95% of elements, largest rel. error < 0.1"

    def __init__(self, diff_thd: float = 0.01, pct_thd: float = 0.05, max_diff_hd: float = 0.1):
        self.diff_thd, self.pct_thd, self.max_diff_hd = diff_thd, pct_thd, max_diff_hd

    def rdiff(self, actual: F64, expected: F64) -> F64:
        """The msopst per-element relative difference."""
        d = np.abs(actual - expected)
        floor = (1.0 / (1 << 14)) / self.diff_thd
        denom = np.maximum(np.maximum(np.abs(actual), np.abs(expected)), floor) + 1e-9
        return np.where(d < self.diff_thd, d, d / denom)

    def judge(self, actual: F64, expected: F64, dtype: str) -> Verdict:
        r = self.rdiff(actual, expected)
        failed = r > self.diff_thd
        share = np.count_nonzero(failed) / failed.size if failed.size else 0.0
        worst = float(r.max()) if r.size else 0.0
        if share > self.pct_thd:
            why = (
                f"{share:.2%} of elements exceed rel. error {self.diff_thd} "
                f"(allowed {self.pct_thd:.0%})"
            )
            return Verdict(False, failed, why)
        if worst >= self.max_diff_hd:
            why = f"largest rel. error {worst:.4g} reaches the hard limit {self.max_diff_hd}"
            return Verdict(False, failed, why)
        return Verdict(True, failed, f"{share:.2%} beyond {self.diff_thd}, max rdiff {worst:.3g}")


class DoubleThousandths(Standard):
    """The "double thousandths" standard (per dtype ``rtol, atol, max_atol``).

    An element fails when ``|a - e| > atol * |e|``; the case fails when more than
    ``rtol * N`` elements fail or any element has ``|a - e| > max_atol * |e|``.
    float16 (1e-3, 1e-3, 0.1), float32 (1e-4, 1e-4, 0.01). Integer dtypes: an element
    fails when ``|a - e| > 1`` and the case fails on any failing element.
    """

    name = "double-thousandths"
    summary = "<= rtol*N elements beyond atol*|e|, none beyond max_atol*|e|"
    TOLERANCES: ClassVar[dict[str, tuple[float, float, float]]] = {
        "float16": (1e-3, 1e-3, 0.1),
        "float32": (1e-4, 1e-4, 0.01),
    }

    def supports(self, dtype: str) -> bool:
        return dtype in self.TOLERANCES or dtype in _INTS

    def judge(self, actual: F64, expected: F64, dtype: str) -> Verdict:
        d = np.abs(actual - expected)
        if dtype in _INTS:
            failed = d > 1
            n = int(failed.sum())
            return Verdict(n == 0, failed, f"{n} elements differ by more than 1")
        if dtype not in self.TOLERANCES:
            raise _undefined(self.name, dtype, {**self.TOLERANCES, "integers": 0})
        rtol, atol, max_atol = self.TOLERANCES[dtype]
        mag = np.abs(expected)
        failed = d > atol * mag
        n, allowed = int(failed.sum()), rtol * failed.size
        if n > allowed:
            why = f"{n} elements exceed {atol:g}*|e| (allowed {allowed:g} = {rtol:g}*N)"
            return Verdict(False, failed, why)
        hard = d > max_atol * mag
        if hard.any():
            return Verdict(False, failed, f"{int(hard.sum())} elements exceed {max_atol:g}*|e|")
        return Verdict(True, failed, f"{n} elements beyond {atol:g}*|e| (allowed {allowed:g})")


class MereMare(Standard):
    """Mean and max relative error: pass when ``MERE < T`` and ``MARE < 10 T``.

    ``rel = |a - e| / max(|e|, tiny)`` with ``tiny`` the dtype's smallest normal number;
    ``T`` is 2**-10 (float16), 2**-7 (bfloat16), 2**-13 (float32).
    """

    name = "mere-mare"
    summary = "mean rel. error < T and max rel. error < 10T"
    THRESHOLDS: ClassVar[dict[str, float]] = {
        "float16": 2.0**-10,
        "bfloat16": 2.0**-7,
        "float32": 2.0**-13,
    }

    def supports(self, dtype: str) -> bool:
        return dtype in self.THRESHOLDS

    def judge(self, actual: F64, expected: F64, dtype: str) -> Verdict:
        if dtype not in self.THRESHOLDS:
            raise _undefined(self.name, dtype, self.THRESHOLDS)
        t = self.THRESHOLDS[dtype]
        rel = np.abs(actual - expected) / np.maximum(np.abs(expected), tiny(dtype))
        failed = rel >= 10 * t
        mere = float(rel.sum()) / rel.size if rel.size else 0.0
        mare = float(rel.max()) if rel.size else 0.0
        if mere >= t:
            return Verdict(False, failed, f"MERE {mere:.3g} >= T = {t:.3g}", rel)
        if mare >= 10 * t:
            return Verdict(False, failed, f"MARE {mare:.3g} >= 10T = {10 * t:.3g}", rel)
        why = f"MERE {mere:.3g} < {t:.3g}, MARE {mare:.3g} < {10 * t:.3g}"
        return Verdict(True, failed, why, rel)


class AllClose(Standard):
    """``|a - e| <= atol + rtol * |e|`` for every element, torch.testing's defaults.

    (rtol, atol): float16 (1e-3, 1e-5), bfloat16 (1.6e-2, 1e-5), float32 (1.3e-6, 1e-5),
    float64 (1e-7, 1e-7); integer dtypes (0, 0).
    """

    name = "allclose"
    summary = "every element within atol + rtol*|e|"
    TOLERANCES: ClassVar[dict[str, tuple[float, float]]] = {
        "float16": (1e-3, 1e-5),
        "bfloat16": (1.6e-2, 1e-5),
        "float32": (1.3e-6, 1e-5),
        "float64": (1e-7, 1e-7),
    }

    def __init__(self, rtol: float | None = None, atol: float | None = None):
        self.rtol, self.atol = rtol, atol

    def tolerances(self, dtype: str) -> tuple[float, float]:
        """The (rtol, atol) used for ``dtype``."""
        rtol, atol = self.TOLERANCES.get(dtype, (0.0, 0.0))
        return (rtol if self.rtol is None else self.rtol, atol if self.atol is None else self.atol)

    def judge(self, actual: F64, expected: F64, dtype: str) -> Verdict:
        rtol, atol = self.tolerances(dtype)
        failed = np.abs(actual - expected) > atol + rtol * np.abs(expected)
        n = int(np.count_nonzero(failed))
        return Verdict(n == 0, failed, f"{n} elements beyond atol={atol:g} + rtol={rtol:g}*|e|")


class Exact(Standard):
    """Bit-exact values: every element equal, and for floats the sign of zero too."""

    name = "exact"
    summary = "every element equal (including the sign of zero)"

    def judge(self, actual: F64, expected: F64, dtype: str) -> Verdict:
        failed = (actual != expected) | (np.signbit(actual) != np.signbit(expected))
        n = int(failed.sum())
        return Verdict(n == 0, failed, f"{n} elements differ")


#: Every standard by name.
STANDARDS: dict[str, Standard] = {
    s.name: s for s in (Msopst(), DoubleThousandths(), MereMare(), AllClose(), Exact())
}

#: The standard used for a dtype when neither spec.py nor the command line chooses one.
DEFAULT_STANDARD: dict[str, str] = {
    "float16": "mere-mare",
    "bfloat16": "mere-mare",
    "float32": "mere-mare",
    "float64": "allclose",
    **{d: "exact" for d in _INTS},
}


def get_standard(name: str) -> Standard:
    """Look a standard up by name; raise SpecError listing the names.

    Example:
        >>> get_standard("msopst").name
        'msopst'
    """
    try:
        return STANDARDS[name]
    except KeyError:
        raise SpecError(
            f"unknown precision standard {name!r}; expected one of {', '.join(STANDARDS)}"
        ) from None


def standard_for(
    dtype: str,
    spec_standard: str | Mapping[str, str] | None = None,
    override: str | None = None,
) -> Standard:
    """The standard judging an output of ``dtype``: override, then spec.py, then default.

    Example:
        >>> standard_for("float16").name
        'mere-mare'
        >>> standard_for("float16", {"float16": "msopst"}).name
        'msopst'
    """
    if override:
        return get_standard(override)
    if isinstance(spec_standard, str):
        return get_standard(spec_standard)
    if spec_standard and dtype in spec_standard:
        return get_standard(spec_standard[dtype])
    return get_standard(DEFAULT_STANDARD.get(dtype, "exact"))
