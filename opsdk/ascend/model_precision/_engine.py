"""Run a model as ATC would lower it and compare its outputs with the float32 model's.

One ONNX Runtime session of the switchboard model (:func:`._graph.switchboard`) runs every
configuration: the mode's whole lowering, each node lowered alone (the attribution) and the
bisector's candidates. Sessions are single-threaded and run without graph fusions, so the
same inputs give the same bits, in the switchboard and in the plain lowered model alike.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import onnx

from ...onnx import node_label
from ...testing import Cosine, Standard, tiny, ulp_distance, ulp_histogram
from ._assign import NodeDtype
from ._graph import flags, switchboard

__all__ = ["OutputResult", "FixResult", "ReportFields", "Attribution", "Runner", "judge_output",
           "Progress", "Stage", "announce_stages"]

Progress = Callable[[str], None]

#: What ONNX Runtime is about to do (``what``) and the node a per-node variant lowers
#: (``node``, else None): :func:`announce_stages` sets it, for a child that must say what
#: ran when ONNX Runtime crashed (:mod:`._child`).
Stage = Callable[[str, "str | None"], None]
_stage: list[Stage] = []


def announce_stages(hook: Stage) -> None:
    """Call ``hook(what, node)`` before each session opens or runs (in this process)."""
    _stage[:] = [hook]


def _announce(what: str, node: str | None = None) -> None:
    for hook in _stage:
        hook(what, node)


def stderr_progress(msg: str) -> None:
    """Progress lines on stderr."""
    print(f"opsdk precision: {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class OutputResult:
    """One model output judged against the float32 model: the verdict and the figures."""

    name: str
    passed: bool
    reason: str
    max_abs: float
    max_rel: float
    cosine: float
    max_ulp: float
    ulp_histogram: dict[str, int] = field(default_factory=dict)
    nonfinite: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (NaN/Inf as strings)."""
        return {k: _json_num(v) for k, v in asdict(self).items()}


@dataclass
class FixResult:
    """What ``--fix`` kept in float32, what it wrote and the re-check of the fixed model."""

    by: str
    kept: list[str]
    kept_nodes: int
    runs: int
    bound: int
    files: dict[str, str]
    after: list[OutputResult] = field(default_factory=list)
    recheck_runs: int = 0

    @property
    def failing_after(self) -> list[str]:
        """Outputs the fixed model still fails."""
        return [r.name for r in self.after if not r.passed]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"by": self.by, "kept": self.kept, "kept_nodes": self.kept_nodes,
                "runs": self.runs, "bound": self.bound, "files": sorted(self.files),
                "after": [r.as_dict() for r in self.after],
                "failing_after": self.failing_after}


@dataclass
class ReportFields:
    """The fields of a model report (``ModelPrecisionReport``, which adds its renderings)."""

    model: str
    mode: str
    soc: str
    standard: str
    low: str
    overflow: str
    folded: list[str]
    inputs: dict[str, list[int]]
    nodes: list[NodeDtype]
    outputs: list[OutputResult]
    attribution: list[Attribution]
    runs: int
    fix: FixResult | None = None

    @property
    def failing(self) -> list[str]:
        """Outputs that fail the standard under the mode."""
        return [r.name for r in self.outputs if not r.passed]


def _json_num(v: Any) -> Any:
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    return v


def judge_output(name: str, actual: np.ndarray, expected: np.ndarray, low: str,
                 standard: Standard) -> OutputResult:
    """The verdict of ``standard`` (under dtype ``low``) and the error figures of one output.

    A non-finite value where the float32 model has a finite one fails whatever the
    standard says (a float16 overflow).

    Example:
        >>> from opsdk.testing import get_standard
        >>> r = judge_output("y", np.float32([1, 2e5]), np.float32([1, 2e5]), "float16",
        ...                  get_standard("cosine"))
        >>> r.passed, r.max_abs
        (True, 0.0)
    """
    a, e = np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1)
    if a.dtype.kind != "f":
        same = bool(np.array_equal(a, e))
        return OutputResult(name, same, "integer output: equal" if same else
                            f"integer output: {int(np.sum(a != e))} elements differ",
                            float(np.max(np.abs(a.astype(np.float64) - e), initial=0)),
                            0.0, 1.0, 0.0)
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    fin = np.isfinite(a64) & np.isfinite(e64)
    bad = int(np.sum(~np.isfinite(a64) & np.isfinite(e64)))
    diff = np.abs(a64[fin] - e64[fin])
    rel = diff / np.maximum(np.abs(e64[fin]), tiny(low))
    cos = Cosine().similarity(np.where(fin, a64, 0), np.where(fin, e64, 0))
    ulp = ulp_distance(a.astype(np.float32), e.astype(np.float32), low)
    v = standard.judge(a, e, low)
    reason = v.reason if bad == 0 else \
        f"{bad} non-finite values where float32 is finite; {v.reason}"
    return OutputResult(name, v.passed and bad == 0, reason, float(diff.max(initial=0)),
                        float(rel.max(initial=0)), cos, float(ulp.max(initial=0)),
                        ulp_histogram(ulp), bad)


