"""The cycle estimate of opsdk's Ascend C model: per-pipe time lines from the model's trace.

An estimate from opsdk's model of the pipes, never an NPU time (docs/ascendc_model.md,
"The estimate"). Each instruction the kernel issues starts when the scalar unit has issued
it, its pipe is free and the flag it waits for is set (the C++ side, ``Schedule`` in
``include/opsdk_model_pipes.h``); it lasts what its bytes cost at the SoC's rates
(``Cost``). Here the per-block traces become the kernel's figures: time (blocks run one
after another on each core), per-pipe busy time, the critical path and the bound.

Costs come from ``data/aicore_costs.json`` (each with its source) and the SoC's clock and
GM rates from ``data/socs.json``.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..._written import write_file
from ...errors import OpsdkError

__all__ = ["Costs", "Estimate", "TraceInstr", "costs_for", "read_trace", "reference_problem"]

_DATA = Path(__file__).resolve().parent.parent / "data" / "aicore_costs.json"
#: The pipes of the vector side, in the order reports show them.
PIPES = ("MTE2", "V", "MTE3", "S")
#: The Cube's pipes, shown where a kernel uses them.
CUBE_PIPES = ("MTE1", "M", "FIX")
_BOUND = {"MTE2": "MTE2-bound", "V": "vector-bound", "MTE3": "MTE3-bound", "S": "scalar-bound",
          "MTE1": "MTE1-bound", "M": "Cube-bound", "FIX": "FIX-bound"}
#: The bound when the chip's shared GM bandwidth, not any core's pipes, sets the time.
GM_BOUND = "GM-bandwidth-bound"


@cache
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_DATA.read_text())
    return data


@dataclass(frozen=True)
class Costs:
    """The costs an estimate ran with: the SoC's clock, the pipe costs (cycles, bytes per
    cycle) and the vector APIs' cycles per repeat, each with its source.

    Example:
        >>> c = costs_for("Ascend910B3")
        >>> c.freq_mhz, c.pipes["mte2Bpc"]
        (1800.0, 16.0)
    """

    soc: str
    freq_mhz: float
    pipes: dict[str, float]
    vector: dict[str, float]
    sources: dict[str, str] = field(default_factory=dict)
    gm_bytes_per_s: float = math.inf  # the chip's GM bandwidth, shared by all cores

    def encoded(self) -> str:
        """The ``name=value;...;vec.API=cycles`` text the model's ``ParseTiming`` reads."""
        items = [f"{k}={v!r}" for k, v in self.pipes.items()]
        items += [f"vec.{k}={v!r}" for k, v in self.vector.items()]
        return ";".join(items)

    def as_dict(self) -> dict[str, Any]:
        return {"soc": self.soc, "freq_mhz": self.freq_mhz, "pipes": dict(self.pipes),
                "vector": dict(self.vector), "gm_bytes_per_s": self.gm_bytes_per_s,
                "sources": dict(self.sources)}


