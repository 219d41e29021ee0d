"""``opsdk tune``: a tiling per shape bucket, chosen by the cycle estimate of opsdk's model.

For a generated AI Core kernel the tiling has three parameters: buffers per queue (double
buffering or not), a cap on the tile length and a cap on the cores. A hand-written kernel's
parameters are the ones its ``op_kernel/tiling.py`` declares (``Tiling(..., search={name:
[default, ...]})``, and optionally ``constraint(params, shapes, soc) -> reason or None``):
every combination of their candidates, the defaults first. Every candidate runs on
the model at each bucket's size with the SoC's costs; a candidate whose outputs fail the
operator's standard against the NumPy reference, or that the race checker refuses, is
dropped with the reason; the fastest estimate wins each bucket (ties: the earlier candidate,
today's tiling first, so the choice is the same on every run). The table goes into
``<operator>/tuning.json``, which the kernel generator reads: the generated TilingFunc (CANN
project) and the model then pick the row by ``totalLength``.

Estimates are cached under the build cache keyed by the kernel source, the model, the costs,
the size and the candidate, so a warm run compiles and runs nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..._limits import allocation_problem
from ..._written import write_file
from ...dtypes import DTYPES
from ...errors import OpsdkError
from ...spec import OpSpec
from ._gen import BUFFER_NUM, AicoreKernel, TuningRow
from ._tune_cube import CubeTuneResult
from ._tuning_file import TUNING_FILE, read_tuning

__all__ = ["TUNING_FILE", "TuneResult", "read_tuning", "tune", "candidates", "ParamRow",
           "param_candidates", "MAX_COMBINATIONS"]

#: Bucket sizes (elements of the first input) when none are given.
DEFAULT_SIZES = (4096, 65536, 1 << 20)
_TILE_CAPS = (0, 16384, 8192, 4096, 2048, 1024)
#: The most combinations of a hand-written kernel's search parameters one run tries.
MAX_COMBINATIONS = 64


@dataclass(frozen=True)
class ParamRow:
    """One shape bucket of a hand-written kernel's tuned search parameters (calls with
    ``totalLength <= up_to``; None: every larger call)."""

    up_to: int | None
    params: tuple[tuple[str, int], ...]


def param_candidates(search: dict[str, tuple[int, ...]], where: str = "tiling.py"
                     ) -> list[ParamRow]:
    """Every combination of the declared candidates, the defaults (first values) first.

    Example:
        >>> [c.params for c in param_candidates({"tile": (512, 1024), "bufs": (2, 1)})][:3]
        [(('tile', 512), ('bufs', 2)), (('tile', 512), ('bufs', 1)), (('tile', 1024), ('bufs', 2))]
    """
    names = list(search)
    combos = list(itertools.product(*(search[n] for n in names)))
    if len(combos) > MAX_COMBINATIONS:
        raise OpsdkError(f"{where}: search declares {len(combos)} combinations "
                         f"({' x '.join(str(len(search[n])) for n in names)}); opsdk tune tries "
                         f"at most {MAX_COMBINATIONS}: drop candidates")
    return [ParamRow(None, tuple(zip(names, c, strict=True))) for c in combos]


Candidate = TuningRow | ParamRow


def _label(c: Candidate) -> str:
    if isinstance(c, ParamRow):
        return ", ".join(f"{k} {v}" for k, v in c.params)
    return f"buffers {c.buffers}, tile {c.tile_cap or 'fit'}, cores {c.cores or 'all'}"


def candidates(cores: int) -> list[TuningRow]:
    """The search space on a SoC with ``cores`` cores (rows without a bucket yet), today's
    tiling first.

    Example:
        >>> candidates(40)[0]
        TuningRow(up_to=None, buffers=2, tile_cap=0, cores=0)
        >>> len(candidates(40))
        24
    """
    core_caps = [0] + ([cores // 2] if cores >= 2 else [])
    return [TuningRow(None, b, t, c) for c in core_caps for b in range(BUFFER_NUM, 0, -1)
            for t in _TILE_CAPS]


@dataclass
class Trial:
    """A candidate's figures at one size: estimated cycles and us, bound, or why it failed."""

    size: int
    candidate: Candidate  # up_to None: a candidate, not yet a bucket's row
    cycles: float | None
    microseconds: float | None
    bound: str
    problem: str = ""
    cached: bool = False


