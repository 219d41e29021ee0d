"""The timing harness: warm-up, calibrated inner loops, interleaved rounds, medians.

Every candidate runs once per round, in an order that rotates from round to round, so a
burst of load from another process lands on all candidates alike rather than on whichever
happened to run then. A sample times ``inner`` back-to-back calls (calibrated during the
warm-up so that one sample lasts at least ``min_sample`` seconds, which keeps the timer's
resolution out of tiny calls); the figure reported is the median over rounds. The garbage
collector is paused while timing, as :mod:`timeit` does.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Timing", "measure"]


@dataclass(frozen=True)
class Timing:
    """The samples of one candidate: seconds per call, one per round."""

    name: str
    samples: tuple[float, ...]
    inner: int

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        return min(self.samples)

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median (0.05 = 5%)."""
        if len(self.samples) < 4:
            return (max(self.samples) - min(self.samples)) / self.median if self.median else 0.0
        q = statistics.quantiles(self.samples, n=4)
        return (q[2] - q[0]) / self.median if self.median else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "median_s": self.median,
            "best_s": self.best,
            "iqr_rel": self.spread,
            "rounds": len(self.samples),
            "calls_per_sample": self.inner,
        }


def _sample(fn: Callable[[], Any], inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def measure(
    candidates: Mapping[str, Callable[[], Any]],
    *,
    repeat: int = 10,
    warmup: int = 2,
    min_sample: float = 0.002,
    max_inner: int = 100_000,
    settle: float = 0.0,
) -> dict[str, Timing]:
    """Time every candidate, interleaved; return ``{name: Timing}``.

    Args:
        candidates: name -> zero-argument callable (one call = one operation).
        repeat: rounds; each round takes one sample of every candidate.
        warmup: untimed calls of each candidate before calibration.
        min_sample: a sample lasts at least this long (more calls per sample if needed).
        max_inner: the most calls per sample.
        settle: seconds of sleep before each sample, followed by one untimed sample's worth
            of calls (after idling, the first milliseconds run slow), so that no sample runs
            while another candidate's threads still poll for work (ONNX Runtime's keep a
            core busy for about 40 ms after a run; 0.1 is enough).

    Example:
        >>> t = measure({"sum": lambda: sum(range(100))}, repeat=3, warmup=1)
        >>> t["sum"].median > 0, len(t["sum"].samples)
        (True, 3)
    """
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    names = list(candidates)
    samples: dict[str, list[float]] = {n: [] for n in names}
    inner: dict[str, int] = {}
    enabled = gc.isenabled()
    gc.disable()
    try:
        for n in names:
            for _ in range(max(warmup, 0)):
                candidates[n]()
            once = _sample(candidates[n], 1)
            inner[n] = max(1, min(max_inner, math.ceil(min_sample / max(once, 1e-9))))
        for r in range(repeat):
            k = r % len(names) if names else 0
            for n in names[k:] + names[:k]:
                if settle > 0:
                    time.sleep(settle)
                    _sample(candidates[n], inner[n])  # untimed: wakes threads, warms caches
                samples[n].append(_sample(candidates[n], inner[n]))
    finally:
        if enabled:
            gc.enable()
    return {n: Timing(n, tuple(samples[n]), inner[n]) for n in names}
