"""`opsdk bench OP`: the kernel, its NumPy reference and ONNX Runtime, in one run.

The candidates run interleaved on the same inputs (see :mod:`._timing`). opsdk runs on
both of its call paths: ``opsdk`` is ``op(*inputs, **attrs)``, the call users write (it
allocates the outputs, from the output pool), and ``opsdk outputs=`` is
``op.run(inputs, attrs, outputs=...)`` into preallocated outputs; ONNX Runtime writes into
preallocated outputs too (I/O binding). Without ``--shape`` an operator is measured at a
cache-resident and at a memory-bound size (:func:`bench_regimes`), so neither regime hides
the other. Memory-bound operators report achieved GB/s (bytes of every input and output,
once each) against the copy bandwidth measured in the same run; compute-bound ones
(convolution) report GFLOP/s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import OpsdkError
from ._cases import DEFAULT_CASES, make_inputs, resolve_shapes
from ._ort import OrtRunner, ort_equivalent
from ._stream import Bandwidth, StreamProbe
from ._timing import Timing, measure

__all__ = ["BenchResult", "bench_op", "bench_regimes", "regime_of", "REGIMES"]

#: The default sizes ``opsdk bench OP`` measures when no shape is given.
REGIMES = ("cache-resident", "memory-bound")


def regime_of(nbytes: int) -> str:
    """Where a case's data lives: bytes of all inputs and outputs, once each.

    Up to 16 MiB fits in the last-level cache of most servers; from 64 MiB on the run is
    bound by memory bandwidth; in between it depends on the machine.

    Example:
        >>> regime_of(4 << 20), regime_of(128 << 20), regime_of(32 << 20)
        ('cache-resident', 'memory-bound', 'between cache and memory')
    """
    if nbytes <= 16 << 20:
        return "cache-resident"
    if nbytes >= 64 << 20:
        return "memory-bound"
    return "between cache and memory"


@dataclass
class BenchResult:
    """The measurements of one ``opsdk bench OP`` run (see :meth:`as_dict`)."""

    op: str
    dtype: str
    shapes: dict[str, tuple[int, ...]]
    attrs: dict[str, Any]
    threads: int
    timings: dict[str, Timing]
    bytes_moved: int
    flops: float | None = None
    bandwidth: Bandwidth | None = None
    notes: dict[str, str] = field(default_factory=dict)
    ort_max_abs_diff: float | None = None
    #: 1-minute load average when the rounds ended (None where the OS does not say): on a
    #: shared machine it tells how far to trust the medians.
    load_average: float | None = None

    @property
    def regime(self) -> str:
        """``cache-resident``, ``memory-bound`` or in between (:func:`regime_of`)."""
        return regime_of(self.bytes_moved)

    def seconds(self, who: str) -> float | None:
        t = self.timings.get(who)
        return t.median if t is not None else None

    def ratio(self, slower: str, faster: str = "opsdk") -> float | None:
        """How many times faster ``faster`` is than ``slower`` (medians)."""
        a, b = self.seconds(slower), self.seconds(faster)
        return a / b if a is not None and b else None

    def gbs(self, who: str = "opsdk") -> float | None:
        t = self.seconds(who)
        return self.bytes_moved / t / 1e9 if t else None

    def gflops(self, who: str = "opsdk") -> float | None:
        t = self.seconds(who)
        return self.flops / t / 1e9 if t and self.flops else None

    def copy_fraction(self, who: str = "opsdk") -> float | None:
        g = self.gbs(who)
        return g / self.bandwidth.copy if g and self.bandwidth else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: medians, ratios, GB/s or GFLOP/s, bandwidth, notes."""
        cands: dict[str, Any] = {}
        for who, t in self.timings.items():
            entry = t.as_dict()
            entry["gbs"] = self.gbs(who)
            if self.flops:
                entry["gflops"] = self.gflops(who)
            if self.bandwidth:
                entry["copy_fraction"] = self.copy_fraction(who)
            cands[who] = entry
        return {
            "op": self.op,
            "dtype": self.dtype,
            "shapes": {k: list(v) for k, v in self.shapes.items()},
            "attrs": self.attrs,
            "threads": self.threads,
            "bytes_moved": self.bytes_moved,
            "regime": self.regime,
            "flops": self.flops,
            "candidates": cands,
            "speedup_vs_numpy": self.ratio("numpy"),
            "speedup_vs_onnxruntime": self.ratio("onnxruntime"),
            "bandwidth": self.bandwidth.as_dict() if self.bandwidth else None,
            "ort_max_abs_diff": self.ort_max_abs_diff,
            "notes": self.notes,
            "load_average": self.load_average,
        }


