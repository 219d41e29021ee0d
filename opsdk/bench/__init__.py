"""Benchmarks: operator kernels against NumPy and ONNX Runtime, bandwidth, SDK figures.

Example:
    >>> from opsdk.bench import bench_op, format_result
    >>> result = bench_op("Gelu", shapes=["1024x1024"], repeat=5)  # doctest: +SKIP
    >>> print(format_result(result))  # doctest: +SKIP
"""

from ._cases import DEFAULT_CASES, BenchCase, parse_shape
from ._op import REGIMES, BenchResult, bench_op, bench_regimes, regime_of
from ._ort import OrtGraph, OrtRunner, ort_equivalent, register_ort_equivalent, single_node
from ._report import fmt_seconds, format_markdown, format_result, format_rows
from ._sdk import SDK_PARTS, SdkResult, bench_sdk
from ._stream import Bandwidth, stream_bandwidth
from ._timing import Timing, measure

__all__ = [
    "bench_op",
    "bench_regimes",
    "regime_of",
    "REGIMES",
    "BenchResult",
    "BenchCase",
    "DEFAULT_CASES",
    "parse_shape",
    "stream_bandwidth",
    "Bandwidth",
    "measure",
    "Timing",
    "ort_equivalent",
    "register_ort_equivalent",
    "single_node",
    "OrtGraph",
    "OrtRunner",
    "bench_sdk",
    "SdkResult",
    "SDK_PARTS",
    "format_result",
    "format_markdown",
    "format_rows",
    "fmt_seconds",
]
