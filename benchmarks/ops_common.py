"""Shared driver of the ops_*.py benchmark scripts: run rows, print a table, check targets.

Each row is one ``opsdk.bench.bench_op`` run (opsdk's ``op(x)`` and ``outputs=`` call
paths, NumPy reference, ONNX Runtime and, for memory-bound operators, a STREAM copy/triad,
all interleaved). The load average is printed with the table: on a shared machine it says
how much to trust the medians. ``--markdown`` prints
the table the operators' README files carry; ``--json`` the raw results. Targets are
reported as met or missed with the measured numbers; nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opsdk.bench import BenchResult, bench_op, fmt_seconds, format_markdown, format_rows


@dataclass(frozen=True)
class Row:
    op: str
    shapes: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    dtype: str = "float32"
    copy_target: float | None = None  # required fraction of the copy bandwidth
    numpy_target: float | None = 3.0  # required speedup over the NumPy reference
    ort_target: float | None = None  # opsdk op(x) time <= this x ONNX Runtime's time
    call_target: float | None = None  # op(x) time <= this x the outputs= time
    threads: int | None = None  # this row's threads (default: --threads, else all cores)


def parse_args(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--repeat", type=int, default=15, help="interleaved rounds per row")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", action="store_true", help="print JSON results")
    p.add_argument("--quick", action="store_true", help="3 rounds (smoke run)")
    p.add_argument("--settle", type=float, default=0.1,
                   help="seconds of pause, then an untimed sample, before each sample, so "
                   "no candidate is timed while another's idle threads still poll "
                   "(ONNX Runtime's for about 40 ms after a run)")
    return p.parse_args()


def _label(r: BenchResult) -> str:
    shape = " ".join("x".join(map(str, v)) for v in r.shapes.values())
    attrs = ",".join(f"{k}={v}" for k, v in r.attrs.items()
                     if k in ("approximate", "axis", "alpha"))
    return f"{r.op} {r.dtype} {shape}" + (f" {attrs}" if attrs else "") + f" t={r.threads}"


def _checks(row: Row, r: BenchResult) -> list[str]:
    out = []
    frac = r.copy_fraction()
    if row.copy_target is not None and frac is not None:
        out.append(f"copy {frac:.0%} {'>=' if frac >= row.copy_target else '<'} "
                   f"{row.copy_target:.0%}")
    vs_np = r.ratio("numpy")
    if row.numpy_target is not None and vs_np is not None:
        out.append(f"numpy {vs_np:.1f}x {'>=' if vs_np >= row.numpy_target else '<'} "
                   f"{row.numpy_target:g}x")
    vs_ort = r.ratio("onnxruntime")
    if row.ort_target is not None and vs_ort is not None:
        ok = 1.0 / vs_ort <= row.ort_target
        out.append(f"op(x) {1 / vs_ort:.2f}x ORT's time {'<=' if ok else '>'} "
                   f"{row.ort_target:g}x")
    call = r.ratio("opsdk outputs=")
    if row.call_target is not None and call is not None:
        ok = 1.0 / call <= row.call_target
        out.append(f"op(x) {1 / call:.2f}x the outputs= time {'<=' if ok else '>'} "
                   f"{row.call_target:g}x")
    return out


def _cells(r: BenchResult) -> list[str]:
    vs_np, vs_ort = r.ratio("numpy"), r.ratio("onnxruntime")
    frac = r.copy_fraction()
    call = r.ratio("opsdk outputs=")
    return [
        _label(r),
        r.regime,
        fmt_seconds(r.seconds("opsdk")),
        fmt_seconds(r.seconds("opsdk outputs=")),
        f"{1 / call:.2f}" if call else "-",
        fmt_seconds(r.seconds("numpy")),
        fmt_seconds(r.seconds("onnxruntime")),
        f"{r.gbs():.1f}" if r.gbs() else "-",
        f"{frac:.0%}" if frac else "-",
        f"{vs_np:.1f}x" if vs_np else "-",
        f"{vs_ort:.2f}x" if vs_ort else "-",
    ]


HEADER = ["case", "regime", "op(x)", "outputs=", "op(x) / outputs=", "numpy", "onnxruntime",
          "GB/s", "% of copy", "vs numpy", "vs ORT"]


def load_average() -> str:
    """The 1-minute load average, for the record next to every figure."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:  # pragma: no cover - not on Linux/macOS
        return "unknown"


def run(rows: Sequence[Row], description: str) -> int:
    args = parse_args(description)
    repeat = 3 if args.quick else args.repeat
    results: list[tuple[Row, BenchResult]] = []
    loads = [load_average()]
    for row in rows:
        print(f"  {row.op} {' '.join(row.shapes)} {row.dtype} ...", file=sys.stderr, flush=True)
        r = bench_op(row.op, shapes=list(row.shapes), dtype=row.dtype, attrs=row.attrs,
                     threads=row.threads or args.threads, repeat=repeat, settle=args.settle)
        results.append((row, r))
        loads.append(load_average())
    if args.json:
        print(json.dumps([r.as_dict() for _, r in results], indent=2))
        return 0
    cells = [_cells(r) for _, r in results]
    print(format_markdown(HEADER, cells) if args.markdown else format_rows(HEADER, cells))
    bws = [r.bandwidth for _, r in results if r.bandwidth]
    if bws:
        copies = sorted(b.copy for b in bws)
        print(f"\ncopy bandwidth (STREAM-style, {bws[0].threads} threads, interleaved per row):"
              f" {copies[0]:.1f}..{copies[-1]:.1f} GB/s")
    print(f"load average (1 min) before each row and at the end: {', '.join(loads)}")
    if args.settle:
        print(f"each sample after a {args.settle:g} s pause and an untimed sample")
    print("op(x) = the call users write (outputs from the output pool); outputs= = "
          "op.run(..., outputs=) into preallocated arrays; vs numpy / vs ORT = their time / "
          "op(x)'s (above 1: opsdk is faster)")
    print("\ntargets:")
    for row, r in results:
        for check in _checks(row, r):
            print(f"  {_label(r)}: {check}")
    return 0


def run_table(
    op: str,
    rows: Sequence[Any],
    description: str,
    bench_kwargs: Any,
    cells: Any,
    header: Sequence[str],
    ratio_note: str,
    targets: Any,
) -> int:
    """The main() of a per-operator table script (conv_resnet.py, grid_sample_modes.py).

    ``bench_kwargs(row)`` gives bench_op's shapes/attrs/...; ``cells(row, result)`` a table
    row; ``targets(results)`` the met/missed lines.
    """
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--repeat", type=int, default=15, help="interleaved rounds per row")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", action="store_true", help="print JSON results")
    p.add_argument("--quick", action="store_true", help="3 rounds, first 3 rows (smoke run)")
    args = p.parse_args()
    rows = rows[:3] if args.quick else rows
    repeat = 3 if args.quick else args.repeat
    results = []
    for row in rows:
        print(f"  {row.label} ...", file=sys.stderr, flush=True)
        r = bench_op(op, dtype=args.dtype, threads=args.threads, repeat=repeat,
                     **bench_kwargs(row))
        results.append((row, r))
    if args.json:
        print(json.dumps([r.as_dict() for _, r in results], indent=2))
        return 0
    table = [cells(row, r) for row, r in results]
    print(format_markdown(header, table) if args.markdown else format_rows(list(header), table))
    print(f"\n{args.dtype}, threads={results[0][1].threads}; medians of {repeat} interleaved "
          f"rounds; {ratio_note}")
    print("targets:")
    for line in targets(results):
        print("  " + line)
    return 0
