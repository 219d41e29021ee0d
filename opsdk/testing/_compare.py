"""Comparing one output against its expected value under a precision standard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import dtype_name, is_float
from ._standards import Standard, tiny

__all__ = ["Mismatch", "Comparison", "compare"]

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


@dataclass
class Comparison:
    """The comparison of one output: verdict, error statistics and the first mismatches.

    ``rel`` errors use ``max(|expected|, tiny(dtype))`` as denominator; ``mere``/``mare``
    are the mean/max of that relative error over the finite elements.
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
    actual: np.ndarray | None = field(default=None, repr=False)
    expected: np.ndarray | None = field(default=None, repr=False)
    failed_mask: np.ndarray | None = field(default=None, repr=False)

    @property
    def failing_share(self) -> float:
        return self.n_failed / self.size if self.size else 0.0

    def summary(self) -> str:
        """One line: verdict, standard, statistics."""
        head = "ok" if self.passed else "FAILED"
        return (
            f"{self.output} ({self.dtype}{list(self.shape)}) {head} under {self.standard}: "
            f"{self.reason}; max abs err {self.max_abs_error:.3g}, max rel err "
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
        d["mismatches"] = [m.as_dict() for m in self.mismatches]
        return d


def _as_f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64).reshape(-1)


def _split_finite(
    a: np.ndarray, e: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray]:
    """(mask of disagreeing NaN/Inf positions, mask of finite pairs, finite a, finite e).

    The masks are None in the common all-finite case, which then costs two reductions.
    """
    fa, fe = np.isfinite(a), np.isfinite(e)
    if fa.all() and fe.all():
        return None, None, a, e
    both_finite = fa & fe
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    # Not both finite: agree only when both NaN, or both the same infinity.
    agree = (nan_a & nan_e) | (~nan_a & ~nan_e & (a == e))
    return ~both_finite & ~agree, both_finite, a[both_finite], e[both_finite]


def _stats(abs_err: np.ndarray, rel_err: np.ndarray) -> tuple[float, float, float]:
    """(max abs error, max rel error, mean rel error); zeros when empty."""
    if not abs_err.size:
        return 0.0, 0.0, 0.0
    return float(abs_err.max()), float(rel_err.max()), float(rel_err.sum()) / rel_err.size


def compare(
    actual: np.ndarray,
    expected: np.ndarray,
    standard: Standard,
    *,
    output: str = "y",
    inputs: Sequence[tuple[str, np.ndarray | None]] = (),
    judge_dtype: str | None = None,
    keep_arrays: bool = True,
) -> Comparison:
    """Compare ``actual`` with ``expected`` (same shape and dtype) under ``standard``.

    NaN and Inf positions must agree; the standard judges the elements where both are
    finite. ``inputs`` (name, array) let mismatches show the input values at the failing
    index when the input broadcasts to the output's shape. ``judge_dtype`` is the dtype
    whose tolerances apply (default: the output's), e.g. float16 when a float32 output
    was computed by a float16 kernel.

    Example:
        >>> from opsdk.testing import get_standard
        >>> c = compare(np.float32([1, 2]), np.float32([1, 2.5]), get_standard("allclose"))
        >>> c.passed, c.n_failed, c.mismatches[0].index
        (False, 1, (1,))
    """
    dtype = judge_dtype or dtype_name(expected.dtype)
    a, e = _as_f64(actual), _as_f64(expected)
    bad_nf, finite, fa, fe = _split_finite(a, e)
    verdict = standard.judge(fa, fe, dtype)
    if bad_nf is None or finite is None:
        failed, n_nf = verdict.failed, 0
    else:
        failed = bad_nf.copy()
        failed[finite] = verdict.failed
        n_nf = int(bad_nf.sum())
    abs_err = np.abs(fa - fe)
    if not is_float(dtype):
        rel_err = abs_err
    elif verdict.rel is not None:
        rel_err = verdict.rel
    else:
        rel_err = abs_err / np.maximum(np.abs(fe), tiny(dtype))
    passed = verdict.passed and n_nf == 0
    reason = verdict.reason
    if n_nf:
        reason = f"{n_nf} NaN/Inf positions disagree with the reference; {reason}"
    max_abs, max_rel, mean_rel = _stats(abs_err, rel_err)
    n_failed = int(np.count_nonzero(failed))
    return Comparison(
        output=output,
        dtype=dtype_name(expected.dtype),
        shape=tuple(expected.shape),
        standard=standard.name,
        passed=passed,
        reason=reason,
        size=int(a.size),
        n_failed=n_failed,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        mere=mean_rel,
        mare=max_rel,
        nonfinite_mismatches=n_nf,
        mismatches=[] if not n_failed else _mismatches(
            failed, a, e, tuple(expected.shape), inputs, dtype
        ),
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
