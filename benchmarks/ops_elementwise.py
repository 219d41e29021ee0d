"""Elementwise operators (ThresholdedRelu, Gelu): bandwidth, NumPy and ONNX Runtime.

Targets: >= 70% of the measured copy bandwidth at 16M float32 elements, >= 3x the NumPy
reference at >= 1M elements, Gelu no slower than 1.25x ONNX Runtime.

    python benchmarks/ops_elementwise.py [--markdown] [--json] [--repeat N] [--quick]
"""

from __future__ import annotations

from ops_common import Row, run

SIXTEEN_M = ("4096x4096",)
ONE_M = ("1024x1024",)

ROWS = [
    Row("ThresholdedRelu", SIXTEEN_M, {"alpha": 0.5}, copy_target=0.7),
    Row("ThresholdedRelu", ONE_M, {"alpha": 0.5}),
    Row("ThresholdedRelu", SIXTEEN_M, {"alpha": 0.5}, dtype="float16"),
    Row("Gelu", SIXTEEN_M, {"approximate": "none"}, copy_target=0.7, ort_target=1.25),
    Row("Gelu", SIXTEEN_M, {"approximate": "tanh"}, copy_target=0.7, ort_target=1.25),
    Row("Gelu", ONE_M, {"approximate": "none"}, ort_target=1.25),
    Row("Gelu", ONE_M, {"approximate": "tanh"}, ort_target=1.25),
    Row("Gelu", ONE_M, {"approximate": "none"}, ort_target=1.25, threads=1),
    Row("Gelu", SIXTEEN_M, {"approximate": "none"}, dtype="float16"),
]

if __name__ == "__main__":
    raise SystemExit(run(ROWS, __doc__ or ""))
