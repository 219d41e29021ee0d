"""How many small elementwise cases the validation harness runs per second.

A case is the whole loop the pytest plugin runs: generate the inputs from the seed, run
the compiled ThresholdedRelu kernel, run the NumPy reference on float64-upcast inputs,
round, compare under the dtype's precision standard and build the result. Cases hold
<= 1k elements. Reports are not written (--opsdk-report adds that cost separately).

Run: python benchmarks/harness_speed.py [--cases 3000]
"""

from __future__ import annotations

import argparse
import time

import opsdk
from opsdk.testing import OpCase, run_case


def small_cases(n: int) -> list[OpCase]:
    """``n`` distinct cases of 1..1024 elements over both dtypes, layouts and distributions."""
    shapes = [(7,), (32,), (16, 16), (4, 5, 6), (1024,), (8, 128), ()]
    dists = ["uniform", "normal", "laplace", "tanh"]
    out = []
    for i in range(n):
        dt = ("float16", "float32")[i % 2]
        shape = shapes[i % len(shapes)]
        out.append(OpCase(f"bench{i}", (dt,), (shape,), distribution=dists[i % len(dists)],
                          edges=i % 5 == 0, layout="strided" if i % 7 == 0 else "contiguous"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cases", type=int, default=3000)
    args = ap.parse_args()
    op = opsdk.load("ThresholdedRelu")
    cases = small_cases(args.cases)
    for c in cases[:50]:  # warm up: plans, caches, imports
        run_case(op.spec, op, c, keep_arrays=False)
    t0, c0 = time.perf_counter(), time.process_time()
    failed = sum(not run_case(op.spec, op, c, keep_arrays=False).passed for c in cases)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(cases)
    print(f"{n} cases (<= 1024 elements), {failed} failed")
    print(f"  wall clock: {dt:.2f} s = {n / dt:.0f} cases/s (target >= 1000)")
    print(f"  CPU time:   {cpu:.2f} s = {n / cpu:.0f} cases per CPU-second "
          f"(the harness's own cost when other processes share the cores)")



if __name__ == "__main__":
    main()
