"""Comparing one output against its expected value under a precision standard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import dtype_name, is_float
from ._methods import _FP8
from ._standards import Standard, tiny

__all__ = ["Check", "Mismatch", "Comparison", "compare"]

#: How many mismatching elements a comparison lists.
MAX_MISMATCHES = 10


@dataclass
class Mismatch:
    """One failing element: its index, the inputs there, expected and actual values."""

    index: tuple[int, ...]
    expected: float
    actual: float
    abs_error: float
    rel_error: float
    inputs: dict[str, float | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": list(self.index),
            "inputs": {k: _num(v) for k, v in self.inputs.items()},
            "expected": _num(self.expected),
            "actual": _num(self.actual),
            "abs_error": _num(self.abs_error),
            "rel_error": _num(self.rel_error),
        }


def _num(v: float | None) -> float | str | None:
    """JSON-safe number: NaN and Inf become strings."""
    if v is None:
        return None
    return v if np.isfinite(v) else str(v)


@dataclass(frozen=True)
class Check:
    """One named rule's verdict on an output: the standard's, or one of opsdk's checks.

    Example:
        >>> Check("msopst", True, "0.00% beyond 0.01").verdict
        'msopst: pass'
    """

    name: str
    passed: bool
    detail: str

    @property
    def verdict(self) -> str:
        """``name: pass``, or ``name: <why it failed>``."""
        return f"{self.name}: {'pass' if self.passed else self.detail}"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@dataclass
class Comparison:
    """The comparison of one output: verdicts, error statistics and the first mismatches.

    ``checks`` holds each rule's verdict (the standard's first); ``reason`` joins them as
    ``msopst: pass; nonfinite: 1 NaN where the reference has 1.0``. The statistics are
    opsdk's, whatever the standard: ``rel`` errors use ``max(|expected|, tiny(dtype))`` as
    denominator; ``mere``/``mare`` are the mean/max of that relative error over the
    elements where both values are finite.
    """

    output: str
    dtype: str
    shape: tuple[int, ...]
    standard: str
    passed: bool
    reason: str
    size: int
    n_failed: int
    max_abs_error: float
    max_rel_error: float
    mere: float
    mare: float
    nonfinite_mismatches: int
    mismatches: list[Mismatch]
    checks: list[Check] = field(default_factory=list)
    actual: np.ndarray | None = field(default=None, repr=False)
    expected: np.ndarray | None = field(default=None, repr=False)
    failed_mask: np.ndarray | None = field(default=None, repr=False)

    @property
    def failing_share(self) -> float:
        return self.n_failed / self.size if self.size else 0.0

    def summary(self) -> str:
        """One line: the verdict of each check, then opsdk's statistics."""
        head = "ok" if self.passed else "FAILED"
        return (
            f"{self.output} ({self.dtype}{list(self.shape)}) {head} under {self.standard} "
            f"[{self.reason}]; max abs err {self.max_abs_error:.3g}, max rel err "
            f"{self.max_rel_error:.3g}, MERE {self.mere:.3g}, MARE {self.mare:.3g}, "
            f"failing {self.n_failed}/{self.size} ({self.failing_share:.2%})"
        )

    def as_dict(self) -> dict[str, Any]:
        keys = ("output", "dtype", "standard", "passed", "reason", "size", "n_failed")
        d: dict[str, Any] = {k: getattr(self, k) for k in keys}
        d["shape"] = list(self.shape)
        d["failing_share"] = self.failing_share
        for k in ("max_abs_error", "max_rel_error", "mere", "mare"):
            d[k] = _num(getattr(self, k))
        d["nonfinite_mismatches"] = self.nonfinite_mismatches
        d["checks"] = [c.as_dict() for c in self.checks]
        d["mismatches"] = [m.as_dict() for m in self.mismatches]
        return d


def _as_f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64).reshape(-1)


