"""opsdk's ``rounding`` check: a float16/bfloat16 output rounded the wrong way.

The precision standards allow a 1-ulp error in a float16 output (a kernel computing in
float16 has them), so a kernel that truncates instead of rounding to nearest, or rounds
twice, passes every standard. Its errors have a fingerprint no honest rounding has:

* truncation: the elements that differ from the correctly rounded reference almost all
  lie on the side of zero (a kernel computing in float32 and rounding to nearest misses
  the nearest value only where its float32 result is within a float32 ulp of a midpoint,
  on either side; a kernel computing in float16 errs both ways);
* double rounding (first to a grid with one more bit, then to nearest even): every
  element that differs is the even neighbour of the correct value, off by exactly 1 ulp.

The check fails an output when at least :data:`MIN_COUNT` elements, and at least
:data:`MIN_SHARE` of the finite normal ones, differ from the correctly rounded reference and
one fingerprint holds for :data:`TOWARD_ZERO` / :data:`EVEN` of them.

Example:
    >>> import numpy as np
    >>> exact = np.random.default_rng(0).uniform(1, 2, 400)
    >>> truncated = (exact.astype(np.float32).view(np.uint32) & ~np.uint32(0x1FFF)
    ...              ).view(np.float32).astype(np.float16)
    >>> rounding_check(truncated, exact.astype(np.float16), "float16").passed
    False
    >>> rounding_check(exact.astype(np.float16), exact.astype(np.float16), "float16").passed
    True
"""

from __future__ import annotations

import numpy as np

from ..dtypes import to_numpy
from ._compare import Check

__all__ = ["rounding_check", "NARROW"]

#: the output dtypes the check applies to
NARROW = ("float16", "bfloat16")
MIN_COUNT = 16
MIN_SHARE = 0.05
TOWARD_ZERO = 0.9
EVEN = 0.95


def rounding_check(actual: np.ndarray, expected: np.ndarray, dtype: str) -> Check:
    """The ``rounding`` verdict on a float16/bfloat16 output (``expected``: the reference
    rounded to nearest even in that dtype). See the module docstring."""
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
    if toward_zero >= TOWARD_ZERO * k:
        return Check("rounding", False, f"{toward_zero} of the {k} elements (of {n}) that "
                     f"differ from the correctly rounded {dtype} reference lie toward zero: "
                     "truncated instead of rounded to nearest even?")
    if even >= EVEN * k and bool(one_ulp.all()):
        return Check("rounding", False, f"each of the {k} elements (of {n}) that differ from "
                     f"the correctly rounded {dtype} reference is its even neighbour, 1 ulp "
                     "away: rounded twice (to a finer grid, then to nearest even)?")
    return Check("rounding", True, f"{k} of {n} elements differ from the correctly rounded "
                 "reference, without a truncation or double-rounding pattern")


def narrow(actual: np.ndarray, dtype: str) -> bool:
    """Whether the check applies: ``actual`` itself holds float16/bfloat16 values."""
    return dtype in NARROW and np.dtype(actual.dtype) == to_numpy(dtype)
