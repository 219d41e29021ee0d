"""GridSample against ONNX Runtime's GridSample and the NumPy reference, per mode.

Each row is one ``opsdk.bench.bench_op`` run (opsdk, the float64 NumPy reference and ONNX
Runtime's GridSample, interleaved; medians). Grids are uniform random in [-1, 1], the
worst case for caches: each output reads a random spot of its channel plane (smooth
grids, as spatial transformers and optical-flow warps produce, read neighbouring
pixels). Targets: faster than ONNX Runtime, >= 3x faster than NumPy. Nothing here
asserts on time.

    python benchmarks/grid_sample_modes.py [--markdown] [--json] [--repeat N]
                                           [--threads N] [--quick] [--dtype float16]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ops_common import run_table

from opsdk.bench import BenchResult, fmt_seconds

NUMPY_TARGET = 3.0


@dataclass(frozen=True)
class Sample:
    """One benchmark: input and grid shapes and the attributes."""

    x: tuple[int, ...]
    grid: tuple[int, ...]
    attrs: dict[str, Any] = field(default_factory=dict)

    def shapes(self) -> list[str]:
        return ["x=" + "x".join(map(str, self.x)), "grid=" + "x".join(map(str, self.grid))]

    @property
    def label(self) -> str:
        a = self.attrs
        mode = f"{a.get('mode', 'linear')}/{a.get('padding_mode', 'zeros')}"
        ac = " ac1" if a.get("align_corners") else ""
        return f"{'x'.join(map(str, self.x))} -> {'x'.join(map(str, self.grid[1:-1]))} {mode}{ac}"


ROWS = [
    Sample((4, 32, 64, 64), (4, 64, 64, 2)),
    Sample((4, 32, 64, 64), (4, 64, 64, 2), {"align_corners": 1}),
    Sample((4, 32, 64, 64), (4, 64, 64, 2), {"padding_mode": "border"}),
    Sample((4, 32, 64, 64), (4, 64, 64, 2), {"padding_mode": "reflection"}),
    Sample((4, 32, 64, 64), (4, 64, 64, 2), {"mode": "nearest"}),
    Sample((4, 32, 64, 64), (4, 64, 64, 2), {"mode": "cubic"}),
    Sample((1, 256, 32, 32), (1, 64, 64, 2)),
    Sample((1, 3, 512, 512), (1, 512, 512, 2)),
    Sample((2, 16, 16, 32, 32), (2, 16, 32, 32, 3)),
]


def _cells(row: Sample, r: BenchResult) -> list[str]:
    vs_ort, vs_np = r.ratio("onnxruntime"), r.ratio("numpy")
    return [
        row.label,
        fmt_seconds(r.seconds("opsdk")),
        fmt_seconds(r.seconds("opsdk outputs=")),
        fmt_seconds(r.seconds("onnxruntime")),
        fmt_seconds(r.seconds("numpy")),
        f"{r.gbs():.2f}" if r.gbs() else "-",
        f"{vs_ort:.2f}x" if vs_ort else "-",
        f"{vs_np:.1f}x" if vs_np else "-",
    ]


HEADER = ["case", "op(x)", "outputs=", "onnxruntime", "numpy", "GB/s", "vs ORT", "vs numpy"]


def _targets(rows: list[tuple[Sample, BenchResult]]) -> list[str]:
    out = []
    for row, r in rows:
        vs_ort, vs_np = r.ratio("onnxruntime"), r.ratio("numpy")
        if vs_ort:
            ok = vs_ort > 1.0
            out.append(f"{row.label}: {vs_ort:.2f}x ORT's speed ({'met' if ok else 'MISSED'})")
        if vs_np:
            ok = vs_np >= NUMPY_TARGET
            out.append(f"{row.label}: {vs_np:.1f}x NumPy's speed ({'met' if ok else 'MISSED'})")
    return out


def main() -> int:
    return run_table(
        "GridSample",
        ROWS,
        __doc__ or "",
        lambda row: dict(shapes=row.shapes(), attrs=row.attrs, bandwidth=False),
        _cells,
        HEADER,
        "op(x) = the call users write, outputs= = into preallocated outputs; 'vs' = their "
        "time / op(x)'s time",
        _targets,
    )


if __name__ == "__main__":
    raise SystemExit(main())