def _split_finite(a: np.ndarray, e: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(mask of disagreeing NaN/Inf positions, mask of finite pairs) of float64 arrays.

    Both are None in the common all-finite case, which then costs two reductions.
    """
    fa, fe = np.isfinite(a), np.isfinite(e)
    if fa.all() and fe.all():
        return None, None
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    # Not both finite: agree only when both NaN, or both the same infinity.
    agree = (nan_a & nan_e) | (~nan_a & ~nan_e & (a == e))
    both_finite = fa & fe
    return ~both_finite & ~agree, both_finite


def _value(v: float) -> str:
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v))


def _nonfinite_check(bad: np.ndarray | None, a: np.ndarray, e: np.ndarray,
                     shape: tuple[int, ...]) -> Check:
    """opsdk's ``nonfinite`` check: NaN, +Inf and -Inf positions agree with the reference."""
    n = 0 if bad is None else int(bad.sum())
    if not n:
        return Check("nonfinite", True, "NaN/Inf positions agree with the reference")
    assert bad is not None
    idx = np.flatnonzero(bad)
    parts = [f"{_value(a[i])} where the reference has {_value(e[i])}" for i in idx[:3]]
    if n == 1:
        return Check("nonfinite", False, f"1 {parts[0]}")
    at = [[int(j) for j in np.unravel_index(int(i), shape)] if shape else [] for i in idx[:3]]
    listed = ", ".join(f"{p} at {i}" for p, i in zip(parts, at, strict=True))
    return Check("nonfinite", False, f"{n} NaN/Inf disagreements: {listed}"
                 + (", ..." if n > 3 else ""))


def _stats(abs_err: np.ndarray, rel_err: np.ndarray) -> tuple[float, float, float]:
    """(max abs error, max rel error, mean rel error); zeros when empty."""
    if not abs_err.size:
        return 0.0, 0.0, 0.0
    return float(abs_err.max()), float(rel_err.max()), float(rel_err.sum()) / rel_err.size


def _flat(x: np.ndarray | None) -> np.ndarray | None:
    return None if x is None else np.asarray(x).reshape(-1)


def _checks(
    standard: Standard, actual: np.ndarray, expected: np.ndarray, dtype: str, strict: bool,
    a: np.ndarray, e: np.ndarray, extra: tuple[np.ndarray | None, np.ndarray | None],
    rounding: bool = True,
) -> tuple[list[Check], np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Run the standard and (``strict``) opsdk's own checks; ``extra``: (golden, reference).

    Returns (checks, failed mask, disagreeing NaN/Inf mask, finite-pair mask).
    """
    raw_a, raw_e = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
    golden, reference = (_flat(x) for x in extra)
    verdict = standard.judge_against(raw_a, raw_e, dtype, golden=golden, reference=reference)
    checks = [Check(standard.name, verdict.passed, verdict.reason)]
    bad_nf, finite = _split_finite(a, e)
    failed = verdict.failed
    if not strict:
        return checks, failed, bad_nf, finite
    checks.append(_nonfinite_check(bad_nf, a, e, tuple(expected.shape)))
    if bad_nf is not None:
        failed = failed | bad_nf
    if finite is not None and standard.share_over_all and finite.any():
        sub = standard.judge_against(
            raw_a[finite], raw_e[finite], dtype,
            golden=None if golden is None else golden[finite],
            reference=None if reference is None else reference[finite])
        checks.append(Check("finite-share", sub.passed,
                            f"{standard.name} over the {int(finite.sum())} finite elements: "
                            f"{sub.reason}"))
    from ._rounding import narrow, rounding_check

    if rounding and narrow(np.asarray(actual), dtype):
        checks.append(Check(*rounding_check(actual, expected, dtype, golden)))
    return checks, failed, bad_nf, finite


def _judged_dtype(expected: np.ndarray) -> str:
    """The dtype name of ``expected``: opsdk's, or an 8-bit float the methods judge."""
    name = np.dtype(expected.dtype).name
    return name if name in _FP8 else dtype_name(expected.dtype)


def compare(
    actual: np.ndarray,
    expected: np.ndarray,
    standard: Standard,
    *,
    output: str = "y",
    inputs: Sequence[tuple[str, np.ndarray | None]] = (),
    judge_dtype: str | None = None,
    keep_arrays: bool = True,
    strict: bool = True,
    golden: np.ndarray | None = None,
    reference: np.ndarray | None = None,
    rounding: bool = True,
) -> Comparison:
    """Compare ``actual`` with ``expected`` (same shape and dtype) under ``standard``.

    The standard decides as its defining tool does. With ``strict`` (the default) opsdk's
    own checks run too, each reported under its name: ``nonfinite`` (NaN, +Inf and -Inf
    positions agree with the reference) and, for standards that divide a failing count
    by the whole size, ``finite-share`` (the same rule over the finite elements only), and
    for float16/bfloat16 outputs, unless ``rounding`` is False, ``rounding`` (no truncation
    or double-rounding pattern, :mod:`opsdk.testing._rounding`). ``inputs`` (name, array)
    let mismatches show the input values at the failing index when the input broadcasts to
    the output's shape.
    ``judge_dtype`` is the dtype whose tolerances apply (default: the output's), e.g.
    float16 when a float32 output was computed by a float16 kernel. ``golden`` (the float64
    reference before rounding) and ``reference`` (a trusted device's output) go to
    standards that read them (``cross-device``).

    Example:
        >>> from opsdk.testing import get_standard
        >>> c = compare(np.float32([1, 2]), np.float32([1, 2.5]), get_standard("allclose"))
        >>> c.passed, c.n_failed, c.mismatches[0].index
        (False, 1, (1,))
        >>> compare(np.float32([np.nan]), np.float32([1]), get_standard("msopst")).reason
        'msopst: pass; nonfinite: 1 NaN where the reference has 1.0'
    """
    dtype = judge_dtype or _judged_dtype(expected)
    a, e = _as_f64(actual), _as_f64(expected)
    checks, failed, bad_nf, finite = _checks(standard, actual, expected, dtype, strict, a, e,
                                             (golden, reference), rounding)
    fa, fe = (a, e) if finite is None else (a[finite], e[finite])
    abs_err = np.abs(fa - fe)
    rel_err = abs_err / np.maximum(np.abs(fe), tiny(dtype)) if is_float(dtype) else abs_err
    max_abs, max_rel, mean_rel = _stats(abs_err, rel_err)
    n_failed = int(np.count_nonzero(failed))
    return Comparison(
        output=output,
        dtype=_judged_dtype(expected),
        shape=tuple(expected.shape),
        standard=standard.name,
        passed=all(c.passed for c in checks),
        reason="; ".join(c.verdict for c in checks),
        size=int(a.size),
        n_failed=n_failed,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        mere=mean_rel,
        mare=max_rel,
        nonfinite_mismatches=0 if bad_nf is None else int(bad_nf.sum()),
        mismatches=[] if not n_failed else _mismatches(
            failed, a, e, tuple(expected.shape), inputs, dtype
        ),
        checks=checks,
        actual=np.asarray(actual) if keep_arrays else None,
        expected=np.asarray(expected) if keep_arrays else None,
        failed_mask=failed.reshape(expected.shape) if keep_arrays else None,
    )


def _mismatches(
    failed: np.ndarray,
    a: np.ndarray,
    e: np.ndarray,
    shape: tuple[int, ...],
    inputs: Sequence[tuple[str, np.ndarray | None]],
    dtype: str,
) -> list[Mismatch]:
    flat_idx = np.flatnonzero(failed)[:MAX_MISMATCHES]
    views: dict[str, np.ndarray | None] = {}
    for name, arr in inputs:
        try:
            views[name] = None if arr is None else np.broadcast_to(arr, shape)
        except ValueError:
            views[name] = None
    out = []
    for fi in flat_idx:
        idx = tuple(int(i) for i in np.unravel_index(int(fi), shape)) if shape else ()
        av, ev = float(a[fi]), float(e[fi])
        with np.errstate(invalid="ignore", over="ignore"):
            d = abs(av - ev)
            r = d / max(abs(ev), tiny(dtype)) if np.isfinite(d) else d
        vals = {k: (None if v is None else float(v[idx])) for k, v in views.items()}
        out.append(Mismatch(idx, ev, av, d, r, vals))
    return out
