"""Elementwise operators (ThresholdedRelu, Gelu): both call paths, NumPy and ONNX Runtime.

Rows cover the cache-resident regime (64 KiB to 16 MiB per float32 array) and the
memory-bound one (64 MiB per array), float32 and float16, two threads and one. Targets:
ThresholdedRelu ``op(x)`` within 1.1x of the ``outputs=`` time and >= 70% of the measured
copy bandwidth at 16M float32 elements; >= 3x the NumPy reference at >= 1M elements; Gelu
``op(x)`` at <= 1.0x ONNX Runtime's time at every size.

    python benchmarks/ops_elementwise.py [--markdown] [--json] [--repeat N] [--quick]
"""

from __future__ import annotations

from ops_common import Row, run

SIXTEEN_M = ("4096x4096",)  # 64 MiB float32: memory-bound
FOUR_M = ("4096x1024",)  # 16 MiB float32
ONE_M = ("1024x1024",)  # 4 MiB float32
SIXTEEN_K = ("128x128",)  # 64 KiB float32

RELU = {"alpha": 0.5}
ERF, TANH = {"approximate": "none"}, {"approximate": "tanh"}
SMALL = {"numpy_target": None}  # below 1M elements the 3x NumPy target does not apply

ROWS = [
    Row("ThresholdedRelu", SIXTEEN_M, RELU, copy_target=0.7, call_target=1.1),
    Row("ThresholdedRelu", ONE_M, RELU, call_target=1.1),
    Row("ThresholdedRelu", SIXTEEN_K, RELU, **SMALL),
    Row("ThresholdedRelu", SIXTEEN_M, RELU, dtype="float16", call_target=1.1),
    *(Row("Gelu", shape, attrs, ort_target=1.0, **kw)
      for attrs in (ERF, TANH)
      for shape, kw in ((SIXTEEN_K, SMALL), (ONE_M, {}), (FOUR_M, {}), (SIXTEEN_M, {}))),
    Row("Gelu", SIXTEEN_M, ERF, copy_target=0.7, ort_target=1.0, call_target=1.1),
    *(Row("Gelu", shape, attrs, dtype="float16", ort_target=1.0, **kw)
      for attrs in (ERF, TANH)
      for shape, kw in ((SIXTEEN_K, SMALL), (ONE_M, {}), (SIXTEEN_M, {}))),
    *(Row("Gelu", ONE_M, attrs, ort_target=1.0, threads=1) for attrs in (ERF, TANH)),
]

if __name__ == "__main__":
    raise SystemExit(run(ROWS, __doc__ or ""))
