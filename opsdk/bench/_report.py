"""Plain-text tables of benchmark results (JSON comes from ``as_dict``)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ._op import BenchResult

__all__ = ["format_result", "format_rows", "fmt_seconds"]


def fmt_seconds(s: float | None) -> str:
    """Seconds in a readable unit.

    Example:
        >>> fmt_seconds(0.0123), fmt_seconds(4.2e-6), fmt_seconds(None)
        ('12.30 ms', '4.20 us', '-')
    """
    if s is None:
        return "-"
    if s >= 1.0:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e9:.0f} ns"


def format_rows(
    header: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = (0,)
) -> str:
    """Columns two spaces apart: those in ``left`` left-aligned, the others right-aligned.

    Example:
        >>> print(format_rows(["op", "ms"], [["Gelu", "1.5"], ["Softmax", "12.0"]]))
        op         ms
        Gelu      1.5
        Softmax  12.0
    """
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for r in [header, *rows]:
        cells = [str(c).ljust(w) if i in left else str(c).rjust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def format_markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table, as the operator READMEs and docs/benchmarks.md carry.

    Example:
        >>> print(format_markdown(["op", "ms"], [["Gelu", "1.5"]]))
        | op | ms |
        |---|---|
        | Gelu | 1.5 |
    """
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def _title(r: BenchResult) -> str:
    shapes = " ".join(f"{k}={'x'.join(map(str, v)) or 'scalar'}" for k, v in r.shapes.items())
    attrs = " ".join(f"{k}={v}" for k, v in r.attrs.items())
    mib = r.bytes_moved / 2**20
    return (f"{r.op}  {r.dtype}  {shapes}  {attrs}  threads={r.threads}  "
            f"({r.regime}: {mib:.3g} MiB moved)")


def format_result(r: BenchResult) -> str:
    """The table ``opsdk bench OP`` prints: one row per candidate, then the bandwidth."""
    compute = r.flops is not None
    header = ["", "median", "best", "spread", "GFLOP/s" if compute else "GB/s"]
    if r.bandwidth and not compute:
        header.append("% of copy")
    header.append("opsdk speedup")
    rows: list[list[str]] = []
    for who, t in r.timings.items():
        rate = r.gflops(who) if compute else r.gbs(who)
        row = [who, fmt_seconds(t.median), fmt_seconds(t.best), f"{t.spread:.0%}",
               f"{rate:.2f}" if rate else "-"]
        if r.bandwidth and not compute:
            frac = r.copy_fraction(who)
            row.append(f"{frac:.0%}" if frac else "-")
        ratio = r.ratio(who)
        row.append("1.00x" if who == "opsdk" else (f"{ratio:.2f}x" if ratio else "-"))
        rows.append(row)
    lines = [_title(r), format_rows(header, rows)]
    if r.bandwidth:
        b = r.bandwidth
        lines.append(
            f"bandwidth: copy {b.copy:.2f} GB/s, triad {b.triad:.2f} GB/s "
            f"({b.threads} threads, {b.elements * 4 / 2**20:.0f} MiB arrays; {b.method})"
        )
    if r.ort_max_abs_diff is not None:
        lines.append(f"opsdk vs onnxruntime output: max abs diff {r.ort_max_abs_diff:.3g}")
    for who, note in r.notes.items():
        lines.append(f"note ({who}): {note}")
    if r.load_average is not None:
        lines.append(f"load average (1 min) at the end: {r.load_average:.2f} on "
                     f"{os.cpu_count()} cores")
    lines.append("times are medians of interleaved rounds; opsdk = op(x) (outputs from the "
                 "pool), opsdk outputs= = op.run(..., outputs=) into preallocated arrays; "
                 "opsdk speedup = other / opsdk")
    return "\n".join(lines)