@dataclass
class TuneResult:
    """The table ``opsdk tune`` chose and every trial behind it."""

    op: str
    soc: str
    dtype: str
    rows: list[Candidate]
    trials: list[Trial] = field(default_factory=list)
    written: Path | None = None
    default: Candidate = TuningRow(None)  # the tiling without tuning.json

    def chosen(self, size: int) -> Trial:
        return min((t for t in self.trials if t.size == size and t.cycles is not None),
                   key=lambda t: t.cycles or 0.0)

    def today(self, size: int) -> Trial:
        return next(t for t in self.trials if t.size == size and t.candidate == self.default)

    def as_dict(self) -> dict[str, Any]:
        sizes = sorted({t.size for t in self.trials})
        return {
            "op": self.op, "soc": self.soc, "dtype": self.dtype,
            "label": "estimates from opsdk's Ascend C model (not NPU times)",
            "rows": [_row_json(r) for r in self.rows],
            "buckets": [{"size": s, "chosen": _knobs(self.chosen(s).candidate),
                         "estimate_us": self.chosen(s).microseconds,
                         "today_us": self.today(s).microseconds,
                         "bound": self.chosen(s).bound} for s in sizes],
            "trials": [{"size": t.size, **_knobs(t.candidate), "cycles": t.cycles,
                        "bound": t.bound, "problem": t.problem, "cached": t.cached}
                       for t in self.trials],
            "written": str(self.written) if self.written else None,
        }

    def format(self) -> str:
        sizes = sorted({t.size for t in self.trials})
        lines = [f"{self.op} on {self.soc} ({self.dtype}): estimates from opsdk's Ascend C "
                 "model, not NPU times",
                 f"  {'bucket':<22}{'chosen':<36}{'estimate':>11}{'today':>11}  bound"]
        for k, s in enumerate(sizes):
            c, t = self.chosen(s), self.today(s)
            bucket = f"<= {s}" if k < len(sizes) - 1 else f"> {sizes[k - 1]}" if k else "all"
            lines.append(f"  {bucket:<22}{_label(c.candidate):<36}{c.microseconds or 0:>9.2f}us"
                         f"{t.microseconds or 0:>9.2f}us  {c.bound}")
        bad = [t for t in self.trials if t.problem]
        lines.append(f"  {len(self.trials)} trials, {sum(t.cached for t in self.trials)} from "
                     f"the cache, {len(bad)} refused")
        for t in bad[:5]:
            lines.append(f"    refused at {t.size}: {_label(t.candidate)}: {t.problem[:200]}")
        if self.written:
            lines.append(f"wrote {self.written}")
        return "\n".join(lines)


def _knobs(r: Candidate) -> dict[str, Any]:
    if isinstance(r, ParamRow):
        return {"params": dict(r.params)}
    return {"buffers": r.buffers, "tile_cap": r.tile_cap, "cores": r.cores}


def _row_json(r: Candidate) -> dict[str, Any]:
    return {"up_to": r.up_to, **_knobs(r)}


def _cache_key(kernel: AicoreKernel, costs: str, soc: str, dtype: str, size: int,
               c: Candidate, attrs: dict[str, Any]) -> str:
    from .model import _model_hash

    text = "\0".join([kernel.source, repr(kernel.tiling), _model_hash(), costs, soc, dtype,
                      str(size), repr(c),
                      json.dumps(attrs, sort_keys=True, default=str)])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _inputs(spec: OpSpec, size: int, dtype: str) -> list[Any]:
    """Seeded uniform inputs in [-3, 3) of ``size`` elements (what the buckets are measured on)."""
    import numpy as np

    from ...dtypes import to_numpy

    rng = np.random.default_rng(size)
    return [rng.uniform(-3.0, 3.0, size).astype(to_numpy(dtype)) for i in spec.inputs
            if not i.optional]