def costs_for(soc: str, overrides: Mapping[str, Any] | str | Path | None = None, *,
              core: str = "aiv") -> Costs:
    """The estimate's costs on ``soc`` (a SoC version or a compute unit), for a kernel on the
    vector cores (``core="aiv"``, the default) or on the Cube cores (``"aic"``: the AI Core's
    own GM rate, ``ddr_rate`` of ``[AICoreMemoryRates]``, unshared, at ``cube_freq``).

    ``overrides`` (a mapping, or a JSON file of one) replaces figures by name: the keys of
    ``pipes`` (``mte2Latency``, ``issue``, ...), vector APIs (``Exp``) or ``freq_mhz``,
    ``mte2Bpc``/``mte3Bpc``; each value a number or ``{"value": n, "source": "..."}``.

    Example:
        >>> costs_for("Ascend310P3").pipes["mte3Bpc"]
        9.0
        >>> costs_for("Ascend910B3", {"Exp": 8}).vector["Exp"]
        8.0
        >>> costs_for("Ascend910B3", core="aic").pipes["mte2Bpc"]
        32.0
    """
    from ..socs import soc_facts

    facts = soc_facts(soc)
    table = _table()
    pipes = {k: float(v["value"]) for k, v in table["pipes"].items()}
    vector = {k: float(v["value"]) for k, v in table["vector"].items()}
    sources = {k: str(v["source"]) for k, v in table["pipes"].items()}
    sources.update({f"vector.{k}": str(v["source"]) for k, v in table["vector"].items()})
    share = 1.0
    where = f"data/socs.json soc_facts[{soc}] (platform_config [{facts['rates_of']}MemoryRates])"
    ai, vec = int(facts["ai_cores"]), int(facts["vector_cores"])
    if facts["rates_of"] == "AICore" and vec > ai > 0:
        share = ai / vec
        where += f" x {ai}/{vec}: {table['shared_gm']['source']}"
    pipes["mte2Bpc"] = float(facts["gm_read_bpc"]) * share
    pipes["mte3Bpc"] = min(float(facts["gm_write_bpc"]), float(facts["ub_to_gm_bpc"])) * share
    sources["mte2Bpc"] = f"ddr_read_rate of {where}"
    sources["mte3Bpc"] = f"the lower of ddr_write_rate and ub_to_ddr_rate of {where}"
    gm_bw, sources["gm_bytes_per_s"] = _gm_bandwidth(soc, facts, table)
    rates = f"data/socs.json soc_facts[{soc}] (platform_config [AICoreMemoryRates])"
    pipes["mte1aBpc"] = float(facts["l1_to_l0a_bpc"])
    pipes["mte1bBpc"] = float(facts["l1_to_l0b_bpc"])
    pipes["fixBpc"] = float(facts["gm_write_bpc"])
    sources["mte1aBpc"] = f"l1_to_l0_a_rate of {rates}"
    sources["mte1bBpc"] = f"l1_to_l0_b_rate of {rates}"
    sources["fixBpc"] = (f"ddr_write_rate of data/socs.json soc_facts[{soc}] "
                         f"([{facts['rates_of']}MemoryRates]), unshared: a Cube core's Fixpipe")
    freq = float(facts["freq_mhz"])
    sources["freq_mhz"] = (f"data/socs.json soc_facts[{soc}] "
                           f"({'vec_freq' if facts['rates_of'] == 'VectorCore' else 'cube_freq'})")
    if core == "aic":
        aic = f"ddr_rate of data/socs.json soc_facts[{soc}] (platform_config [AICoreMemoryRates])"
        for key in ("mte2Bpc", "mte3Bpc", "fixBpc"):
            pipes[key], sources[key] = float(facts["ddr_rate_bpc"]), f"{aic}, one Cube core's"
        freq = float(facts["cube_freq_mhz"])
        sources["freq_mhz"] = f"data/socs.json soc_facts[{soc}] (cube_freq)"
    elif core != "aiv":
        raise OpsdkError(f"estimate costs: core {core!r}; use 'aiv' (vector cores) or 'aic' "
                         "(Cube cores)")
    for key, value in _overrides(overrides).items():
        number, source = _override_value(key, value)
        if key == "freq_mhz":
            freq = number
        elif key in pipes:
            pipes[key] = number
        else:
            vector[key] = number
            key = f"vector.{key}"
        sources[key] = source
    return Costs(soc, freq, pipes, vector, sources, gm_bw)


def _gm_bandwidth(soc: str, facts: Mapping[str, Any],
                  table: Mapping[str, Any]) -> tuple[float, str]:
    """The chip's GM bandwidth in bytes per second, and its source."""
    from ..socs import compute_unit

    known = table["gm_bandwidth"].get(compute_unit(soc))
    if known:
        return float(known["value"]), str(known["source"])
    ports = int(facts["ai_cores"]) * float(facts["ddr_rate_bpc"]) * float(facts["cube_freq_mhz"])
    return ports * 1e6, (f"ai_core_cnt x ddr_rate x cube_freq of data/socs.json soc_facts[{soc}] "
                         "(platform_config [AICoreSpec], [AICoreMemoryRates]): the AI Cores' GM "
                         "ports together")


