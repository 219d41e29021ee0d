"""Packaged (wheel) kernels against a ``-march=native`` build, timed side by side (``op(x)``).

``opsdk package`` compiles each kernel for the portable baseline (x86-64-v2: SSE4.2, no
AVX2/FMA/F16C) and for the wider levels (x86-64-v3: AVX2+FMA+F16C, x86-64-v4: AVX-512),
with zig c++ for manylinux2014; at load opsdk picks the widest one the CPU has. This
packages the cases' operators into a wheel (or takes ``--wheel``), unpacks it, and times
every variant it holds, the one the loader picks, and the same kernel.cpp built here with
``-march=native`` (what ``opsdk build`` does), all called interleaved in the same rounds.
Nothing here asserts on time.

    python benchmarks/isa_variants.py [--wheel W.whl] [--repeat N] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from opsdk.bench import fmt_seconds, format_markdown, format_rows, measure
from opsdk.build import build_operator
from opsdk.package import package_operators, verify_prebuilt
from opsdk.registry import find_operator
from opsdk.runtime.cpu import Operator, load_module

CASES = [
    ("ThresholdedRelu", {"alpha": 0.5}, (1024, 1024)),
    ("Gelu", {"approximate": "none"}, (1024, 1024)),
    ("Gelu", {"approximate": "tanh"}, (1024, 1024)),
    ("Softmax", {"axis": -1}, (1024, 1024)),
    ("Gelu", {"approximate": "none"}, (4096, 4096)),
    ("Softmax", {"axis": -1}, (4096, 4096)),
]
PICK = "wheel (loader's pick)"


def _wheel(path: str | None, tmp: Path) -> Path:
    """The unpacked wheel: the given one, or one packaged now from the cases' operators."""
    if path is None:
        names = sorted({op for op, _, _ in CASES})
        res = package_operators([find_operator(n).folder for n in names], tmp / "dist",
                                name="isa-bench", onnx=False, cann=False)
        path = str(res.wheel)
    with zipfile.ZipFile(path) as zf:
        zf.extractall(tmp / "site")
    return next((tmp / "site").glob("*/opsdk_manifest.json"))


def _variants(op: str, manifest: Path) -> dict[str, Operator]:
    """Every kernel of ``op`` in the wheel, the loader's pick, and a native build."""
    info = find_operator(op)
    folder = manifest.parent / "operators" / info.folder.name
    base = next(folder.glob("_opsdk_kernels*.so"))
    levels = json.loads(manifest.read_text())["isa_variants"]
    paths = {f"wheel {levels[0]}": base}
    paths.update({f"wheel {lv}": folder / "_isa" / lv / base.name for lv in levels[1:]})
    os.environ.pop("OPSDK_ISA", None)
    picked = verify_prebuilt(folder)
    paths[PICK] = picked
    paths["native"] = build_operator(info.folder, cxxflags="-O3 -march=native").module
    return {k: Operator(info.spec, load_module(p), info.folder) for k, p in paths.items()}


def _rows(manifest: Path, repeat: int) -> tuple[list[str], list[list[str]]]:
    header: list[str] = []
    rows = []
    for op, attrs, shape in CASES:
        ops = _variants(op, manifest)
        header = ["case", *ops, "pick / native", f"{next(iter(ops))[6:]} / native"]
        x = np.random.default_rng(0).uniform(-3, 3, shape).astype(np.float32)
        dtypes = ["float32", "float16"] if op == "Gelu" and shape == (1024, 1024) else ["float32"]
        for dt in dtypes:
            xd = x.astype(dt)
            t = measure({k: (lambda o=o, xd=xd, a=attrs: o(xd, **a)) for k, o in ops.items()},
                        repeat=repeat)
            native = t["native"].median
            label = f"{op} {dt} {'x'.join(map(str, shape))} " + ",".join(
                f"{k}={v}" for k, v in attrs.items())
            first = next(iter(ops))
            rows.append([label, *(fmt_seconds(t[k].median) for k in ops),
                         f"{t[PICK].median / native:.2f}",
                         f"{t[first].median / native:.2f}"])
    return header, rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--wheel", help="an opsdk package wheel holding the cases' operators")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="opsdk-isa-bench-") as tmp:
        manifest = _wheel(args.wheel, Path(tmp))
        header, rows = _rows(manifest, args.repeat)
    print(format_markdown(header, rows) if args.markdown else format_rows(header, rows))
    print(f"\nmedians of {args.repeat} interleaved rounds; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
