"""opsdk's ``rounding`` check: a float16/bfloat16 output rounded the wrong way.

The precision standards allow a 1-ulp error in a float16 output (a kernel computing in
float16 has them), so a kernel that truncates instead of rounding to nearest, or rounds
twice, passes every standard. Its errors have a fingerprint no honest rounding has:

* truncation: no element is rounded away from zero. Against the exact (float64)
  reference, a kernel rounding to nearest rounds about half of the inexact elements away
  from zero; one that truncates, none. (A kernel whose arithmetic is merely biased, such as
  a float16 kernel multiplying by a constant rounded to float16, misses the nearest value
  mostly on one side too, but still rounds many elements away from zero.)
* double rounding (first to a grid with one more bit, then to nearest even): every
  element that differs is the even neighbour of the correct value, off by exactly 1 ulp.

The check fails an output when at least :data:`MIN_COUNT` elements, and at least
:data:`MIN_SHARE` of the finite normal ones, differ from the correctly rounded reference and
either :data:`TOWARD_ZERO` of them lie toward zero while at most :data:`AWAY_SHARE` of the
inexact elements are rounded away from zero (judged only with the exact reference), or
:data:`EVEN` of them are the even neighbour, 1 ulp away.

Example:
    >>> import numpy as np
    >>> exact = np.random.default_rng(0).uniform(1, 2, 400)
    >>> truncated = (exact.astype(np.float32).view(np.uint32) & ~np.uint32(0x1FFF)
    ...              ).view(np.float32).astype(np.float16)
    >>> rounding_check(truncated, exact.astype(np.float16), "float16", exact).passed
    False
    >>> rounding_check(exact.astype(np.float16), exact.astype(np.float16), "float16").passed
    True
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dtypes import to_numpy

__all__ = ["rounding_check", "NARROW"]

#: the output dtypes the check applies to
NARROW = ("float16", "bfloat16")
MIN_COUNT = 16
MIN_SHARE = 0.05
class Check(NamedTuple):
    """The ``rounding`` verdict (:class:`opsdk.testing._compare.Check` holds it in a report)."""

    name: str
    passed: bool
    detail: str


TOWARD_ZERO = 0.9
AWAY_SHARE = 0.05
EVEN = 0.95


def rounding_check(actual: np.ndarray, expected: np.ndarray, dtype: str,
                   golden: np.ndarray | None = None) -> Check:
    """The ``rounding`` verdict on a float16/bfloat16 output (``expected``: the reference
    rounded to nearest even in that dtype; ``golden``: the reference before rounding,
    without which truncation is not judged). See the module docstring."""
    a = np.asarray(actual).reshape(-1)
    e = np.asarray(expected).reshape(-1)
    bits = np.uint16
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    tiny = float(np.finfo(np.float16).tiny) if dtype == "float16" else 2.0 ** -126
    judged = np.isfinite(a64) & np.isfinite(e64) & (np.abs(e64) >= tiny)
    n = int(judged.sum())
    ab = a.view(bits).astype(np.int64)[judged]
    eb = e.view(bits).astype(np.int64)[judged]
    sign_a, sign_e = ab >> 15, eb >> 15
    mag_a, mag_e = ab & 0x7FFF, eb & 0x7FFF
    differ = (mag_a != mag_e) | (sign_a != sign_e)
    k = int(differ.sum())
    if k < MIN_COUNT or k < MIN_SHARE * n:
        return Check("rounding", True, f"{k} of {n} elements differ from the correctly "
                     "rounded reference")
    same_sign = sign_a[differ] == sign_e[differ]
    toward_zero = int((same_sign & (mag_a[differ] < mag_e[differ])).sum())
    one_ulp = same_sign & (np.abs(mag_a[differ] - mag_e[differ]) == 1)
    even = int((one_ulp & (mag_a[differ] % 2 == 0)).sum())
    away = _rounded_away(a64[judged], golden, judged)
    if away is not None and toward_zero >= TOWARD_ZERO * k and away[0] <= AWAY_SHARE * away[1]:
        return Check("rounding", False, f"{toward_zero} of the {k} elements (of {n}) that "
                     f"differ from the correctly rounded {dtype} reference lie toward zero, "
                     f"and {away[0]} of the {away[1]} inexact ones are rounded away from zero: "
                     "truncated instead of rounded to nearest even?")
    if even >= EVEN * k and bool(one_ulp.all()):
        return Check("rounding", False, f"each of the {k} elements (of {n}) that differ from "
                     f"the correctly rounded {dtype} reference is its even neighbour, 1 ulp "
                     "away: rounded twice (to a finer grid, then to nearest even)?")
    return Check("rounding", True, f"{k} of {n} elements differ from the correctly rounded "
                 "reference, without a truncation or double-rounding pattern")


def _rounded_away(a: np.ndarray, golden: np.ndarray | None, judged: np.ndarray
                  ) -> tuple[int, int] | None:
    """(elements rounded away from zero, inexact elements) against the exact reference."""
    if golden is None:
        return None
    g = np.asarray(golden, np.float64).reshape(-1)[judged]
    inexact = np.isfinite(g) & (a != g)
    away = inexact & (np.abs(a) > np.abs(g)) & (np.sign(a) == np.sign(g))
    return int(away.sum()), int(inexact.sum())


def narrow(actual: np.ndarray, dtype: str) -> bool:
    """Whether the check applies: ``actual`` itself holds float16/bfloat16 values."""
    return dtype in NARROW and np.dtype(actual.dtype) == to_numpy(dtype)