def _trial(spec: OpSpec, folder: Path, soc: str, dtype: str, size: int, c: Candidate,
           kernel: AicoreKernel, attrs: dict[str, Any], costs: Any, cache: Path) -> Trial:
    from ...errors import KernelError
    from ._estimate import costs_for, reference_problem
    from .model import AscendcModel

    if isinstance(c, ParamRow) and kernel.constraint is not None:
        why = kernel.constraint(dict(c.params), [(size,)] * len(spec.inputs), soc)
        if why:
            return Trial(size, c, None, None, "", f"constraint: {why}")
    table = costs_for(soc, costs)
    key = _cache_key(kernel, table.encoded(), soc, dtype, size, c, attrs)
    hit = cache / f"{key}.json"
    if hit.is_file():
        d = json.loads(hit.read_text())
        return Trial(size, c, d["cycles"], d["microseconds"], d["bound"], d["problem"], True)
    inputs = _inputs(spec, size, dtype)
    model = AscendcModel(folder, spec, soc=soc)
    model.kernel = kernel
    try:
        est = model.estimate(inputs, dict(attrs), costs=costs)
        problem = reference_problem(spec, inputs, attrs, est.outputs)
        trial = Trial(size, c, None if problem else est.cycles,
                      None if problem else est.microseconds, est.bound, problem)
    except KernelError as e:  # the race checker or a limit of the chip
        trial = Trial(size, c, None, None, "", str(e))
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f".{key}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"cycles": trial.cycles, "microseconds": trial.microseconds,
                               "bound": trial.bound, "problem": trial.problem}))
    os.replace(tmp, hit)  # a killed run leaves no half-written entry
    return trial


def tune(
    name: str,
    *,
    soc: str = "Ascend910B3",
    dtype: str = "float32",
    sizes: Sequence[int] | None = None,
    attrs: dict[str, Any] | None = None,
    costs: Any = None,
    write: bool = True,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    folder: str | Path | None = None,
) -> TuneResult | CubeTuneResult:
    """Search the tiling of operator ``name``'s AI Core kernel per shape bucket (``sizes``:
    elements of each input, 1-D, the buckets' upper ends) by the estimate on ``soc``, and
    write the table to the operator's ``tuning.json`` (``force`` replaces a different one).
    A generated kernel's parameters are opsdk's; a hand-written one's, those its tiling.py
    declares. ``folder``: the operator's folder (default: the registry's ``name``). A
    hand-written Cube kernel whose tiling module has knobs (FusedConvBnRelu) is searched over
    its knobs on its own calls instead (:mod:`._tune_cube`; ``sizes`` unused).

    Example:
        >>> r = tune("ThresholdedRelu", sizes=[4096, 65536], write=False)  # doctest: +SKIP
        >>> [row.buffers for row in r.rows]  # doctest: +SKIP
        [2, 2]
    """
    from ...build import cache_dir
    from ...registry import find_operator
    from ..socs import core_resources
    from ._kernels import aicore_kernel

    if folder is None:
        info = find_operator(name)
        spec, folder = info.spec, Path(info.folder)
    else:
        from ...registry import load_spec

        spec, folder = load_spec(folder), Path(folder)
    _check_sizes_fit(spec, dtype, max(sizes or DEFAULT_SIZES))
    current = aicore_kernel(spec, folder, tuned=False)  # a broken tuning.json is replaceable
    if current.origin != "generated" and hasattr(current.host, "tiling_for"):
        from ._tune_cube import tune_cube

        return tune_cube(spec, folder, current, soc=soc, dtype=dtype, costs=costs,
                         write=write, force=force, progress=progress)
    sizes = sorted(set(sizes or DEFAULT_SIZES))
    if not sizes or sizes[0] < 1:
        raise OpsdkError(f"tune {spec.name}: --sizes must be positive element counts, got {sizes}")
    attrs = dict(attrs or {})
    _, cores = core_resources(soc)
    space, make = _space(spec, current, cores)
    cache = cache_dir() / "tune"
    result = TuneResult(spec.name, soc, dtype, [], default=space[0])
    total = len(space) * len(sizes)
    for k, size in enumerate(sizes):
        for j, c in enumerate(space):
            trial = _trial(spec, folder, soc, dtype, size, c, make(c), attrs, costs, cache)
            result.trials.append(trial)
            if progress:
                done = k * len(space) + j + 1
                what = trial.problem[:80] if trial.problem else \
                    f"{trial.microseconds:.2f} us {trial.bound}"
                progress(f"[{done}/{total}] size {size}: {_label(c)}: {what}"
                         f"{' (cached)' if trial.cached else ''}")
        if not any(t.size == size and t.cycles is not None for t in result.trials):
            raise OpsdkError(f"tune {spec.name}: no candidate passed at size {size}; first "
                             f"refusal: {next(t.problem for t in result.trials if t.size == size)}")
        up_to = size if k < len(sizes) - 1 else None
        result.rows.append(dataclasses.replace(result.chosen(size).candidate, up_to=up_to))
    if write:
        result.written = _write(folder, result, force)
    return result


