"""Does a rewrite pay for the whole model? Time it, before and after, under opsdk's Session.

The shape classes (:data:`opsdk.onnx.CPU_SLOWER_CLASSES`) decide per convolution. But under
:class:`~opsdk.onnx.Session` every fused node also cuts ONNX Runtime's part of the graph in
two: each cut adds a hand-over between ONNX Runtime and the kernel, and ONNX Runtime loses
its layout optimisations (NCHWc reorders, Conv+Add fusions) across it. On small tensors this
costs more than the faster kernel saves (PP-OCR v2.0 cls with its 6 chains fused took 3.5x
the original's time while the later parts were fed their weights, 1.3x since Session makes
them initializers). So on the CPU a rewrite is also judged as a whole: both models run on
the same inputs, interleaved, and the fusions are kept only when the rewritten model's
median time is below :data:`KEEP_BELOW` times the original's.

Example:
    >>> t = ModelTiming(original_ms=2.0, rewritten_ms=1.5, runs=9, shapes={"x": (1, 3)},
    ...                 threads=None, max_abs_diff=0.0)
    >>> round(t.ratio, 2), t.pays
    (0.75, True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import ModelProto

__all__ = ["KEEP_BELOW", "ModelTiming", "time_models", "timing_text"]

#: The rewritten model must take less than this fraction of the original's median time: a
#: margin above the run-to-run noise of medians on a shared 2-core machine (a few percent),
#: so a rewrite that merely ties is not kept.
KEEP_BELOW = 0.95


@dataclass(frozen=True)
class ModelTiming:
    """Median times of one model before and after a rewrite, measured in one run."""

    original_ms: float
    rewritten_ms: float
    runs: int
    shapes: dict[str, tuple[int, ...]]
    threads: int | None
    #: largest absolute difference between the two models' outputs on the timed inputs
    max_abs_diff: float

    @property
    def ratio(self) -> float:
        """Rewritten time / original time (below 1: the rewrite is faster)."""
        return self.rewritten_ms / self.original_ms if self.original_ms > 0 else float("inf")

    @property
    def pays(self) -> bool:
        """Is the rewritten model faster by more than the noise margin?"""
        return self.ratio < KEEP_BELOW


def time_models(
    original: ModelProto,
    rewritten: ModelProto,
    feeds: Mapping[str, np.ndarray],
    *,
    threads: int | None = None,
    budget_s: float = 2.0,
    min_runs: int = 5,
    max_runs: int = 41,
    clock: Callable[[], float] = time.perf_counter,
) -> ModelTiming:
    """Median run times of ``original`` and ``rewritten`` under :class:`Session` on ``feeds``.

    Both sessions are built (kernels compiled) and run once before timing; then the two
    alternate, the first of each round swapped every round, so a change in machine load
    affects both alike. The number of rounds fits ``budget_s`` (between ``min_runs`` and
    ``max_runs``).

    Example:
        >>> t = time_models(model, fused, {"x": x})  # doctest: +SKIP
        >>> f"{t.rewritten_ms:.2f} ms vs {t.original_ms:.2f} ms"  # doctest: +SKIP
        '1.02 ms vs 1.31 ms'
    """
    from ._session import Session

    sessions = [Session(original, threads=threads), Session(rewritten, threads=threads)]
    feed = dict(feeds)
    first = [s.run(None, feed) for s in sessions]  # warm-up (and the outputs to compare)
    diff = max((_max_diff(a, b) for a, b in zip(first[0], first[1], strict=True)), default=0.0)
    start = clock()
    sessions[0].run(None, feed)
    sessions[1].run(None, feed)
    pair = max(clock() - start, 1e-9)
    runs = int(min(max(budget_s / pair, min_runs), max_runs))
    times: list[list[float]] = [[], []]
    for r in range(runs):
        for k in ((0, 1) if r % 2 == 0 else (1, 0)):
            t0 = clock()
            sessions[k].run(None, feed)
            times[k].append(clock() - t0)
    return ModelTiming(
        original_ms=float(np.median(times[0])) * 1e3,
        rewritten_ms=float(np.median(times[1])) * 1e3,
        runs=runs,
        shapes={k: tuple(int(n) for n in np.shape(v)) for k, v in feed.items()},
        threads=threads,
        max_abs_diff=diff,
    )


def _max_diff(a: Any, b: Any) -> float:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    return float(np.count_nonzero(a != b))


def timing_text(t: ModelTiming) -> str:
    """One sentence with the figures of a :class:`ModelTiming`.

    Example:
        >>> text = timing_text(ModelTiming(4.0, 5.0, 9, {"x": (1, 3, 32, 32)}, None, 1e-6))
        >>> text[:61]
        'rewritten 5.000 ms vs original 4.000 ms under Session (1.25x;'
        >>> text[61:124]
        ' medians of 9 interleaved runs on x 1x3x32x32, default threads;'
        >>> text[124:]
        ' outputs differ by at most 1e-06)'
    """
    shapes = ", ".join(f"{k} {'x'.join(map(str, v)) or 'scalar'}" for k, v in t.shapes.items())
    threads = "default threads" if t.threads is None else f"{t.threads} thread(s)"
    return (f"rewritten {t.rewritten_ms:.3f} ms vs original {t.original_ms:.3f} ms under "
            f"Session ({t.ratio:.2f}x; medians of {t.runs} interleaved runs on {shapes}, "
            f"{threads}; outputs differ by at most {t.max_abs_diff:.3g})")
