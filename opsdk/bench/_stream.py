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
from ._timing import Timing, measure

__all__ = ["Bandwidth", "StreamProbe", "stream_bandwidth", "default_stream_elements"]

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


class StreamProbe:
    """Copy and triad as timing candidates, to interleave with other measurements.

    ``candidates`` go into :func:`measure` next to the operator's candidates (so load
    from other processes hits both alike); :meth:`bandwidth` turns their timings into a
    :class:`Bandwidth`. Without a C++ compiler NumPy stands in (one thread).
    """

    COPY = "stream copy"
    TRIAD = "stream triad"

    def __init__(self, elements: int | None = None, threads: int | None = None) -> None:
        n = elements or default_stream_elements()
        self.a = np.full(n, 1.0, np.float32)
        self.b = np.full(n, 2.0, np.float32)
        self.c = np.zeros(n, np.float32)
        self.threads = threads or os.cpu_count() or 1
        try:
            op = _stream_operator()
            op.set_num_threads(self.threads)
            copy, triad = {"kind": "copy", "scalar": 3.0}, {"kind": "triad", "scalar": 3.0}
            a, b, c = self.a, self.b, self.c
            self._triad: Any = lambda: op.run([a, b], triad, [c])
            self.candidates: dict[str, Any] = {
                self.COPY: lambda: op.run([a], copy, [c]),
                self.TRIAD: self._triad,
            }
            self.method = "C++ (opsdk kernel, -O3 -march=native by default)"
        except (BuildError, FileNotFoundError) as e:
            self.threads = 1
            self._triad = self._numpy_triad
            self.candidates = {self.COPY: lambda: np.copyto(self.c, self.a),
                               self.TRIAD: self._numpy_triad}
            self.method = f"numpy, 1 thread (C++ helper unavailable: {e})"

    def _numpy_triad(self) -> None:
        np.multiply(self.b, 3.0, out=self.c)
        np.add(self.c, self.a, out=self.c)

    def bandwidth(self, timings: dict[str, Timing]) -> Bandwidth:
        """The :class:`Bandwidth` of measured candidates (checks the triad's result)."""
        self._triad()
        if not np.all(self.c == 7.0):  # a + 3 * b: the kernel really ran on every element
            raise RuntimeError("Stream: triad produced wrong values; the bandwidth probe is "
                               "broken")
        nbytes = self.a.nbytes
        return Bandwidth(
            copy=_BYTES["copy"] * nbytes / timings[self.COPY].median / 1e9,
            triad=_BYTES["triad"] * nbytes / timings[self.TRIAD].median / 1e9,
            threads=self.threads,
            elements=self.a.size,
            method=self.method,
        )


def stream_bandwidth(
    *, elements: int | None = None, threads: int | None = None, repeat: int = 10
) -> Bandwidth:
    """Measure copy and triad bandwidth with ``threads`` threads (default: all cores).

    Example:
        >>> bw = stream_bandwidth(elements=1 << 16, repeat=3)  # doctest: +SKIP
        >>> bw.copy > 0  # doctest: +SKIP
        True
    """
    probe = StreamProbe(elements, threads)
    return probe.bandwidth(measure(probe.candidates, repeat=repeat, warmup=1, min_sample=0.0))
