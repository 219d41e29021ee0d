"""`opsdk bench --sdk`: how fast the SDK itself is for an operator author.

Parts (all by default; ``--sdk overhead,noop`` picks some):

* ``cold``: ``opsdk new`` to the first green ``pytest`` of the new operator, in a fresh
  temporary project with a fresh, empty ``OPSDK_CACHE_DIR`` (so the pybind11 entry point
  and the kernel compile from nothing), each step a real subprocess;
* ``noop``: ``build_operator`` when nothing changed (the cache check), in-process, and
  ``opsdk build OP`` as a command (including the interpreter's start);
* ``edit``: a kernel.cpp edit to the rebuilt module (incremental compile and link);
* ``overhead``: one call of a compiled operator (ThresholdedRelu) on a 4-element float32
  array, with and without output allocation, next to ``np.add`` on the same array.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import OpsdkError
from ..runtime._procs import dies_with_us
from ._timing import measure

__all__ = ["SDK_PARTS", "SdkResult", "bench_sdk"]

SDK_PARTS = ("cold", "noop", "edit", "overhead")
_PROBE = "BenchProbe"


@dataclass
class SdkResult:
    """Median seconds per figure (``figures``) and every sample (``samples``)."""

    figures: dict[str, float] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, samples: Sequence[float], note: str = "") -> None:
        self.samples[name] = list(samples)
        self.figures[name] = statistics.median(samples)
        if note:
            self.notes[name] = note

    def as_dict(self) -> dict[str, Any]:
        return {"median_s": self.figures, "samples_s": self.samples, "notes": self.notes}


@contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(cmd: list[str], cwd: Path, env: dict[str, str], what: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          **dies_with_us())
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise OpsdkError(f"bench --sdk: {what} failed (exit {proc.returncode}):\n{tail}")
    return dt


def _scaffold(root: Path, env: dict[str, str]) -> float:
    return _run([sys.executable, "-m", "opsdk", "new", _PROBE, "--inputs", "x:float32",
                 "--outputs", "y", "--domain", "com.bench", "--dir", "operators"],
                root, env, "opsdk new")


def _cold_once() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="opsdk-bench-sdk-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "OPSDK_CACHE_DIR": str(root / "cache")}
        t_new = _scaffold(root, env)
        folder = root / "operators" / "bench_probe"
        t_test = _run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                       str(folder)], root, env, "pytest of the new operator")
    return {"new": t_new, "test": t_test, "total": t_new + t_test}


def _cold(result: SdkResult, rounds: int) -> None:
    runs = [_cold_once() for _ in range(rounds)]
    result.add("cold: opsdk new", [r["new"] for r in runs])
    result.add("cold: first green pytest (builds entry point + kernel)", [r["test"] for r in runs])
    result.add("cold: opsdk new -> first green test", [r["total"] for r in runs],
               "fresh temp project and empty OPSDK_CACHE_DIR, subprocesses")


def _build_parts(result: SdkResult, parts: Sequence[str], repeat: int) -> None:
    from ..build import build_operator

    with tempfile.TemporaryDirectory(prefix="opsdk-bench-sdk-") as tmp:
        root = Path(tmp)
        cache = str(root / "cache")
        env = {**os.environ, "OPSDK_CACHE_DIR": cache}
        _scaffold(root, env)
        folder = root / "operators" / "bench_probe"
        with _env(OPSDK_CACHE_DIR=cache):
            build_operator(folder)
            if "noop" in parts:
                noop = measure({"noop": lambda: build_operator(folder)}, repeat=repeat)
                result.add("no-op rebuild (in-process build_operator)", noop["noop"].samples)
                cli = [_run([sys.executable, "-m", "opsdk", "build", _PROBE, "-q"], root, env,
                            "opsdk build") for _ in range(min(repeat, 3))]
                result.add("no-op rebuild (`opsdk build OP` command)", cli,
                           "includes starting Python and importing opsdk")
            if "edit" in parts:
                kernel = folder / "kernel.cpp"
                text = kernel.read_text()
                times = []
                for i in range(min(repeat, 3)):
                    kernel.write_text(f"{text}\n// edit {i} {time.time_ns()}\n")
                    times.append(build_operator(folder).seconds)
                result.add("kernel.cpp edit -> rebuilt module", times, "incremental build")


def _overhead(result: SdkResult, repeat: int) -> None:
    from ..runtime import load

    op = load("ThresholdedRelu")
    x = np.array([0.5, 1.5, -2.0, 3.0], np.float32)
    out = np.empty_like(x)
    attrs = {"alpha": 1.0}
    t = measure(
        {
            "op(x)": lambda: op(x, alpha=1.0),
            "op.run(x, out)": lambda: op.run([x], attrs, [out]),
            "np.add(x, x)": lambda: np.add(x, x),
            "np.add(x, x, out)": lambda: np.add(x, x, out=out),
        },
        repeat=max(repeat, 5),
        min_sample=0.01,
    )
    for name, timing in t.items():
        label = "per-call: ThresholdedRelu " if name.startswith("op") else "per-call: "
        result.add(label + name, list(timing.samples), "4 float32 elements")


def bench_sdk(parts: Sequence[str] = SDK_PARTS, repeat: int = 5) -> SdkResult:
    """Measure the SDK's own figures; returns medians and samples.

    Example:
        >>> r = bench_sdk(["overhead"], repeat=3)  # doctest: +SKIP
        >>> sorted(r.figures)[0]  # doctest: +SKIP
        'per-call: ThresholdedRelu op(x)'
    """
    unknown = [p for p in parts if p not in SDK_PARTS]
    if unknown:
        raise OpsdkError(f"bench --sdk: unknown part(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(SDK_PARTS)}")
    if shutil.which("cmake") is None and any(p in parts for p in ("cold", "noop", "edit")):
        raise OpsdkError("bench --sdk: cmake is not on PATH; install opsdk's dependencies")
    result = SdkResult()
    if "cold" in parts:
        _cold(result, max(1, min(repeat, 3)))
    if "noop" in parts or "edit" in parts:
        _build_parts(result, parts, repeat)
    if "overhead" in parts:
        _overhead(result, repeat)
    return result
