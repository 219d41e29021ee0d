"""LayerNormalization and Softmax against the NumPy reference and ONNX Runtime.

Targets: >= 3x the NumPy reference at >= 1M elements, no slower than 1.25x ONNX Runtime.

    python benchmarks/ops_normalization.py [--markdown] [--json] [--repeat N] [--quick]
"""

from __future__ import annotations

from ops_common import Row, run

ROWS = [
    Row("LayerNormalization", ("X=8192x1024",), ort_target=1.25),
    Row("LayerNormalization", ("X=4096x256",), ort_target=1.25),
    Row("LayerNormalization", ("X=4096x256",), ort_target=1.25, threads=1),
    Row("LayerNormalization", ("X=64x16384",), ort_target=1.25),
    Row("LayerNormalization", ("X=16x128x768",), {"axis": 1}, ort_target=1.25),
    Row("LayerNormalization", ("X=8192x1024",), dtype="float16", ort_target=1.25),
    Row("Softmax", ("8192x1024",), {"axis": -1}, ort_target=1.25),
    Row("Softmax", ("16384x64",), {"axis": -1}, ort_target=1.25),
    Row("Softmax", ("1024x1024",), {"axis": -1}, ort_target=1.25, threads=1),
    Row("Softmax", ("64x16384",), {"axis": -1}, ort_target=1.25),
    Row("Softmax", ("32x128x256",), {"axis": 1}, ort_target=1.25),
    Row("Softmax", ("8192x1024",), {"axis": -1}, dtype="float16", ort_target=1.25),
]

if __name__ == "__main__":
    raise SystemExit(run(ROWS, __doc__ or ""))
