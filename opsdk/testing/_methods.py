"""Comparison methods of Huawei's operator tester, and opsdk's ULP distance.

Sources (docs/validation.md has each definition, its boundary cases and where opsdk
deliberately differs):

* ``mixed``, ``cosine``, ``requant``, ``quant``, ``cross-device``: the comparison methods of
  Huawei's ops-test-kit (hicann/ops-test-kit ``docs/Precision_Comparison.md``, the mixed
  tolerance table of ``ttk/core_modules/comparison/resolve.py``, the methods of
  ``ttk/core_modules/comparison/``), reproduced from their documented formulas; the
  verdicts agree on the boundary cases of its tests (``test_mix_tolerance.py``,
  ``test_cross_check.py``, ``test_resolve_tolerance.py``), which ``tests/testing/test_methods.py``
  encodes;
* ``ulp``: opsdk's ULP distance (the number of representable values of the dtype between
  the two values), with its histogram in the verdict.

Every method sees flat arrays in the output dtype, as the other standards do; the
``cross-device`` method also reads the float64 reference and a trusted device's output
(:meth:`Standard.judge_against`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from ..errors import SpecError
from ._standard_base import _INTS, Standard, Verdict, _f64, _undefined

__all__ = [
    "Ulp",
    "Cosine",
    "Mixed",
    "Requant",
    "Quant",
    "CrossDevice",
    "ulp_distance",
    "ulp_histogram",
    "METHODS",
]

#: Storage of each float dtype a ULP distance is defined for: (unsigned view, bits).
_BITS: dict[str, tuple[type[np.unsignedinteger], int]] = {
    "float8_e4m3fn": (np.uint8, 8),
    "float8_e5m2": (np.uint8, 8),
    "hifloat8": (np.uint8, 8),
    "float16": (np.uint16, 16),
    "bfloat16": (np.uint16, 16),
    "float32": (np.uint32, 32),
    "float64": (np.uint64, 64),
}
_FP8 = ("float8_e4m3fn", "float8_e5m2", "hifloat8")


def _as_dtype(a: np.ndarray, dtype: str) -> np.ndarray:
    """``a`` in ``dtype`` (a float dtype of :data:`_BITS`); hifloat8 codes stay as given."""
    a = np.asarray(a).reshape(-1)
    if dtype == "hifloat8":
        return a.view(np.uint8) if a.dtype.itemsize == 1 else a.astype(np.uint8)
    if a.dtype.name == dtype:
        return a
    import ml_dtypes

    target = getattr(ml_dtypes, dtype, None) or np.dtype(dtype)
    with np.errstate(all="ignore"):
        return a.astype(target)


def _steps(a: np.ndarray, e: np.ndarray, dtype: str) -> np.ndarray:
    """How many representable values of ``dtype`` separate the two bit patterns (float64).

    Sign-magnitude on one line: +0 and -0 are both 0, the smallest subnormals are +-1,
    the largest finite value is one below Inf. Computed in uint64, exact for every width.
    """
    view, bits = _BITS[dtype]
    sign = np.uint64(1 << (bits - 1))
    ua, ue = a.view(view).astype(np.uint64), e.view(view).astype(np.uint64)
    ma, me = ua & (sign - np.uint64(1)), ue & (sign - np.uint64(1))
    same_side = ((ua & sign) == (ue & sign)) | (ma == 0) | (me == 0)
    apart = np.where(ma >= me, ma - me, me - ma)
    return np.where(same_side, apart, ma + me).astype(np.float64)


def _nan(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "hifloat8":  # raw codes: no NumPy dtype tells a NaN apart
        return np.zeros(a.shape, bool)
    return np.isnan(a.astype(np.float64))


def ulp_distance(actual: np.ndarray, expected: np.ndarray, dtype: str | None = None) -> np.ndarray:
    """Per element, how many representable values of ``dtype`` lie between the two values.

    Both arrays are first rounded to ``dtype`` (default: ``expected``'s dtype). Equal values
    are 0 apart, +0 and -0 too; neighbours are 1 apart, the smallest subnormals of either
    sign 1 from zero and 2 from each other; the largest finite value is 1 from Inf. Two
    NaN are 0 apart, a NaN and a number infinitely far. Distances are exact integers
    (rounded to float64 only beyond 2**53). ``hifloat8`` takes the raw 8-bit codes.

    Example:
        >>> ulp_distance(np.float16([1.0, 1.0, 0.0]), np.float16([1.0009765625, 1.0, -0.0]))
        array([1., 0., 0.])
    """
    name = dtype or np.asarray(expected).dtype.name
    if name not in _BITS:
        raise SpecError(f"ULP distance is defined for {', '.join(_BITS)}, not {name}")
    a, e = _as_dtype(actual, name), _as_dtype(expected, name)
    d = _steps(a, e, name)
    na, ne = _nan(a, name), _nan(e, name)
    return np.where(na & ne, 0.0, np.where(na | ne, np.inf, d))


def ulp_histogram(distance: np.ndarray) -> dict[str, int]:
    """Counts of ULP distances in buckets ``0``, ``1``, ``2``, ``3-4``, ``5-8``, ... and ``inf``.

    Only non-empty buckets are listed, in increasing order.

    Example:
        >>> ulp_histogram(np.array([0.0, 1, 1, 3, 7, np.inf]))
        {'0': 1, '1': 2, '3-4': 1, '5-8': 1, 'inf': 1}
    """
    d = np.asarray(distance, np.float64).reshape(-1)
    out: dict[str, int] = {}
    finite = d[np.isfinite(d)]
    for lo, hi, label in [(0, 0, "0"), (1, 1, "1"), (2, 2, "2")]:
        n = int(np.count_nonzero((finite >= lo) & (finite <= hi)))
        if n:
            out[label] = n
    hi = 4
    rest = finite[finite > 2]
    while rest.size:
        lo = hi // 2 + 1
        n = int(np.count_nonzero(rest <= hi))
        if n:
            out[f"{lo}-{hi}"] = n
        rest = rest[rest > hi]
        hi *= 2
    n_inf = int(np.count_nonzero(~np.isfinite(d)))
    if n_inf:
        out["inf"] = n_inf
    return out


def _within_ptol(n_bad: int, size: int, ptol: float) -> tuple[bool, float]:
    """(passed, failing share) as ops-test-kit decides: ``1 - (size - bad) / size <= ptol``.

    The tool's own arithmetic, kept so the boundary agrees: 1 bad element of 1000 under
    ptol 0.001 is ``1 - 0.999 = 0.0010000000000000009``, which fails.
    """
    if not size:
        return True, 0.0
    share = 1 - (size - n_bad) / size
    return share <= ptol, share


def _hist_text(d: np.ndarray) -> str:
    return " ".join(f"{k}:{v}" for k, v in ulp_histogram(d).items())


def _equal_ints(actual: np.ndarray, expected: np.ndarray) -> Verdict:
    failed = np.asarray(actual).reshape(-1) != np.asarray(expected).reshape(-1)
    n = int(failed.sum())
    return Verdict(n == 0, failed, f"{n} elements differ (integers must be equal)")


class Ulp(Standard):
    """Every element within ``max_ulp`` representable values of the expectation.

    The distance is :func:`ulp_distance` in the judged dtype (both values rounded to it);
    the verdict lists the largest distance and the histogram. A correctly rounded kernel
    is 0 ULP from the rounded reference, a faithfully rounded one at most 1 (the default).
    Integers and bool must be equal.
    """

    name = "ulp"
    summary = "every element within max_ulp representable values (default 1)"

    def __init__(self, max_ulp: float = 1) -> None:
        if not max_ulp >= 0:
            raise SpecError(f"ulp: the largest ULP distance must be >= 0, got {max_ulp:g}; "
                            "write e.g. ulp:4")
        self.max_ulp = max_ulp

    def supports(self, dtype: str) -> bool:
        return dtype in _BITS or dtype in _INTS

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        if dtype in _INTS:
            return _equal_ints(actual, expected)
        if dtype not in _BITS:
            raise _undefined(self.name, dtype, {**_BITS, "integers": 0})
        d = ulp_distance(actual, expected, dtype)
        failed = d > self.max_ulp
        worst = float(d.max()) if d.size else 0.0
        n = int(failed.sum())
        why = (f"max {worst:g} ULP ({'within' if not n else f'{n} elements beyond'} "
               f"{self.max_ulp:g}); histogram {_hist_text(d) or 'empty'}")
        return Verdict(n == 0, failed, why)


def _top(err: np.ndarray, k: int = 10) -> np.ndarray:
    """A mask of the ``k`` largest errors (NaN first), for the mismatch list."""
    mask = np.zeros(err.shape, bool)
    order = np.argsort(-np.where(np.isnan(err), np.inf, err), kind="stable")[:k]
    mask[order[err[order] != 0]] = True
    return mask


class Cosine(Standard):
    """ops-test-kit ``cosine``: ``1 - dot(a, g) / (|a| |g|) <= tol`` (tol 0.01).

    Computed as the tool does: float16 and bfloat16 in float32, other float dtypes in
    their own (integers in float64), and ``1 - cos`` compared with ``tol`` in that dtype.
    A zero vector on either side makes the similarity NaN, which fails (the tool's
    verdict; the reason says so). Two empty outputs pass. The element mask marks the ten
    largest differences, for the mismatch list.
    """

    name = "cosine"
    summary = "cosine similarity >= 1 - tol (tol 0.01)"

    def __init__(self, tol: float = 0.01) -> None:
        if not 0 <= tol <= 2:
            raise SpecError(f"cosine: the tolerance of 1 - cos must be within [0, 2], got "
                            f"{tol:g}; write e.g. cosine:0.001")
        self.tol = tol

    @staticmethod
    def _dtype(a: np.ndarray, g: np.ndarray) -> np.dtype[np.floating]:
        common = np.promote_types(a.dtype, g.dtype)
        if common.name in ("float16", "bfloat16"):
            return np.dtype(np.float32)
        return common if common.kind == "f" else np.dtype(np.float64)

    def similarity(self, actual: np.ndarray, expected: np.ndarray) -> float:
        """The cosine similarity, in the tool's arithmetic dtype (NaN for a zero vector).

        Example:
            >>> Cosine().similarity(np.float32([1, 0]), np.float32([1, 1]))
            0.7071067...
        """
        a, g = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
        t = self._dtype(a, g)
        a, g = a.astype(t), g.astype(t)
        with np.errstate(all="ignore"):
            return float(np.dot(a, g) / (np.linalg.norm(a) * np.linalg.norm(g)))

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        a, g = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
        if not a.size and not g.size:
            return Verdict(True, np.zeros(0, bool), "empty output: nothing to compare")
        t = self._dtype(a, g).type
        cos = self.similarity(a, g)
        with np.errstate(all="ignore"):
            passed = bool(t(1) - t(cos) <= t(self.tol))
            failed = (np.zeros(a.size, bool) if passed
                      else _top(np.abs(_f64(a) - _f64(g))))
        why = f"cosine similarity {cos:.6g} (pass when 1 - cos <= {self.tol:g})"
        if np.isnan(cos):
            zero = [n for n, x in (("actual", a), ("expected", g)) if not np.any(_f64(x))]
            which = ("both outputs are zero vectors" if len(zero) == 2
                     else f"the {zero[0]} output is a zero vector" if zero else "")
            why += (f": {which}, whose similarity is undefined (the tool fails it too); "
                    "judge such an output with ulp, mixed or allclose" if which
                    else ": a NaN or Inf in an output")
        return Verdict(passed, failed, why)


class Mixed(Standard):
    """ops-test-kit ``mixed`` (the ecosystem mixed tolerance), per-dtype table.

    An element matches when ``|a - g| <= atol + rtol |g|``, or both are NaN, or both the
    same Inf. The case passes when at least 99% of the elements match and the largest
    absolute error over finite pairs is within the hard limit (``max(1e-X, 32 ULP at
    1.0)``); any NaN/Inf disagreement is an unbounded error. Computed in float32 or wider.
    Dtypes outside the table take the float32 row; integers and bool must be equal.
    """

    name = "mixed"
    summary = ">= 99% of elements within atol + rtol*|g|, max abs error within the hard limit"
    share_over_all = True
    #: dtype: (rtol, atol, hard limit of the largest absolute error).
    TABLE: ClassVar[dict[str, tuple[float, float, float]]] = {
        "float16": (2.0**-9, 2.0**-9, max(1e-1, 32 * 2.0**-10)),
        "bfloat16": (2.0**-6, 2.0**-6, max(1e-0, 32 * 2.0**-7)),
        "float32": (2.0**-10, 2.0**-16, max(1e-2, 32 * 2.0**-23)),
        "hifloat32": (2.0**-9, 2.0**-10, max(1e-1, 32 * 2.0**-10)),
        "float8_e4m3fn": (2.0**-2, 2.0**-4, max(1e-0, 32 * 2.0**-3)),
        "float8_e5m2": (2.0**-1, 2.0**-3, max(1e-1, 32 * 2.0**-2)),
    }
    MATCHED_RATIO = 0.99

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        if dtype in _INTS:
            return _equal_ints(actual, expected)
        if dtype == "hifloat8":
            raise SpecError("mixed: hifloat8 outputs are judged by 'requant' (ULP <= 1), as "
                            "ops-test-kit routes them; use --standard requant")
        rtol, atol, limit = self.TABLE.get(dtype, self.TABLE["float32"])
        a, g = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
        t = np.promote_types(np.float32, np.promote_types(a.dtype, g.dtype))
        a, g = a.astype(t), g.astype(t)
        with np.errstate(all="ignore"):
            err = np.abs(a - g)
            same_nan = np.isnan(a) & np.isnan(g)
            same_inf = np.isinf(a) & np.isinf(g) & (np.sign(a) == np.sign(g))
            finite = np.isfinite(a) & np.isfinite(g)
            mismatch = ~finite & ~same_nan & ~same_inf
            ok = same_nan | same_inf | (finite & (err <= atol + rtol * np.abs(g)))
        ratio = float(ok.sum()) / ok.size if ok.size else 1.0
        worst = np.inf if mismatch.any() else float(err[finite].max()) if finite.any() else 0.0
        passed = ratio >= self.MATCHED_RATIO and worst <= limit
        why = (f"matched {ratio:.4%} within {atol:.3g} + {rtol:.3g}*|g| (need "
               f"{self.MATCHED_RATIO:.0%}); max abs error {worst:.3g} (limit {limit:.3g})"
               + (f"; {int(mismatch.sum())} NaN/Inf disagreements" if mismatch.any() else ""))
        return Verdict(bool(passed), ~ok, why)


class Requant(Standard):
    """ops-test-kit ``requant``: at most ``ptol`` (0.1%) of the elements more than 1 ULP off.

    For float8_e4m3fn, float8_e5m2 and hifloat8 (raw codes) outputs. Two NaN agree.
    Integer outputs: ``|a - g| > 1`` fails and no element may (ptol 0), as the tool does.
    """

    name = "requant"
    summary = "<= 0.1% of elements more than 1 ULP off (fp8, hifloat8)"
    share_over_all = True
    PTOL = 1e-3

    def supports(self, dtype: str) -> bool:
        return dtype in _FP8 or dtype in _INTS

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        if dtype in _INTS:
            return Quant(0.0, any_int=True).judge(actual, expected, dtype)
        if dtype not in _FP8:
            raise SpecError(f"requant is the 8-bit float rule ({', '.join(_FP8)}); a {dtype} "
                            "output takes 'ulp' (max ULP distance) or another standard")
        d = ulp_distance(actual, expected, dtype)
        failed = d > 1
        passed, share = _within_ptol(int(failed.sum()), failed.size, self.PTOL)
        why = (f"{share:.3%} of elements more than 1 ULP off (allowed {self.PTOL:.1%}); "
               f"histogram {_hist_text(d) or 'empty'}")
        return Verdict(passed, failed, why)


class Quant(Standard):
    """ops-test-kit ``quant``: a quantised integer output may be 1 LSB off, ``ptol`` (0) of
    the elements more.

    For int8 (the tool's int4/int8) and uint8 outputs of quantising operators: the last
    step, ``round(x / scale)``, jumps to the next integer on a last-bit difference of its
    float input. Other integer dtypes hold indices or counts, where 1 off is wrong: refused.
    """

    name = "quant"
    summary = "quantised integers within 1 LSB (at most ptol of them beyond, default 0)"
    QUANTISED = ("int8", "uint8")

    def __init__(self, ptol: float = 0.0, *, any_int: bool = False) -> None:
        if not 0 <= ptol <= 1:
            raise SpecError(f"quant: the share of elements allowed beyond 1 LSB must be "
                            f"within [0, 1], got {ptol:g}; write e.g. quant:0.001")
        self.ptol, self.any_int = ptol, any_int

    def supports(self, dtype: str) -> bool:
        return dtype in self.QUANTISED or (self.any_int and dtype in _INTS)

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        if not self.supports(dtype):
            raise SpecError(f"quant judges quantised {'/'.join(self.QUANTISED)} outputs, not "
                            f"{dtype}: an integer output of another width holds exact values "
                            "(indices, counts), judge it with exact; a float output with mixed")
        a = np.asarray(actual).reshape(-1).astype(np.int64)
        e = np.asarray(expected).reshape(-1).astype(np.int64)
        failed = np.abs(a - e) > 1
        n = int(failed.sum())
        passed, _ = _within_ptol(n, failed.size, self.ptol)
        return Verdict(passed, failed, f"{n} of {failed.size} elements more than 1 LSB off "
                       f"(allowed share {self.ptol:g})")


def _safe_div(num: float, den: float, floor: float) -> float:
    """ops-test-kit's ratio: the denominator floored at the small-value bound."""
    if np.isnan(num) or np.isnan(den):
        return float("inf")
    if np.isinf(num):
        return 1.0 if np.isinf(den) else float("inf")
    if num == 0 and den == 0:
        return 1.0
    return float(num / max(den, floor))


class CrossDevice(Standard):
    """ops-test-kit ``cross_check``: the candidate's error over a trusted device's error,
    both against the float64 reference.

    Over the elements with ``|g| >=`` the small-value bound: the ratios of the largest
    relative error (MARE), the mean relative error (MERE, ``rel = |x - g| / (|g| + 1e-7)``)
    and the RMSE must be within the level's limits (L0 10/2/2, L1 5/1.5/1.5, L2 2/1.2/1.2;
    a denominator is floored at the small-value bound). Small values: the candidate may
    have at most twice the reference's count (at least 1) of errors beyond the small-value
    tolerance. NaN/Inf: a position passes when the candidate equals the reference device,
    or the float64 reference is NaN/Inf and the candidate equals it.
    """

    name = "cross-device"
    summary = "error ratios to a reference device within the level's limits (default L1)"
    needs_reference = True
    LEVELS: ClassVar[dict[str, tuple[float, float, float]]] = {
        "L0": (10.0, 2.0, 2.0), "L1": (5.0, 1.5, 1.5), "L2": (2.0, 1.2, 1.2),
    }
    #: dtype: (small-value bound, small-value tolerance).
    SMALL: ClassVar[dict[str, tuple[float, float]]] = {
        "float16": (2.0**-11, 2.0**-16),
        "bfloat16": (2.0**-8, 2.0**-16),
        "float32": (2.0**-14, 2.0**-30),
    }

    def __init__(self, level: str = "L1") -> None:
        if level not in self.LEVELS:
            raise SpecError(f"cross-device: unknown level {level!r}; expected one of "
                            f"{', '.join(self.LEVELS)}, e.g. cross-device:L2")
        self.level = level

    def supports(self, dtype: str) -> bool:
        return dtype in self.SMALL

    def judge(self, actual: np.ndarray, expected: np.ndarray, dtype: str) -> Verdict:
        return Verdict(False, np.zeros(np.asarray(actual).size, bool),
                       "no reference device's output to divide by: give one with "
                       "--reference-device DEVICE (opsdk test, opsdk check), "
                       "--opsdk-reference-device DEVICE (pytest) or check(op, reference=...)")

    def judge_against(
        self, actual: np.ndarray, expected: np.ndarray, dtype: str, *,
        golden: np.ndarray | None = None, reference: np.ndarray | None = None,
    ) -> Verdict:
        if reference is None:
            return self.judge(actual, expected, dtype)
        if dtype not in self.SMALL:
            raise _undefined(self.name, dtype, self.SMALL)
        t, b = _f64(actual), _f64(reference)
        g = _f64(expected if golden is None else golden)
        small_value, small_atol = self.SMALL[dtype]
        special = ~(np.isfinite(t) & np.isfinite(g) & np.isfinite(b))
        bad_special = special & ~self._special_ok(t, g, b)
        large = ~special & (np.abs(g) >= small_value)
        small = ~special & ~large
        ratios, over = self._large(t, g, b, large, small_value)
        with np.errstate(invalid="ignore", over="ignore"):  # Inf/NaN positions are not small
            err_t = small & (np.abs(t - g) > small_atol)
            n_t, n_b = int(err_t.sum()), int((small & (np.abs(b - g) > small_atol)).sum())
        small_ratio = n_t / max(n_b, 1)
        limits = dict(zip(("mare", "mere", "rmse"), self.LEVELS[self.level], strict=True))
        exceeded = [f"{k} ratio {ratios[k]:.3g} > {limits[k]:g}" for k in limits
                    if ratios[k] > limits[k]]
        passed = not bad_special.any() and small_ratio <= 2.0 and not exceeded
        head = (f"{self.level}: MARE/MERE/RMSE ratios {ratios['mare']:.3g}/"
                f"{ratios['mere']:.3g}/{ratios['rmse']:.3g} (limits "
                f"{'/'.join(f'{v:g}' for v in limits.values())}); small-value errors "
                f"{n_t} vs {n_b}")
        why = [head] + exceeded
        if bad_special.any():
            why.append(f"{int(bad_special.sum())} NaN/Inf positions match neither the "
                       "reference device nor the float64 reference")
        if small_ratio > 2.0:
            why.append(f"small-value error count ratio {small_ratio:.3g} > 2")
        failed = bad_special | (err_t if small_ratio > 2.0 else np.zeros_like(err_t)) | over
        return Verdict(bool(passed), failed, "; ".join(why))

    @staticmethod
    def _special_ok(t: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        def same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return (np.isnan(x) & np.isnan(y)) | (~np.isnan(x) & ~np.isnan(y) & (x == y))
        return same(t, b) | (~np.isfinite(g) & same(t, g))

    def _large(self, t: np.ndarray, g: np.ndarray, b: np.ndarray, large: np.ndarray,
               floor: float) -> tuple[dict[str, float], np.ndarray]:
        over = np.zeros(t.shape, bool)
        if not large.any():
            return {"mare": 1.0, "mere": 1.0, "rmse": 1.0}, over
        tl, gl, bl = t[large], g[large], b[large]
        with np.errstate(all="ignore"):
            rel_t = np.abs(tl - gl) / (np.abs(gl) + 1e-7)
            rel_b = np.abs(bl - gl) / (np.abs(gl) + 1e-7)
            if np.all(~np.isfinite(rel_b)):  # the reference overflowed everywhere
                return {"mare": 1.0, "mere": 1.0, "rmse": 1.0}, over
            ratios = {
                "mare": _safe_div(float(rel_t.max()), float(rel_b.max()), floor),
                "mere": _safe_div(float(rel_t.mean()), float(rel_b.mean()), floor),
                "rmse": _safe_div(float(np.sqrt(np.mean((tl - gl) ** 2))),
                                  float(np.sqrt(np.mean((bl - gl) ** 2))), floor),
            }
            bound = self.LEVELS[self.level][0] * max(float(rel_b.max()), floor)
        over[np.flatnonzero(large)[rel_t > bound]] = True
        return ratios, over


#: The methods by name, with their default parameters.
METHODS: tuple[Standard, ...] = (Ulp(), Cosine(), Mixed(), Requant(), Quant(), CrossDevice())

def _number(method: str, what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{method}: {text!r} is not a number ({what})") from None
    return parse


#: ``NAME:PARAM`` spellings: the parameter each parametrised method takes.
PARAMETRISED: dict[str, Callable[[str], Standard]] = {
    "ulp": lambda p: Ulp(_number("ulp", "the largest ULP distance, e.g. ulp:4")(p)),
    "cosine": lambda p: Cosine(_number("cosine", "the tolerance of 1 - cos, e.g. "
                                       "cosine:0.001")(p)),
    "quant": lambda p: Quant(_number("quant", "the share allowed beyond 1 LSB, e.g. "
                                     "quant:0.001")(p)),
    "cross-device": lambda p: CrossDevice(p),
}
