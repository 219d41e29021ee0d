"""What the output pool buys: ``op(x)`` with and without it, next to ``outputs=`` and ORT.

One interleaved run per size and thread count (ThresholdedRelu, float32): ``op(x)`` as
users call it (outputs from the pool), the call into a fresh ``np.empty`` output each
time (what ``op(x)`` cost before the pool: a new mapping the OS page-faults and zeroes),
``op.run(..., outputs=)`` into one preallocated array, and ONNX Runtime's own
ThresholdedRelu into a bound output. Reports medians and best samples with the load
average; nothing here asserts on time. Each sample starts after a 0.1 s pause and an
untimed sample's worth of calls (``measure(settle=...)``): ONNX Runtime's threads poll for
about 40 ms after a run, and without the pause the opsdk samples that followed ran with
one of the two cores taken by them.

    python benchmarks/output_memory.py [--repeat N] [--markdown]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import opsdk
from opsdk.bench import fmt_seconds, format_markdown, format_rows, measure
from opsdk.bench._ort import OrtRunner, ort_equivalent

SIZES = [(4096, 4096), (1024, 1024)]


def run_case(shape: tuple[int, int], threads: int, repeat: int) -> list[str]:
    op = opsdk.load("ThresholdedRelu")
    op.set_num_threads(threads)
    x = np.random.default_rng(0).uniform(-3, 3, shape).astype(np.float32)
    out, ort_out = np.empty_like(x), np.empty_like(x)
    graph = ort_equivalent(op.spec, [x], {"alpha": 0.5}, [ort_out])
    assert graph is not None
    t = measure({
        "op(x)": lambda: op(x, alpha=0.5),
        "fresh output": lambda: op.run([x], {"alpha": 0.5}, [np.empty(shape, np.float32)]),
        "outputs=": lambda: op.run([x], {"alpha": 0.5}, [out]),
        "onnxruntime": OrtRunner(graph, [x], [ort_out], threads),
    }, repeat=repeat, settle=0.1)
    base = t["outputs="].median
    return [f"{shape[0]}x{shape[1]} t={threads}",
            *(f"{fmt_seconds(v.median)} ({fmt_seconds(v.best)})" for v in t.values()),
            f"{t['op(x)'].median / base:.2f}", f"{t['fresh output'].median / base:.2f}",
            f"{t['op(x)'].median / t['onnxruntime'].median:.2f}", f"{os.getloadavg()[0]:.1f}"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=21)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    rows = [run_case(s, th, args.repeat) for s in SIZES for th in (1, 2)]
    header = ["ThresholdedRelu float32", "op(x)", "fresh output", "outputs=", "onnxruntime",
              "op(x) / outputs=", "fresh / outputs=", "op(x) / ORT", "load"]
    print(format_markdown(header, rows) if args.markdown else format_rows(header, rows))
    print(f"\nmedian (best) of {args.repeat} interleaved rounds; ratios of medians")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