def _ort_candidate(op: Any, inputs: list[np.ndarray | None], attrs: dict[str, Any],
                   outs: list[np.ndarray], threads: int,
                   notes: dict[str, str]) -> tuple[OrtRunner | None, list[np.ndarray]]:
    ort_outs = [np.empty_like(o) for o in outs]
    try:
        graph = ort_equivalent(op.spec, inputs, attrs, ort_outs)
        if graph is None:
            notes["onnxruntime"] = "no ONNX Runtime equivalent (set spec.onnx_op or register one)"
            return None, ort_outs
        if graph.note:
            notes["onnxruntime"] = graph.note
        n_out = len(graph.output_names) or len(ort_outs)
        return OrtRunner(graph, inputs, ort_outs[:n_out], threads), ort_outs[:n_out]
    except (OpsdkError, ImportError) as e:
        notes["onnxruntime"] = f"skipped: {e}"
        return None, ort_outs


def _candidates(
    op: Any, inputs: list[np.ndarray | None], resolved: dict[str, Any],
    outs: list[np.ndarray], numpy: bool, onnxruntime: bool, nthreads: int,
    notes: dict[str, str],
) -> tuple[dict[str, Any], OrtRunner | None, list[np.ndarray]]:
    args = list(inputs)
    while args and args[-1] is None:
        args.pop()
    cands: dict[str, Any] = {
        "opsdk": lambda: op(*args, **resolved),  # the call users write
        "opsdk outputs=": lambda: op.run(inputs, resolved, outs),
    }
    ref = op.spec.reference
    if numpy and ref is not None:
        cands["numpy"] = lambda: ref(*inputs, **resolved)
    elif numpy:
        notes["numpy"] = "the spec has no reference"
    runner: OrtRunner | None = None
    ort_outs: list[np.ndarray] = []
    if onnxruntime:
        runner, ort_outs = _ort_candidate(op, inputs, dict(resolved), outs, nthreads, notes)
        if runner is not None:
            cands["onnxruntime"] = runner
    return cands, runner, ort_outs


def bench_op(
    name: str,
    *,
    shapes: Sequence[str] | None = None,
    dtype: str = "float32",
    attrs: Mapping[str, Any] | None = None,
    threads: int | None = None,
    repeat: int = 10,
    warmup: int = 2,
    numpy: bool = True,
    onnxruntime: bool = True,
    bandwidth: bool | Bandwidth = True,
    stream_elements: int | None = None,
    regime: str = "memory-bound",
    settle: float = 0.0,
) -> BenchResult:
    """Benchmark operator ``name`` against its NumPy reference and ONNX Runtime.

    ``shapes`` are ``--shape`` strings (``"4096x1024"`` or ``"NAME=4096x1024"``); None
    uses the operator's default benchmark of ``regime`` (one of :data:`REGIMES`).
    ``bandwidth`` may be a :class:`Bandwidth` measured earlier, True to measure it in the
    same interleaved rounds (STREAM copy and triad take their turns next to the
    candidates), or False to skip it. ``settle`` is passed on to :func:`measure`: seconds
    of pause (and an untimed sample) before each sample, so that no candidate is timed while
    another's threads still poll for work.

    Example:
        >>> r = bench_op("Gelu", shapes=["1024"], repeat=3, bandwidth=False)  # doctest: +SKIP
        >>> sorted(r.timings)  # doctest: +SKIP
        ['numpy', 'onnxruntime', 'opsdk']
    """
    from ..runtime import load

    op = load(name)
    previous = op.module.get_num_threads()
    try:
        return _bench(op, shapes, dtype, attrs, threads, repeat, warmup, numpy, onnxruntime,
                      bandwidth, stream_elements, regime, settle)
    finally:
        op.set_num_threads(previous)  # the module's setting outlives this call