def _overrides(overrides: Mapping[str, Any] | str | Path | None) -> dict[str, Any]:
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        return dict(overrides)
    path = Path(overrides)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise OpsdkError(f"estimate costs {path}: cannot read a JSON object ({e}); write e.g. "
                         '{"Exp": 6, "mte2Latency": {"value": 300, "source": "msprof op"}}') from e
    if not isinstance(data, dict):
        raise OpsdkError(f"estimate costs {path}: expected a JSON object of name -> cycles, "
                         f"got {type(data).__name__}")
    return data


def _override_value(key: str, value: Any) -> tuple[float, str]:
    source = "given by the user"
    if isinstance(value, Mapping):
        source = str(value.get("source", source))
        value = value.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value >= 0):
        raise OpsdkError(f"estimate cost {key!r}: expected a number >= 0, got {value!r}")
    if key in ("freq_mhz", "mte2Bpc", "mte3Bpc", "repeatBytes") and value == 0:
        raise OpsdkError(f"estimate cost {key!r}: must be > 0 (it divides)")
    if not key.isidentifier():
        raise OpsdkError(f"estimate cost {key!r}: not a cost name (pipes: "
                         f"{', '.join(_table()['pipes'])}; or a vector API such as Exp)")
    return float(value), source


def reference_problem(spec: Any, inputs: list[Any], attrs: Mapping[str, Any],
                      outputs: list[np.ndarray]) -> str:
    """Why the kernel's ``outputs`` are wrong (the first output failing the operator's
    standard against the NumPy reference), or "" when every output passes: no estimate of
    a wrong kernel is reported.

    Example:
        >>> reference_problem(spec, [x], {}, est.outputs)  # doctest: +SKIP
        ''
    """
    from ...dtypes import dtype_name
    from ...testing import compare, reference_outputs, standard_for

    expected = reference_outputs(spec, inputs, spec.resolve_attrs(dict(attrs)))
    for out, got, want in zip(spec.outputs, outputs, expected, strict=False):
        std = standard_for(dtype_name(got.dtype), spec.standard)
        verdict = compare(got, np.asarray(want).astype(got.dtype), std, output=out.name,
                          keep_arrays=False, rounding=False)  # an AI Core kernel
        if not verdict.passed:
            return f"output {out.name!r} fails {std.name} against the reference: " \
                   f"{verdict.summary()}"
    return ""


@dataclass(frozen=True)
class TraceInstr:
    """One instruction of a block's trace: pipe, start and end (cycles), GM and widest UB
    operand bytes, the row it waited for (-1: none), its API and where it was called."""

    pipe: str
    start: float
    end: float
    gm: int
    ub: int
    pred: int
    api: str
    where: str


def read_trace(path: Path) -> list[list[TraceInstr]]:
    """The per-block instruction lists the model wrote (``#block k`` then one row each).

    Example:
        >>> read_trace(Path("trace.csv"))[0][0].pipe  # doctest: +SKIP
        'MTE2'
    """
    blocks: list[list[TraceInstr]] = []
    for line in path.read_text().splitlines():
        if line.startswith("#block"):
            blocks.append([])
        elif line:
            pipe, start, end, gm, ub, pred, api, where = line.split(",", 7)
            blocks[-1].append(TraceInstr(pipe, float(start), float(end), int(gm), int(ub),
                                         int(pred), api, where.strip()))
    return blocks


def _span(block: list[TraceInstr]) -> float:
    return max((i.end for i in block), default=0.0)


def _critical(block: list[TraceInstr]) -> list[int]:
    """Rows of the block's critical path, first to last: back from the instruction that ends
    last along what each one waited for."""
    if not block:
        return []
    row = max(range(len(block)), key=lambda k: (block[k].end, k))
    path = []
    seen: set[int] = set()
    while row >= 0 and row not in seen:
        seen.add(row)
        path.append(row)
        row = block[row].pred
    return path[::-1]


