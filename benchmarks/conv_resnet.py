"""FusedConvBnRelu on ResNet-like shapes against ONNX Runtime's Conv+BatchNormalization+Relu.

Each row is one ``opsdk.bench.bench_op`` run: the opsdk kernel, ONNX Runtime running
Conv -> BatchNormalization -> Relu with the weights and BN parameters as initializers (so
it folds BN and prepacks the weights, as in a real model) and, where asked, the float64
NumPy reference, all interleaved; figures are medians. Each sample starts after a 0.1 s
pause and one untimed sample, so that no candidate is timed while ONNX Runtime's workers
still poll (about 40 ms after each of its runs). Targets: opsdk time <= 1.5x ONNX
Runtime's, and >= 3x faster than the NumPy reference. Nothing here asserts on time.

    python benchmarks/conv_resnet.py [--markdown] [--json] [--repeat N] [--threads N]
                                     [--quick] [--dtype float16]
"""

from __future__ import annotations

from dataclasses import dataclass

from ops_common import run_table

from opsdk.bench import BenchResult, fmt_seconds

ORT_TARGET = 1.5
NUMPY_TARGET = 3.0
# Pause before each sample (plus one untimed sample): ONNX Runtime's workers poll for
# about 40 ms after each run, holding one of the cores while the next candidate is timed.
SETTLE = 0.1


@dataclass(frozen=True)
class Conv:
    """One convolution: batch, in/out channels, spatial size, kernel, stride."""

    n: int
    c: int
    hw: int
    m: int
    k: int
    stride: int = 1
    numpy: bool = True  # time the NumPy reference too (slow for large batches)

    def shapes(self) -> list[str]:
        return [
            f"x={self.n}x{self.c}x{self.hw}x{self.hw}",
            f"w={self.m}x{self.c}x{self.k}x{self.k}",
            f"b={self.m}",
        ]

    def attrs(self) -> dict[str, list[int]]:
        p = self.k // 2
        return {"pads": [p, p, p, p], "strides": [self.stride, self.stride]}

    @property
    def label(self) -> str:
        s = f" s{self.stride}" if self.stride != 1 else ""
        return f"N{self.n} {self.c}->{self.m} {self.hw}x{self.hw} {self.k}x{self.k}{s}"


ROWS = [
    Conv(1, 64, 56, 64, 3),
    Conv(1, 64, 56, 256, 1),
    Conv(1, 256, 56, 64, 1),
    Conv(1, 128, 28, 128, 3),
    Conv(1, 128, 56, 128, 3, stride=2),
    Conv(1, 256, 14, 256, 3),
    Conv(1, 256, 14, 256, 1),
    Conv(8, 64, 56, 64, 3, numpy=False),
    Conv(8, 128, 28, 128, 3, numpy=False),
    Conv(8, 256, 14, 256, 3, numpy=False),
    Conv(8, 256, 14, 64, 1, numpy=False),
]


def _cells(row: Conv, r: BenchResult) -> list[str]:
    t_ort, vs_np = r.ratio("onnxruntime"), r.ratio("numpy")
    gf_ort = r.gflops("onnxruntime")
    return [
        row.label,
        fmt_seconds(r.seconds("opsdk")),
        fmt_seconds(r.seconds("opsdk outputs=")),
        fmt_seconds(r.seconds("onnxruntime")),
        fmt_seconds(r.seconds("numpy")),
        f"{r.gflops():.0f}" if r.gflops() else "-",
        f"{gf_ort:.0f}" if gf_ort else "-",
        f"{1 / t_ort:.2f}x" if t_ort else "-",
        f"{vs_np:.1f}x" if vs_np else "-",
    ]


HEADER = [
    "case",
    "op(x)",
    "outputs=",
    "onnxruntime",
    "numpy",
    "GFLOP/s",
    "ORT GFLOP/s",
    "time vs ORT",
    "vs numpy",
]


def _targets(rows: list[tuple[Conv, BenchResult]]) -> list[str]:
    loads = [f"{r.load_average:.1f}" for _, r in rows if r.load_average is not None]
    out = [f"load average (1 min) after each row: {', '.join(loads) or 'unknown'}"]
    for row, r in rows:
        t_ort, vs_np = r.ratio("onnxruntime"), r.ratio("numpy")
        if t_ort:
            ok = 1 / t_ort <= ORT_TARGET
            out.append(
                f"{row.label}: {1 / t_ort:.2f}x ORT's time "
                f"{'<=' if ok else '>'} {ORT_TARGET}x ({'met' if ok else 'MISSED'})"
            )
        if vs_np:
            ok = vs_np >= NUMPY_TARGET
            out.append(
                f"{row.label}: {vs_np:.1f}x faster than NumPy "
                f"{'>=' if ok else '<'} {NUMPY_TARGET:g}x ({'met' if ok else 'MISSED'})"
            )
    return out


def main() -> int:
    return run_table(
        "FusedConvBnRelu",
        ROWS,
        __doc__ or "",
        lambda row: dict(shapes=row.shapes(), attrs=row.attrs(), numpy=row.numpy,
                         settle=SETTLE),
        _cells,
        HEADER,
        "op(x) = the call users write, outputs= = into preallocated outputs; 'time vs ORT' = "
        "op(x) time / ONNX Runtime time",
        _targets,
    )


if __name__ == "__main__":
    raise SystemExit(main())
