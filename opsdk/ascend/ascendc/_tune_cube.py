"""``opsdk tune`` for a hand-written Cube kernel whose tiling module has knobs.

The module (``op_kernel/tiling.py``) gives ``KNOBS`` (today's values), ``candidates()`` (knob
sets, today's first), ``tiling_for(**knobs)`` and ``TUNE_CALLS`` (representative calls:
input shapes and attributes). Each candidate runs every call on opsdk's model with the SoC's
costs; a candidate some call refuses (a position past its capacity), that the checker
reports, or whose outputs fail the operator's standard against the NumPy reference, is
dropped with the reason. The lowest total estimate wins (ties: the earlier candidate), so the
pick is the same on every run. It goes into ``<operator>/tuning.json`` as ``{"knobs": ...}``,
which the tiling module reads.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..._written import write_file
from ...errors import DeviceUnavailable, KernelError, OpsdkError
from ...spec import OpSpec
from ._gen import AicoreKernel
from ._tuning_file import TUNING_FILE

__all__ = ["CubeTrial", "CubeTuneResult", "tune_cube"]


@dataclass
class CubeTrial:
    """One candidate over every call: total estimated cycles and us, or why it was dropped."""

    knobs: dict[str, int]
    cycles: float | None
    microseconds: float | None
    bounds: list[str] = field(default_factory=list)
    problem: str = ""


@dataclass
class CubeTuneResult:
    """The knobs ``opsdk tune`` chose for a Cube kernel and every trial behind them."""

    op: str
    soc: str
    dtype: str
    trials: list[CubeTrial]
    written: Path | None = None

    @property
    def chosen(self) -> CubeTrial:
        return min((t for t in self.trials if t.cycles is not None), key=lambda t: t.cycles or 0)

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "soc": self.soc, "dtype": self.dtype,
                "label": "estimates from opsdk's Ascend C model (not NPU times)",
                "knobs": self.chosen.knobs, "estimate_us": self.chosen.microseconds,
                "today_us": self.trials[0].microseconds,
                "trials": [dataclasses.asdict(t) for t in self.trials],
                "written": str(self.written) if self.written else None}

    def format(self) -> str:
        c, t = self.chosen, self.trials[0]
        lines = [f"{self.op} on {self.soc} ({self.dtype}): estimates from opsdk's Ascend C "
                 "model, not NPU times",
                 f"  chosen {c.knobs}: {c.microseconds or 0:.2f} us over the tuning calls "
                 f"(today's {t.knobs}: {t.microseconds or 0:.2f} us)"]
        for trial in self.trials:
            what = trial.problem[:160] if trial.problem else f"{trial.microseconds:.2f} us"
            lines.append(f"    {trial.knobs}: {what}")
        if self.written:
            lines.append(f"wrote {self.written}")
        return "\n".join(lines)


def _inputs(spec: OpSpec, call: dict[str, Any], dtype: str) -> list[np.ndarray | None]:
    rng = np.random.default_rng(0)
    return [None if shape is None else rng.uniform(-1, 1, shape).astype(dtype)
            for shape in call["shapes"]]


def _trial(spec: OpSpec, folder: Path, kernel: AicoreKernel, knobs: dict[str, int], soc: str,
           dtype: str, costs: Any) -> CubeTrial:
    from ._estimate import reference_problem
    from .model import AscendcModel

    op = AscendcModel(folder, spec, soc=soc)
    op.kernel = dataclasses.replace(kernel, tiling=kernel.host.tiling_for(**knobs))
    cycles = us = 0.0
    bounds = []
    for call in kernel.host.TUNE_CALLS:
        inputs = _inputs(spec, call, dtype)
        try:
            est = op.estimate(inputs, call["attrs"], costs=costs)
        except (DeviceUnavailable, KernelError) as e:
            return CubeTrial(knobs, None, None, problem=str(e))
        why = reference_problem(spec, inputs, call["attrs"], est.outputs)
        if why:
            return CubeTrial(knobs, None, None, problem=why)
        cycles += est.cycles
        us += est.microseconds
        bounds.append(est.bound)
    return CubeTrial(knobs, cycles, us, bounds)


def tune_cube(spec: OpSpec, folder: Path, kernel: AicoreKernel, *, soc: str, dtype: str,
              costs: Any = None, write: bool = True, force: bool = False,
              progress: Callable[[str], None] | None = None) -> CubeTuneResult:
    """Search the knobs of ``kernel`` (a hand-written kernel whose tiling module has them) by
    the estimate on ``soc`` and write the pick to ``folder/tuning.json``.

    Example:
        >>> r = tune_cube(spec, folder, kernel, soc="Ascend910B3", dtype="float16",
        ...               write=False)  # doctest: +SKIP
        >>> sorted(r.chosen.knobs)  # doctest: +SKIP
        ['dbuf', 'kCap', 'mCap', 'nCap']
    """
    space = list(kernel.host.candidates())
    result = CubeTuneResult(spec.name, soc, dtype, [])
    for k, knobs in enumerate(space):
        trial = _trial(spec, folder, kernel, knobs, soc, dtype, costs)
        result.trials.append(trial)
        if progress:
            what = trial.problem[:80] if trial.problem else f"{trial.microseconds:.2f} us"
            progress(f"[{k + 1}/{len(space)}] {knobs}: {what}")
    if all(t.cycles is None for t in result.trials):
        raise OpsdkError(f"tune {spec.name}: no candidate passed; first refusal: "
                         f"{result.trials[0].problem}")
    if write:
        result.written = _write(folder, result, force)
    return result


def _write(folder: Path, result: CubeTuneResult, force: bool) -> Path:
    path = folder / TUNING_FILE
    text = json.dumps({"op": result.op, "soc": result.soc, "dtype": result.dtype,
                       "label": "chosen by opsdk tune from the estimate of opsdk's Ascend C "
                                "model", "knobs": result.chosen.knobs}, indent=2) + "\n"
    if path.is_file() and path.read_text() != text and not force:
        raise OpsdkError(f"tune {result.op}: {path} holds another table; pass --force to "
                         f"replace it (the pick: {result.chosen.knobs})")
    write_file(folder, TUNING_FILE, text)
    return path