@dataclass
class Estimate:
    """The estimated time of one kernel launch on a SoC, from opsdk's model (never an NPU
    time): ``cycles``/``microseconds`` of the kernel, each pipe's busy cycles and
    utilisation on the busiest core, the critical path's cycles per pipe and the ``bound``.

    Example:
        >>> est = AscendcModel("operators/gelu").estimate([x])  # doctest: +SKIP
        >>> est.bound, round(est.microseconds, 1)  # doctest: +SKIP
        ('vector-bound', 12.5)
    """

    op: str
    soc: str
    costs: Costs
    blocks: list[list[TraceInstr]]
    block_dim: int
    cores: int
    outputs: list[np.ndarray] = field(default_factory=list, repr=False)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    LABEL: ClassVar[str] = "estimate from opsdk's Ascend C model (not an NPU time)"

    @property
    def pipes(self) -> tuple[str, ...]:
        """The vector side's pipes, and the Cube's where the kernel uses them."""
        used = {i.pipe for block in self.blocks for i in block}
        return PIPES + tuple(p for p in CUBE_PIPES if p in used)

    @property
    def core_blocks(self) -> list[list[int]]:
        """Blocks per core: block i runs on core i % cores, one after another."""
        per: list[list[int]] = [[] for _ in range(min(self.cores, max(1, len(self.blocks))))]
        for b in range(len(self.blocks)):
            per[b % len(per)].append(b)
        return per

    @property
    def busiest_core(self) -> int:
        spans = [sum(_span(self.blocks[b]) for b in bs) for bs in self.core_blocks]
        return int(np.argmax(spans)) if spans else 0

    @property
    def core_cycles(self) -> float:
        """The busiest core's blocks back to back, each core with its own GM rates."""
        if not self.blocks:
            return 0.0
        return sum(_span(self.blocks[b]) for b in self.core_blocks[self.busiest_core])

    @property
    def gm_bytes(self) -> int:
        """GM bytes every block read and wrote."""
        return sum(i.gm for block in self.blocks for i in block)

    @property
    def gm_cycles(self) -> float:
        """The cycles the kernel's GM bytes take at the chip's shared GM bandwidth."""
        return self.gm_bytes / self.costs.gm_bytes_per_s * self.costs.freq_mhz * 1e6

    @property
    def cycles(self) -> float:
        """The kernel's estimated cycles: the busiest core's, or the GM traffic's at the chip's
        GM bandwidth when that is longer (all cores share it)."""
        return max(self.core_cycles, self.gm_cycles)

    @property
    def microseconds(self) -> float:
        return self.cycles / self.costs.freq_mhz

    def busy(self) -> dict[str, float]:
        """Cycles each pipe is busy on the busiest core."""
        out = dict.fromkeys(self.pipes, 0.0)
        for b in self.core_blocks[self.busiest_core] if self.blocks else []:
            for i in self.blocks[b]:
                out[i.pipe] = out.get(i.pipe, 0.0) + (i.end - i.start)
        return out

    def utilisation(self) -> dict[str, float]:
        """Busy share of the kernel's time, per pipe (0..1)."""
        total = self.cycles
        return {p: (c / total if total else 0.0) for p, c in self.busy().items()}

    def critical_path(self) -> dict[str, float]:
        """Cycles per pipe on the critical paths of the busiest core's blocks; ``issue``
        holds the rest (the scalar unit issuing, waits that cost no pipe time)."""
        out = dict.fromkeys((*self.pipes, "issue"), 0.0)
        for b in self.core_blocks[self.busiest_core] if self.blocks else []:
            block = self.blocks[b]
            on_path = 0.0
            for r in _critical(block):
                out[block[r].pipe] += block[r].end - block[r].start
                on_path += block[r].end - block[r].start
            out["issue"] += max(0.0, _span(block) - on_path)
        return out

    @property
    def bound(self) -> str:
        """``MTE2-bound``, ``vector-bound``, ``MTE3-bound`` or ``scalar-bound``: the pipe with
        the most cycles on the critical path (issuing counts as scalar)."""
        if self.gm_cycles > self.core_cycles:
            return GM_BOUND
        path = self.critical_path()
        path["S"] += path.pop("issue")
        pipes = self.pipes
        return _BOUND[max(pipes, key=lambda p: (path[p], -pipes.index(p)))]

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready values (``--json``)."""
        return {
            "op": self.op, "soc": self.soc, "label": self.LABEL,
            "shapes": {k: list(v) for k, v in self.shapes.items()},
            "cycles": self.cycles, "microseconds": self.microseconds,
            "core_cycles": self.core_cycles, "gm_bytes": self.gm_bytes,
            "block_dim": self.block_dim, "cores": self.cores,
            "bound": self.bound, "busy_cycles": self.busy(),
            "utilisation": self.utilisation(), "critical_path_cycles": self.critical_path(),
            "instructions": sum(len(b) for b in self.blocks),
            "costs": self.costs.as_dict(),
        }

    def chrome_trace(self, max_blocks: int | None = None) -> dict[str, Any]:
        """The pipes as a Chrome/Perfetto trace (``chrome://tracing``, ui.perfetto.dev): one
        process per core, one thread per pipe, times in microseconds of the estimate."""
        events: list[dict[str, Any]] = []
        freq = self.costs.freq_mhz
        for core, bs in enumerate(self.core_blocks if self.blocks else []):
            events.append({"name": "process_name", "ph": "M", "pid": core,
                           "args": {"name": f"core {core} (estimate, not an NPU trace)"}})
            for t, p in enumerate(self.pipes):
                events.append({"name": "thread_name", "ph": "M", "pid": core, "tid": t,
                               "args": {"name": p}})
            offset = 0.0
            for b in bs[:max_blocks]:
                for i in self.blocks[b]:
                    if i.end <= i.start:
                        continue
                    events.append({
                        "name": i.api, "ph": "X", "pid": core, "tid": self.pipes.index(i.pipe),
                        "ts": (offset + i.start) / freq, "dur": (i.end - i.start) / freq,
                        "args": {"block": b, "gm_bytes": i.gm, "ub_bytes": i.ub,
                                 "where": i.where},
                    })
                offset += _span(self.blocks[b])
        return {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"label": self.LABEL, "op": self.op, "soc": self.soc}}

    def swimlane(self, path: str | Path, max_cycles: float | None = None) -> Path:
        """Write a PNG of the busiest core's pipes over time (needs matplotlib); a symlink at
        ``path`` is replaced, never written through."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise OpsdkError(f"the swimlane picture needs matplotlib ({e}); pip install "
                             "matplotlib, or use the trace JSON (--trace)") from e
        colors = {"MTE2": "#4c72b0", "V": "#dd8452", "MTE3": "#55a868", "S": "#8172b3",
                  "MTE1": "#937860", "M": "#c44e52", "FIX": "#64b5cd"}
        pipes = self.pipes
        fig, ax = plt.subplots(figsize=(11, 2.8))
        offset = 0.0
        for b in self.core_blocks[self.busiest_core] if self.blocks else []:
            for p_i, p in enumerate(pipes):
                bars = [((offset + i.start) / self.costs.freq_mhz,
                         (i.end - i.start) / self.costs.freq_mhz)
                        for i in self.blocks[b] if i.pipe == p and i.end > i.start]
                ax.broken_barh(bars, (len(pipes) - 1 - p_i - 0.4, 0.8), color=colors[p])
            offset += _span(self.blocks[b])
        ax.set_yticks(range(len(pipes)), list(reversed(pipes)))
        ax.set_xlabel("microseconds (estimate)")
        if max_cycles is not None:
            ax.set_xlim(0, max_cycles / self.costs.freq_mhz)
        ax.set_title(f"{self.op} on {self.soc}, core {self.busiest_core}: {self.bound}, "
                     f"{self.microseconds:.1f} us — {self.LABEL}", fontsize=9)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        out = Path(path)
        return write_file(out.parent, out.name, buf.getvalue())

    def format(self) -> str:
        """A short table of the figures for people."""
        busy, util, path = self.busy(), self.utilisation(), self.critical_path()
        lines = [f"{self.op} on {self.soc}: {self.microseconds:.2f} us "
                 f"({self.cycles:.0f} cycles at {self.costs.freq_mhz:.0f} MHz), "
                 f"{self.bound}; blockDim {self.block_dim} on {self.cores} cores",
                 f"  {self.LABEL}",
                 "  pipe   busy cycles   utilisation   on critical path"]
        for p in self.pipes:
            lines.append(f"  {p:<5}{busy[p]:>13.0f}{util[p]:>13.0%}{path[p]:>18.0f}")
        lines.append(f"  issue{'':>13}{'':>13}{path['issue']:>18.0f}")
        return "\n".join(lines)
