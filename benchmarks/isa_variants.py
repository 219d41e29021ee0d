"""The same kernels compiled for different x86-64 levels, timed side by side (``op(x)``).

Wheels are built for a portable baseline (x86-64-v2: SSE4.2, no AVX2/FMA/F16C); a local
``opsdk build`` uses ``-march=native``. This measures what that costs per operator and what
an x86-64-v3 (AVX2, FMA, F16C) build recovers, each variant a separately built module of
the same kernel.cpp, all called interleaved in the same rounds. Nothing here asserts on
time.

    python benchmarks/isa_variants.py [--repeat N] [--markdown]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from opsdk.bench import fmt_seconds, format_rows, measure
from opsdk.build import build_operator
from opsdk.registry import find_operator
from opsdk.runtime.cpu import Operator, load_module

LEVELS = {"x86-64-v2": "-O3 -march=x86-64-v2", "x86-64-v3": "-O3 -march=x86-64-v3",
          "native": "-O3 -march=native"}
CASES = [
    ("ThresholdedRelu", {"alpha": 0.5}, (1024, 1024)),
    ("Gelu", {"approximate": "none"}, (1024, 1024)),
    ("Gelu", {"approximate": "tanh"}, (1024, 1024)),
    ("Softmax", {"axis": -1}, (1024, 1024)),
    ("Gelu", {"approximate": "none"}, (4096, 4096)),
    ("Softmax", {"axis": -1}, (4096, 4096)),
]


def _variants(op: str) -> dict[str, Operator]:
    info = find_operator(op)
    out = {}
    for level, flags in LEVELS.items():
        res = build_operator(info.folder, cxxflags=flags)
        out[level] = Operator(info.spec, load_module(res.module), info.folder)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    rows = []
    for op, attrs, shape in CASES:
        ops = _variants(op)
        x = np.random.default_rng(0).uniform(-3, 3, shape).astype(np.float32)
        dtypes = ["float32", "float16"] if op == "Gelu" and shape == (1024, 1024) else ["float32"]
        for dt in dtypes:
            xd = x.astype(dt)
            t = measure({lv: (lambda o=o, xd=xd, a=attrs: o(xd, **a)) for lv, o in ops.items()},
                        repeat=args.repeat)
            native = t["native"].median
            label = f"{op} {dt} {'x'.join(map(str, shape))} " + ",".join(
                f"{k}={v}" for k, v in attrs.items())
            rows.append([label, *(fmt_seconds(t[lv].median) for lv in LEVELS),
                         f"{t['x86-64-v2'].median / native:.2f}",
                         f"{t['x86-64-v3'].median / native:.2f}"])
    header = ["case", *LEVELS, "v2 / native", "v3 / native"]
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        print("\n".join("| " + " | ".join(r) + " |" for r in rows))
    else:
        print(format_rows(header, rows))
    print(f"\nmedians of {args.repeat} interleaved rounds; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