@dataclass(frozen=True)
class Attribution:
    """The error one node adds when it alone is lowered (worst over the outputs)."""

    node: str
    index: int
    op_type: str
    cann_type: str
    error: float  # max over outputs of 1 - cosine
    max_rel: float
    failing: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {k: _json_num(v) if not isinstance(v, tuple) else list(v)
                for k, v in asdict(self).items()}

    @property
    def key(self) -> tuple[float, ...]:
        """Sort key: most outputs failing, then the largest error, then graph order."""
        err = self.error if np.isfinite(self.error) else np.inf
        return (-len(self.failing), -err, -self.max_rel, self.index)


class Runner:
    """The switchboard session of one model, its inputs and the float32 outputs.

    ``runs`` counts every evaluation of a configuration.
    """

    def __init__(self, model: onnx.ModelProto, candidates: Sequence[NodeDtype],
                 floats: set[str], feeds: Mapping[str, np.ndarray], low: str,
                 standard: Standard, saturate: bool = False,
                 expected: Sequence[np.ndarray] | None = None) -> None:
        self.candidates = list(candidates)
        self.feeds = dict(feeds)
        self.low, self.standard, self.saturate = low, standard, saturate
        self.output_names = [o.name for o in model.graph.output]
        self.labels = [node_label(model.graph.node[c.index], c.index) for c in self.candidates]
        _announce("opening the model with each lowerable node switchable")
        board = switchboard(model, self.candidates, floats, low, saturate)
        self.switch = board.graph.input[-1].name  # fresh against the model's names
        self.session = _session(board)
        self.expected = list(expected) if expected is not None else \
            self._run(np.zeros(len(self.candidates), bool))
        self.runs = 0

    def _run(self, on: np.ndarray, what: str = "running the float32 configuration",
             node: str | None = None) -> list[np.ndarray]:
        _announce(what, node)
        return list(self.session.run(self.output_names, {**self.feeds, self.switch: on}))

    def evaluate(self, on: np.ndarray, what: str = "running a lowered configuration",
                 node: str | None = None) -> list[OutputResult]:
        """Judge every output with the candidates ``on`` lowered (one run); ``what`` and
        ``node`` say what runs (for a crash report)."""
        self.runs += 1
        got = self._run(on, what, node)
        return [judge_output(n, a, e, self.low, self.standard)
                for n, a, e in zip(self.output_names, got, self.expected, strict=True)]

    def evaluate_assignment(self, assigned: Sequence[NodeDtype],
                            what: str = "running a lowered configuration",
                            ) -> list[OutputResult]:
        """Judge every output under one whole-model assignment."""
        return self.evaluate(flags(self.candidates, assigned), what)

    def attribution(self, progress: Progress | None = None) -> list[Attribution]:
        """Each candidate lowered alone, worst first (one run per candidate)."""
        out = []
        n = len(self.candidates)
        for i, c in enumerate(self.candidates):
            on = np.zeros(n, bool)
            on[i] = True
            res = self.evaluate(on, f"running the model with node {self.labels[i]} alone "
                                f"lowered to {self.low}", self.labels[i])
            errs = [1 - r.cosine if np.isfinite(r.cosine) else np.inf for r in res]
            out.append(Attribution(c.name, c.index, c.op_type, c.cann_type,
                                   float(max(errs, default=0.0)),
                                   float(max((r.max_rel for r in res), default=0.0)),
                                   tuple(r.name for r in res if not r.passed)))
            if progress and (i + 1) % max(1, n // 10) == 0:
                progress(f"attribution {i + 1}/{n} nodes")
        return sorted(out, key=lambda a: a.key)


def run_model(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
              what: str = "running the model") -> list[np.ndarray]:
    """Outputs of ``model`` (a lowered copy, for the re-check) on ``feeds``."""
    names = [o.name for o in model.graph.output]
    _announce(what.replace("running", "opening", 1))
    session = _session(model)
    _announce(what)
    return list(session.run(names, dict(feeds)))


def _session(model: onnx.ModelProto) -> Any:
    """A single-threaded session: ONNX Runtime, or opsdk's Session for custom nodes."""
    import onnxruntime as ort

    custom = any(n.domain not in ("", "ai.onnx") for n in model.graph.node)
    if custom:
        from ...onnx import Session

        return Session(model, threads=1)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    # no fusions: the switchboard's switches would block some that a plain model gets, and
    # the re-check must compute exactly what the search judged
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
