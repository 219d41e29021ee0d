"""LayerNormalization and Softmax: both call paths, the NumPy reference and ONNX Runtime.

Rows cover the cache-resident regime (up to 16 MiB per array) and the memory-bound one
(64 MiB per array). Targets: >= 3x the NumPy reference at >= 1M elements; ``op(x)`` at
<= 1.0x ONNX Runtime's time at every size.

    python benchmarks/ops_normalization.py [--markdown] [--json] [--repeat N] [--quick]
"""

from __future__ import annotations

from ops_common import Row, run

LN = "LayerNormalization"
SMALL = {"numpy_target": None}  # below 1M elements the 3x NumPy target does not apply

ROWS = [
    Row(LN, ("X=64x256",), ort_target=1.0, **SMALL),
    Row(LN, ("X=1024x1024",), ort_target=1.0),
    Row(LN, ("X=8x128x768",), ort_target=1.0),
    Row(LN, ("X=4096x1024",), ort_target=1.0),
    Row(LN, ("X=16384x1024",), ort_target=1.0),
    Row(LN, ("X=16x128x768",), {"axis": 1}, ort_target=1.0),
    Row(LN, ("X=1024x1024",), dtype="float16", ort_target=1.0),
    Row(LN, ("X=16384x1024",), dtype="float16", ort_target=1.0),
    Row("Softmax", ("64x256",), {"axis": -1}, ort_target=1.0, **SMALL),
    Row("Softmax", ("1024x1024",), {"axis": -1}, ort_target=1.0),
    Row("Softmax", ("8x128x768",), {"axis": -1}, ort_target=1.0),
    Row("Softmax", ("4096x1024",), {"axis": -1}, ort_target=1.0),
    Row("Softmax", ("16384x1024",), {"axis": -1}, ort_target=1.0),
    Row("Softmax", ("16384x64",), {"axis": -1}, ort_target=1.0),
    Row("Softmax", ("2x1048576",), {"axis": -1}, ort_target=1.0),  # few long rows
    Row("Softmax", ("32x128x256",), {"axis": 1}, ort_target=1.0),
    Row("Softmax", ("1024x1024",), {"axis": -1}, dtype="float16", ort_target=1.0),
    Row("Softmax", ("16384x1024",), {"axis": -1}, dtype="float16", ort_target=1.0),
]

if __name__ == "__main__":
    raise SystemExit(run(ROWS, __doc__ or ""))