def _space(spec: OpSpec, current: AicoreKernel, cores: int
           ) -> tuple[list[Candidate], Callable[[Candidate], AicoreKernel]]:
    """The candidates (the default first) and the kernel of each."""
    from ..._generated import BANNER
    from ._gen_reduce import generate
    from ._tiling import with_params

    if current.origin == "generated":
        def generated(c: Candidate) -> AicoreKernel:
            assert isinstance(c, TuningRow)
            return generate(spec, BANNER, [c])

        return list(candidates(cores)), generated
    desc = Path(current.origin).parent / "tiling.py"
    if not current.tiling.search:
        raise OpsdkError(
            f"{spec.name}: the AI Core kernel is hand-written ({current.origin}) and {desc} "
            "declares no search parameters; declare them in its TILING, e.g. Tiling(..., "
            "search={\"tileCap\": [0, 4096, 1024]}) with the steps reading tileCap (the first "
            "value is the default), see docs/ascendc_model.md, \"Tuning: opsdk tune\"")
    search = {k: tuple(v) for k, v in current.tiling.search.items()}

    def handwritten(c: Candidate) -> AicoreKernel:
        assert isinstance(c, ParamRow)
        return dataclasses.replace(current, tiling=with_params(current.tiling,
                                                               [(None, dict(c.params))]))

    return list(param_candidates(search, str(desc))), handwritten


def _check_sizes_fit(spec: OpSpec, dtype: str, largest: int) -> None:
    """Refuse a size whose tensors (every input and output at ``largest`` elements of
    ``dtype``) would not fit the memory ceiling, before any is allocated."""
    if dtype not in DTYPES:
        raise OpsdkError(f"tune {spec.name}: --dtype {dtype!r} is not a dtype; pass one of "
                         f"{', '.join(DTYPES)}")
    tensors = len(spec.inputs) + len(spec.outputs)
    itemsize = 2 if dtype == "bfloat16" else np.dtype(DTYPES[dtype].numpy).itemsize
    problem = allocation_problem((largest,), itemsize * tensors)
    if problem:
        raise OpsdkError(f"tune {spec.name}: --sizes {largest} ({tensors} tensors of {dtype}) "
                         f"{problem}")


def _write(folder: Path, result: TuneResult, force: bool) -> Path:
    data = {
        "_about": ("Written by opsdk tune (estimates from opsdk's Ascend C model, not NPU "
                   "times); read by the AI Core kernel generator. Do not edit: re-run "
                   f"opsdk tune {result.op} --force."),
        "op": result.op, "soc": result.soc, "dtype": result.dtype,
        "rows": [_row_json(r) for r in result.rows],
        "buckets": result.as_dict()["buckets"],
    }
    text = json.dumps(data, indent=2) + "\n"
    path = folder / TUNING_FILE
    if path.is_file() and not force:
        try:
            same = json.loads(path.read_text()).get("rows") == data["rows"]
        except (OSError, ValueError, AttributeError):
            same = False
        if same:
            return path  # the same table: nothing to change
        raise OpsdkError(f"tune {result.op}: {path} holds another table; pass --force to "
                         "replace it (the previous one is lost), or move it away")
    return write_file(folder, TUNING_FILE, text)
