"""Accuracy of the vectorised math against float64: <opsdk/vec.h>'s exp and reciprocal, and
Gelu (erf and tanh forms) in float32, float16 and bfloat16.

float32 inputs are swept by bit pattern: every float32 in the range (``--stride 1``,
exhaustive) or every STRIDE-th one (default 1 for exp and the reciprocal, 16 for Gelu, whose
float64 reference is ``math.erfc`` per element); float16 and bfloat16 take all 65,536 values.
Errors are reported in ulps of the exact value in the output dtype (subnormal results in
ulps of the smallest subnormal) and as relative errors. The checked-in tests
(tests/runtime/test_vec.py, tests/runtime/test_ops_kernels.py) assert the documented bounds
on denser-than-needed grids; this script is the full sweep behind the documented figures.

    python benchmarks/vec_accuracy.py [--stride N] [--gelu-stride N] [--markdown]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import ml_dtypes
import numpy as np

import opsdk
from opsdk.bench import format_markdown

PROBE = Path(__file__).resolve().parent.parent / "tests" / "data" / "vec_probe"
CHUNK = 1 << 22
_ERFC = np.frompyfunc(math.erfc, 1, 1)
_MANT = {np.dtype(np.float32): 24, np.dtype(np.float16): 11, np.dtype(ml_dtypes.bfloat16): 8}
_MIN_EXP = {np.dtype(np.float32): -126, np.dtype(np.float16): -14,
            np.dtype(ml_dtypes.bfloat16): -126}


def float32_range(lo: float, hi: float, stride: int) -> Iterator[np.ndarray]:
    """Every stride-th float32 in [lo, hi] (lo <= hi, same sign or zero), in chunks."""
    a, b = (np.array([lo, hi], np.float32).view(np.uint32).astype(np.int64))
    first, last = (min(a, b), max(a, b))
    for start in range(int(first), int(last) + 1, CHUNK * stride):
        stop = min(start + CHUNK * stride, int(last) + 1)
        yield np.arange(start, stop, stride, dtype=np.int64).astype(np.uint32).view(np.float32)


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in ulps of exact in got's dtype (subnormals: ulps of the smallest)."""
    mant, emin = _MANT[got.dtype], _MIN_EXP[got.dtype]
    e = np.frexp(np.maximum(np.abs(exact), 2.0**emin))[1]
    with np.errstate(invalid="ignore"):
        return np.abs(got.astype(np.float64) - exact) / np.ldexp(1.0, e - mant)


def rel(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(got.astype(np.float64) - exact) / np.abs(exact)


def gelu_exact(x: np.ndarray, approximate: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # ml_dtypes' casts flag subnormal bfloat16 values
        x64 = x.astype(np.float64)
    if approximate == "tanh":
        z = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64**3)
        with np.errstate(over="ignore"):
            return x64 / (1.0 + np.exp(-2.0 * z))
    return 0.5 * x64 * _ERFC(-x64 / math.sqrt(2.0)).astype(np.float64)


def sweep(chunks: Iterator[np.ndarray], fn: Callable[[np.ndarray], np.ndarray],
          exact: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float, float, int]:
    """Max ulps, where, max relative error (normal results), count."""
    worst, at, worst_rel, count = 0.0, math.nan, 0.0, 0
    for x in chunks:
        got, want = fn(x), exact(x)
        ok = np.isfinite(want) & (want != 0)
        u = ulps(got[ok], want[ok])
        if u.size and float(u.max()) > worst:
            worst, at = float(u.max()), float(x[ok][int(np.argmax(u))])
        normal = np.abs(want[ok]) >= 2.0 ** _MIN_EXP[got.dtype]
        if normal.any():
            worst_rel = max(worst_rel, float(rel(got[ok][normal], want[ok][normal]).max()))
        count += x.size
    return worst, at, worst_rel, count


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stride", type=int, default=1, help="exp / reciprocal float32 stride")
    p.add_argument("--gelu-stride", type=int, default=16, help="Gelu float32 stride")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    vec, gelu = opsdk.load(str(PROBE)), opsdk.load("Gelu")
    lanes = int(vec(np.zeros(1, np.float32), fn="lanes")[0])
    rows: list[tuple[str, str, tuple[float, float, float, int]]] = []
    t0 = time.perf_counter()
    for fn in ("exp", "exp8"):
        rows.append((f"exp_nonpositive ({lanes if fn == 'exp' else 8} lanes)", "[-104, 0]",
                     sweep(float32_range(-104.0, -0.0, args.stride),
                           lambda x, f=fn: vec(x, fn=f), lambda x: np.exp(x.astype(np.float64)))))
    for fn in ("recip", "recip8"):
        rows.append((f"recip ({lanes if fn == 'recip' else 8} lanes)", "[1, 2)",
                     sweep(float32_range(1.0, float(np.nextafter(np.float32(2), 0)), args.stride),
                           lambda x, f=fn: vec(x, fn=f), lambda x: 1.0 / x.astype(np.float64))))
    for approximate, ranges in (("none", ((-10, 10), (-14, -10))),
                                ("tanh", ((-2, 10), (-10, -2), (-14, -10)))):
        for lo, hi in ranges:
            parts = [(lo, min(hi, 0)), (max(lo, 0), hi)] if lo < 0 < hi else [(lo, hi)]
            chunks = (x for a, b in parts for x in float32_range(a, b, args.gelu_stride))
            rows.append((f"Gelu {approximate} float32", f"[{lo}, {hi}]",
                         sweep(chunks, lambda x, a=approximate: gelu(x, approximate=a),
                               lambda x, a=approximate: gelu_exact(x, a))))
        for dt in (np.float16, ml_dtypes.bfloat16):
            x = np.arange(1 << 16, dtype=np.uint16).view(dt)
            x = x[np.isfinite(x.astype(np.float32))]
            rows.append((f"Gelu {approximate} {np.dtype(dt).name}", "every finite value",
                         sweep(iter([x]), lambda v, a=approximate: gelu(v, approximate=a),
                               lambda v, a=approximate: gelu_exact(v, a))))
    header = ("function", "inputs", "values", "max error (ulps)", "at x", "max rel. error")
    lines = [(name, rng, f"{n:,}", f"{u:.3f}", f"{at:.6g}", f"{r:.2e}")
             for name, rng, (u, at, r, n) in rows]
    if args.markdown:
        print(format_markdown(header, lines))
    else:
        for line in (header, *lines):
            print("  ".join(f"{c:>22}" for c in line))
    print(f"\nfloat32 stride {args.stride} (exp, recip) and {args.gelu_stride} (Gelu); "
          f"{time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
