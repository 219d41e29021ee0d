"""STREAM-style memory bandwidth, measured in-process.

The kernels (``stream/kernel.cpp``: copy ``c = a``, scale, add, triad ``c = a + s*b``) are
built and run through opsdk's own machinery: the same compiler flags, thread pool and
work splitting as operator kernels, so the figure is what an operator kernel can reach on
this machine with the same number of threads. Arrays are at least four times the
last-level cache, as STREAM requires; bytes are counted as STREAM counts them (copy moves
2 arrays, triad 3). Without a C++ compiler, a NumPy copy and triad (one thread) stand in
and the result says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BuildError
from ..spec import Attr, Input, OpSpec, Output
from ._timing import measure

__all__ = ["Bandwidth", "stream_bandwidth", "default_stream_elements"]

_FOLDER = Path(__file__).resolve().parent / "stream"
_BYTES = {"copy": 2, "scale": 2, "add": 3, "triad": 3}

STREAM_SPEC = OpSpec(
    "Stream",
    domain="com.opsdk.bench",
    inputs=[Input("a", "float32"), Input("b", "float32", optional=True)],
    outputs=[Output("c", "float32")],
    attrs=[Attr("kind", "string"), Attr("scalar", "float", 3.0)],
    doc="STREAM kernels: copy, scale, add, triad.",
)


@dataclass(frozen=True)
class Bandwidth:
    """Measured bandwidth in GB/s (1e9 bytes per second), median over the rounds."""

    copy: float
    triad: float
    threads: int
    elements: int
    method: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "copy_gbs": self.copy,
            "triad_gbs": self.triad,
            "threads": self.threads,
            "array_mib": self.elements * 4 / 2**20,
            "method": self.method,
        }


def _last_level_cache() -> int:
    """Bytes of the largest CPU cache (Linux sysfs), 0 if unknown."""
    best = 0
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            best = max(best, int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return best


def default_stream_elements() -> int:
    """float32 elements per array: 4x the last-level cache (STREAM's rule), at least 16 Mi."""
    return max(1 << 24, _last_level_cache())


@lru_cache(maxsize=1)
def _stream_operator() -> Any:
    from ..build import build_operator
    from ..runtime.cpu import Operator, load_module

    res = build_operator(_FOLDER, name="_bench_stream")
    return Operator(STREAM_SPEC, load_module(res.module), _FOLDER)


def stream_bandwidth(
    *, elements: int | None = None, threads: int | None = None, repeat: int = 10
) -> Bandwidth:
    """Measure copy and triad bandwidth with ``threads`` threads (default: all cores).

    Example:
        >>> bw = stream_bandwidth(elements=1 << 16, repeat=3)  # doctest: +SKIP
        >>> bw.copy > 0  # doctest: +SKIP
        True
    """
    n = elements or default_stream_elements()
    a = np.full(n, 1.0, np.float32)
    b = np.full(n, 2.0, np.float32)
    c = np.zeros(n, np.float32)
    try:
        op = _stream_operator()
    except (BuildError, FileNotFoundError) as e:
        return _numpy_bandwidth(a, b, c, repeat, f"numpy, 1 thread (C++ helper unavailable: {e})")
    nthreads = threads or os.cpu_count() or 1
    op.set_num_threads(nthreads)
    copy = {"kind": "copy", "scalar": 3.0}
    triad = {"kind": "triad", "scalar": 3.0}
    t = measure(
        {
            "copy": lambda: op.run([a], copy, [c]),
            "triad": lambda: op.run([a, b], triad, [c]),
        },
        repeat=repeat,
        warmup=1,
        min_sample=0.0,
    )
    op.run([a, b], triad, [c])
    if not np.all(c == 7.0):  # a + 3 * b: the kernel really ran on every element
        raise RuntimeError("Stream: triad produced wrong values; the bandwidth helper is broken")
    return Bandwidth(
        copy=_BYTES["copy"] * a.nbytes / t["copy"].median / 1e9,
        triad=_BYTES["triad"] * a.nbytes / t["triad"].median / 1e9,
        threads=nthreads,
        elements=n,
        method="C++ (opsdk kernel, -O3 -march=native by default)",
    )


def _numpy_bandwidth(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, repeat: int, method: str
) -> Bandwidth:
    def triad() -> None:
        np.multiply(b, 3.0, out=c)
        np.add(c, a, out=c)

    t = measure({"copy": lambda: np.copyto(c, a), "triad": triad}, repeat=repeat, warmup=1)
    return Bandwidth(
        copy=2 * a.nbytes / t["copy"].median / 1e9,
        triad=3 * a.nbytes / t["triad"].median / 1e9,
        threads=1,
        elements=a.size,
        method=method,
    )
