"""Precision standards: named, documented rules that judge actual against expected.

Each standard reproduces one rule as the tool that defines it computes it: its
arithmetic dtype, its denominators, its treatment of NaN and Inf and the size its
failing share is divided by. A standard sees the whole flattened output (both arrays in
the output dtype, the expected one being the float64 reference rounded to it) and
decides on its own terms. opsdk's stricter checks (NaN/Inf positions must agree, a
share counted over the finite elements) are separate, named checks run by
:func:`opsdk.testing.compare`, so a report says which rule failed.

Sources (docs/validation.md has a table per standard of what the CANN tool does, what
opsdk does and why):

* ``msopst``: the operator ST tool of the CANN toolkit (``compare_data.py``), whose
  verdicts were compared with these on a CANN 8.1.RC1 toolkit;
* ``double-thousandths``: the CANN operator UT frame (``precision_compare_util.py``);
* ``mere-mare``: CANN's ecosystem operator precision standard (hicann/opbase
  ``docs/zh/ops_precision_standard/experimental_standard.md``) with the small-value
  rule and NaN/Inf handling of CANN Bench's precision comparison design (hicann/cann-bench
  ``docs/design/precision_comparison_design.md``, ``docs/spec/benchmark_spec.md`` 4.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import SpecError
from ._methods import METHODS, PARAMETRISED
from ._standard_base import _INTS, _MAX, Standard, Verdict, _f64, _int_diff, _undefined, tiny

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
    "standard_name",
    "reads_reference",
    "tiny",
]


class Msopst(Standard):
    """CANN's operator ST comparison (msopst ``compare_data.py``), computed in float32.

    Per element: ``d = |a - e|``; ``rdiff = d`` when ``d < diff_thd`` (small differences
    are judged as absolute errors), else ``d / (max(|a|, |e|, 2**-14 / diff_thd) + 1e-9)``.
    An element fails when ``rdiff > diff_thd`` (0.01). The case fails when the failing
    count exceeds ``pct_thd`` (0.05) of the whole tensor size or the largest ``rdiff``
    reaches ``max_diff_hd`` (0.1). Everything is float32, as in the tool: float32(0.01)
    against a zero is not below float32(0.01), so it is a relative error of 1. A NaN on
    either side, and any Inf that is not matched by an equal Inf, makes ``rdiff`` NaN
    (``inf / inf``), which fails nothing: the tool skips those positions silently.
    """

    name = "msopst"
    summary = "rel. error <= 0.01 on >= 95% of elements, largest rel. error < 0.1 (float32)"
    share_over_all = True

    def __init__(self, diff_thd: float = 0.01, pct_thd: float = 0.05, max_diff_hd: float = 0.1):
        self.diff_thd, self.pct_thd, self.max_diff_hd = diff_thd, pct_thd, max_diff_hd

    def rdiff(self, actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
        """The per-element relative difference, in float32 as msopst computes it."""
        a = np.asarray(actual).astype(np.float32).reshape(-1)
        e = np.asarray(expected).astype(np.float32).reshape(-1)
        thd = np.float32(self.diff_thd)
        floor = np.float32((1.0 / (1 << 14)) / self.diff_thd)
        with np.errstate(all="ignore"):
            d = np.abs(a - e)
            denom = np.maximum(np.maximum(np.abs(a), np.abs(e)), floor) + np.float32(1e-9)
            return np.where(d < thd, d, d / denom)

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        r = self.rdiff(actual, expected)
        with np.errstate(invalid="ignore"):
            failed = r > np.float32(self.diff_thd)
        size = failed.size
        skipped = int(np.isnan(r).sum())
        share = np.count_nonzero(failed) / size if size else 0.0
        worst = float(np.nanmax(r)) if size > skipped else 0.0
        note = f"; {skipped} NaN/Inf positions skipped" if skipped else ""
        if share > self.pct_thd:
            why = (f"{share:.2%} of {size} elements exceed rel. error {self.diff_thd} "
                   f"(allowed {self.pct_thd:.0%}){note}")
            return Verdict(False, failed, why)
        if worst >= self.max_diff_hd:
            why = f"largest rel. error {worst:.4g} reaches the hard limit {self.max_diff_hd}{note}"
            return Verdict(False, failed, why)
        why = f"{share:.2%} beyond {self.diff_thd}, max rdiff {worst:.3g}{note}"
        return Verdict(True, failed, why)


class DoubleThousandths(Standard):
    """The CANN UT frame's "double thousandths" standard (per dtype ``rtol, atol, max_atol``).

    Floats: an element is good when ``|a - e| <= atol * |e|`` (so a NaN on either side is
    an error, and a finite value where the reference is Inf is good); the case fails when
    more than ``rtol * N`` elements are errors (N: the whole size) or any element is not
    within ``max_atol * |e|``. float16 (1e-3, 1e-3, 0.1), float32 (1e-4, 1e-4, 0.01).
    bool: the case fails when more than 0.1% of the elements differ. Integers: an element
    fails when ``|a - e| > 1`` and the case fails on any failing element (opsdk's rule;
    the UT frame's relative rule in wrapping int8/uint8 arithmetic is not copied).
    """

    name = "double-thousandths"
    summary = "<= rtol*N elements beyond atol*|e|, none beyond max_atol*|e|"
    share_over_all = True
    TOLERANCES: ClassVar[dict[str, tuple[float, float, float]]] = {
        "float16": (1e-3, 1e-3, 0.1),
        "float32": (1e-4, 1e-4, 0.01),
    }
    #: Share of differing elements a bool output may have.
    BOOL_SHARE = 1e-3

    def supports(self, dtype: str) -> bool:
        return dtype in self.TOLERANCES or dtype in _INTS

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        a, e = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
        if dtype == "bool":
            failed = a.astype(bool) != e.astype(bool)
            n, allowed = int(failed.sum()), self.BOOL_SHARE * failed.size
            why = f"{n} of {failed.size} elements differ (allowed {allowed:g} = 0.1% of N)"
            return Verdict(n <= allowed, failed, why)
        if dtype in _INTS:
            failed = _int_diff(a, e) > 1
            n = int(failed.sum())
            return Verdict(n == 0, failed, f"{n} elements differ by more than 1")
        if dtype not in self.TOLERANCES:
            raise _undefined(self.name, dtype, {**self.TOLERANCES, "integers": 0, "bool": 0})
        rtol, atol, max_atol = self.TOLERANCES[dtype]
        a64, e64 = _f64(a), _f64(e)
        with np.errstate(all="ignore"):
            d, mag = np.abs(a64 - e64), np.abs(e64)
            failed = ~(d <= atol * mag)
            hard = ~(d <= max_atol * mag)
        n, allowed = int(failed.sum()), rtol * failed.size
        if n > allowed:
            why = f"{n} elements not within {atol:g}*|e| (allowed {allowed:g} = {rtol:g}*N)"
            return Verdict(False, failed, why)
        if hard.any():
            return Verdict(False, failed, f"{int(hard.sum())} elements exceed {max_atol:g}*|e|")
        return Verdict(True, failed, f"{n} elements beyond {atol:g}*|e| (allowed {allowed:g})")


@dataclass(frozen=True)
class _Limits:
    """mere-mare's per-dtype numbers: threshold T, small-value bound and its error."""

    t: float
    small: float
    small_err: float


class MereMare(Standard):
    """CANN's ecosystem standard: ``MERE < T`` and ``MARE < 10 T``, with its small-value rule.

    ``rel = |a - g| / (|g| + 1e-7)``, ``g`` the reference rounded to the output dtype.
    T is 2**-10 (float16), 2**-7 (bfloat16), 2**-13 (float32). When MERE or MARE fails,
    the elements with ``|g| <`` the small-value bound (2**-11, 2**-8, 2**-14) are judged
    by their absolute error instead (an error when ``|a - g| >`` 2**-16, 2**-16, 2**-30)
    and MERE/MARE are recomputed over the other elements; the case passes when those pass
    and no small value is in error. NaN positions must agree; agreeing Infs are left out;
    an Inf facing a finite value is replaced by the dtype's largest finite value. Integer
    and bool outputs must be equal.
    """

    name = "mere-mare"
    summary = "mean rel. error < T and max rel. error < 10T; small values by abs. error"
    EPS = 1e-7
    LIMITS: ClassVar[dict[str, _Limits]] = {
        "float16": _Limits(2.0**-10, 2.0**-11, 2.0**-16),
        "bfloat16": _Limits(2.0**-7, 2.0**-8, 2.0**-16),
        "float32": _Limits(2.0**-13, 2.0**-14, 2.0**-30),
    }

    def supports(self, dtype: str) -> bool:
        return dtype in self.LIMITS or dtype in _INTS

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        if dtype in _INTS:
            failed = np.asarray(actual).reshape(-1) != np.asarray(expected).reshape(-1)
            n = int(failed.sum())
            return Verdict(n == 0, failed, f"{n} elements differ (integers must be equal)")
        if dtype not in self.LIMITS:
            raise _undefined(self.name, dtype, {**self.LIMITS, "integers": 0, "bool": 0})
        a, g = _f64(actual), _f64(expected)
        bad = self._nonfinite(a, g, str(np.asarray(expected).dtype))
        if bad is not None:
            return bad
        lim = self.LIMITS[dtype]
        valid = ~(np.isnan(g) | (np.isinf(a) & np.isinf(g)))
        with np.errstate(all="ignore"):
            diff = np.where(valid, np.abs(a - g), 0.0)
            rel = diff / (np.abs(g) + self.EPS)
        over = valid & (rel >= 10 * lim.t)
        mere, mare = _mean_max(rel[valid])
        if mere < lim.t and mare < 10 * lim.t:
            return Verdict(True, over, f"MERE {mere:.3g} < {lim.t:.3g}, MARE {mare:.3g} < "
                           f"{10 * lim.t:.3g}")
        return self._small_values(a, g, valid, diff, rel, lim, (mere, mare))

    def _nonfinite(self, a: np.ndarray, g: np.ndarray, out_dtype: str) -> Verdict | None:
        """Fail on NaN or Inf-sign disagreements; clamp one-sided Infs (in place)."""
        nan_bad = np.isnan(a) != np.isnan(g)
        if nan_bad.any():
            return Verdict(False, nan_bad, f"NaN positions disagree at {int(nan_bad.sum())} "
                           "elements")
        inf_a, inf_g = np.isinf(a), np.isinf(g)
        sign_bad = inf_a & inf_g & (np.sign(a) != np.sign(g))
        if sign_bad.any():
            return Verdict(False, sign_bad, f"Inf signs disagree at {int(sign_bad.sum())} elements")
        big = _MAX.get(out_dtype, _MAX["float64"])
        one_sided = inf_a ^ inf_g
        a[one_sided & inf_a] = np.sign(a[one_sided & inf_a]) * big
        g[one_sided & inf_g] = np.sign(g[one_sided & inf_g]) * big
        return None

    def _small_values(
        self, a: np.ndarray, g: np.ndarray, valid: np.ndarray, diff: np.ndarray,
        rel: np.ndarray, lim: _Limits, overall: tuple[float, float],
    ) -> Verdict:
        small = valid & (np.abs(g) < lim.small)
        normal = valid & ~small
        small_bad = small & (diff > lim.small_err)
        n_small = int(small_bad.sum())
        mere, mare = _mean_max(rel[normal])
        failed = (normal & (rel >= 10 * lim.t)) | small_bad
        head = f"overall MERE {overall[0]:.3g}, MARE {overall[1]:.3g}; "
        if mere >= lim.t:
            return Verdict(False, failed, f"{head}MERE {mere:.3g} >= T = {lim.t:.3g} without "
                           "small values")
        if mare >= 10 * lim.t:
            return Verdict(False, failed, f"{head}MARE {mare:.3g} >= 10T = {10 * lim.t:.3g} "
                           "without small values")
        if n_small:
            return Verdict(False, failed, f"{head}{n_small} small values (|g| < "
                           f"{lim.small:.3g}) off by more than {lim.small_err:.3g}")
        return Verdict(True, failed, f"{head}passes by the small-value rule: MERE {mere:.3g}, "
                       f"MARE {mare:.3g} over |g| >= {lim.small:.3g}, small values within "
                       f"{lim.small_err:.3g}")


def _mean_max(x: np.ndarray) -> tuple[float, float]:
    return (float(x.sum()) / x.size, float(x.max())) if x.size else (0.0, 0.0)


def _finite_pairs(a: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mask of elements where both are finite, float64 a, float64 e)."""
    a64, e64 = _f64(a), _f64(e)
    return np.isfinite(a64) & np.isfinite(e64), a64, e64


class AllClose(Standard):
    """``|a - e| <= atol + rtol * |e|`` for every finite element, torch.testing's defaults.

    (rtol, atol): float16 (1e-3, 1e-5), bfloat16 (1.6e-2, 1e-5), float32 (1.3e-6, 1e-5),
    float64 (1e-7, 1e-7); integer dtypes and bool (0, 0). NaN/Inf positions are left to
    opsdk's ``nonfinite`` check.
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

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        rtol, atol = self.tolerances(dtype)
        if dtype in _INTS and not rtol and not atol:
            failed = np.asarray(actual).reshape(-1) != np.asarray(expected).reshape(-1)
            n = int(failed.sum())
            return Verdict(n == 0, failed, f"{n} elements differ (integers must be equal)")
        fin, a, e = _finite_pairs(actual, expected)
        with np.errstate(all="ignore"):
            failed = fin & (np.abs(a - e) > atol + rtol * np.abs(e))
        n = int(np.count_nonzero(failed))
        return Verdict(n == 0, failed, f"{n} elements beyond atol={atol:g} + rtol={rtol:g}*|e|")


class Exact(Standard):
    """Bit-exact values: every finite element equal, and for floats the sign of zero too.

    NaN/Inf positions are left to opsdk's ``nonfinite`` check.
    """

    name = "exact"
    summary = "every element equal (including the sign of zero)"

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        a, e = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
        if dtype in _INTS:
            failed = a != e
        else:
            fin, a, e = _finite_pairs(a, e)
            failed = fin & ((a != e) | (np.signbit(a) != np.signbit(e)))
        n = int(failed.sum())
        return Verdict(n == 0, failed, f"{n} elements differ")


#: Every standard by name.
STANDARDS: dict[str, Standard] = {
    s.name: s for s in (Msopst(), DoubleThousandths(), MereMare(), AllClose(), Exact(), *METHODS)
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

    ``NAME:PARAM`` sets the parameter of the methods that take one: ``ulp:4`` (max ULP),
    ``cosine:0.001`` (largest ``1 - cos``), ``quant:0.001`` (share allowed beyond 1 LSB),
    ``cross-device:L2`` (level).

    Example:
        >>> get_standard("msopst").name
        'msopst'
        >>> get_standard("ulp:4").max_ulp
        4.0
    """
    base, sep, param = name.partition(":")
    if sep and base in PARAMETRISED:
        try:
            return PARAMETRISED[base](param)
        except ValueError as e:
            raise SpecError(f"precision standard {name!r}: {e}") from None
    try:
        return STANDARDS[name]
    except KeyError:
        raise SpecError(
            f"unknown precision standard {name!r}; expected one of {', '.join(STANDARDS)} "
            f"(or {', '.join(f'{k}:PARAM' for k in PARAMETRISED)})"
        ) from None


def standard_name(text: str) -> str:
    """``text`` when it names a standard (argparse ``type=``), else ArgumentTypeError.

    Example:
        >>> standard_name("cross-device:L2")
        'cross-device:L2'
    """
    import argparse

    try:
        get_standard(text)
    except SpecError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


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


def reads_reference(
    spec_standard: str | Mapping[str, str] | None = None, override: str | None = None
) -> bool:
    """Whether a standard an operator's outputs may be judged by reads a reference device.

    The same order as :func:`standard_for`: ``override``, else every standard spec.py
    names (the dtype defaults read none). Only then is a trusted device opened and run.

    Example:
        >>> reads_reference({"float16": "mere-mare"}), reads_reference(None, "cross-device:L2")
        (False, True)
    """
    if override:
        names = [override]
    elif isinstance(spec_standard, str):
        names = [spec_standard]
    else:
        names = list((spec_standard or {}).values())
    return any(get_standard(n).needs_reference for n in names)