def _bench(
    op: Any,
    shapes: Sequence[str] | None,
    dtype: str,
    attrs: Mapping[str, Any] | None,
    threads: int | None,
    repeat: int,
    warmup: int,
    numpy: bool,
    onnxruntime: bool,
    bandwidth: bool | Bandwidth,
    stream_elements: int | None,
    regime: str,
    settle: float,
) -> BenchResult:
    spec = op.spec
    if regime not in REGIMES:
        raise OpsdkError(f"bench {spec.name}: regime {regime!r} is not one of "
                         f"{', '.join(REGIMES)}")
    case = DEFAULT_CASES.get(spec.name)
    merged = {**(dict(case.attrs) if case and not shapes else {}), **dict(attrs or {})}
    resolved = spec.resolve_attrs(merged)
    shp = resolve_shapes(spec, shapes, resolved, small=regime == "cache-resident")
    inputs = make_inputs(spec, shp, dtype, case.ranges if case else None)
    nthreads = threads or int(os.environ.get("OPSDK_NUM_THREADS", 0)) or os.cpu_count() or 1
    op.set_num_threads(nthreads)
    outs = op.run(inputs, resolved)
    notes: dict[str, str] = {}
    cands, runner, ort_outs = _candidates(op, inputs, resolved, outs, numpy, onnxruntime,
                                          nthreads, notes)
    probe: StreamProbe | None = None
    case_flops = case.flops if case is not None else None
    if bandwidth is True and case_flops is None:
        probe = StreamProbe(stream_elements, nthreads)
        cands.update(probe.candidates)  # interleaved with the operator's candidates
    timings = measure(cands, repeat=repeat, warmup=warmup, settle=settle)
    bw = probe.bandwidth(timings) if probe is not None else None
    for name in (StreamProbe.COPY, StreamProbe.TRIAD):
        timings.pop(name, None)
    result = BenchResult(
        op=spec.name, dtype=dtype, shapes=dict(shp), attrs=dict(resolved), threads=nthreads,
        timings=timings,
        bytes_moved=sum(a.nbytes for a in inputs if a is not None) + sum(o.nbytes for o in outs),
        notes=notes,
    )
    if case_flops is not None:
        result.flops = case_flops(shp, [o.shape for o in outs], resolved)
    if runner is not None:
        result.ort_max_abs_diff = float(np.max(np.abs(
            outs[0].astype(np.float64) - ort_outs[0].astype(np.float64)), initial=0.0))
    result.bandwidth = bandwidth if isinstance(bandwidth, Bandwidth) else bw
    result.load_average = _load_average()
    return result


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - platforms without a load average
        return None


def bench_regimes(name: str, **kwargs: Any) -> list[BenchResult]:
    """:func:`bench_op` at the operator's cache-resident and memory-bound default sizes.

    Keyword arguments other than ``shapes`` and ``regime`` are passed on.

    Example:
        >>> rs = bench_regimes("Gelu", repeat=3, bandwidth=False)  # doctest: +SKIP
        >>> [r.regime for r in rs]  # doctest: +SKIP
        ['cache-resident', 'memory-bound']
    """
    return [bench_op(name, regime=regime, **kwargs) for regime in REGIMES]
