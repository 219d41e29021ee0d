"""``opsdk precision``'s engine: assign, lower, run, compare, attribute, and fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ...errors import SpecError
from ...testing import Standard, get_standard
from ..precision import PrecisionMode
from ._assign import NodeDtype, assign_dtypes, check_names, low_dtype, summary
from ._engine import Attribution, OutputResult, Progress, Runner, judge_output, run_model
from ._fix import (
    HTML_REPORT_FILE,
    KEEP_FILE,
    MIXLIST_FILE,
    REPORT_FILE,
    bisect,
    keep_dtype_text,
    mixlist_text,
    search_bound,
    write_outputs,
)
from ._fusions import fold_conv_batch_norm
from ._graph import float_tensors, lower_model
from ._inputs import make_inputs
from ._lists import OVERFLOW_MODES, op_facts, overflow_mode, soc_unit

__all__ = ["FixResult", "ModelPrecisionReport", "analyze_model", "DEFAULT_STANDARD"]

#: The standard judging model outputs when none is chosen: ops-test-kit's cosine similarity
#: (1 - cos <= 0.01), as model comparison tools judge whole outputs.
DEFAULT_STANDARD = "cosine"


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
class ModelPrecisionReport:
    """The whole-model emulation of one precision setting, per output and per node."""

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

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready report (no timings: the same run gives the same report)."""
        return {
            "generator": "opsdk precision",
            "model": self.model, "precision_mode": self.mode, "soc": self.soc,
            "standard": self.standard, "low_dtype": self.low, "overflow": self.overflow,
            "folded_batch_norms": self.folded, "inputs": self.inputs,
            "counts": dict(summary(self.nodes)),
            "lowered": [d.name for d in self.nodes if d.lowered],
            "nodes": [d.as_dict() for d in self.nodes if d.run != "-"],
            "outputs": [r.as_dict() for r in self.outputs], "failing": self.failing,
            "attribution": [a.as_dict() for a in self.attribution],
            "runs": self.runs, "fix": self.fix.as_dict() if self.fix else None,
        }

    def to_html(self) -> str:
        """The report as a self-contained page (``precision_report.html``): the outputs
        worst first, a pass matrix of op type x output and the per-node error bar chart."""
        from ._html import report_html

        return report_html(self)

    def text(self, top: int = 10) -> str:
        """The report for a person."""
        c = summary(self.nodes)
        lines = [f"{self.model} under {self.mode} ({self.soc}): {c.get('low', 0)} nodes in "
                 f"{self.low}, {c.get('low-in', 0)} with {self.low} inputs, "
                 f"{c.get('float32', 0)} in float32; overflow {self.overflow}; standard "
                 f"{self.standard}"]
        if self.folded:
            lines.append(f"  ATC's Conv+BatchNorm fusion first: {len(self.folded)} "
                         "BatchNormalization nodes folded into their Conv")
        for r in self.outputs:
            lines.append(f"  output {r.name}: {'PASS' if r.passed else 'FAIL'}  max abs "
                         f"{r.max_abs:.4g}  max rel {r.max_rel:.4g}  cosine {r.cosine:.6f}  "
                         f"max ulp({self.low}) {r.max_ulp:g}  ({r.reason})")
        if self.attribution:
            lines.append(f"  error added by each node lowered alone (top {top} of "
                         f"{len(self.attribution)}):")
            for a in self.attribution[:top]:
                fails = f"  fails {', '.join(a.failing)}" if a.failing else ""
                lines.append(f"    {a.node or '#' + str(a.index)} ({a.op_type} -> {a.cann_type}): "
                             f"1-cos {a.error:.3g}  max rel {a.max_rel:.3g}{fails}")
        if self.fix:
            f = self.fix
            what = (f"keep {len(f.kept)} {f.by}(s) in float32 ({f.kept_nodes} nodes): "
                    f"{', '.join(f.kept)}" if f.kept else "nothing to keep: every output passes")
            lines.append(f"  fix: {what}; {f.runs} runs (bound {f.bound}); re-checked with "
                         f"the written {KEEP_FILE}: {len(f.failing_after)} output(s) failing")
        lines.append(f"  runs: {self.runs}")
        return "\n".join(lines)


def _setting(mode: str, keep_dtype: str | Path | None, modify_mixlist: str | Path | None,
             ) -> PrecisionMode:
    return PrecisionMode.from_atc(mode, keep_dtype, modify_mixlist)


def analyze_model(
    model_path: str | Path, mode: str, *, keep_dtype: str | Path | None = None,
    modify_mixlist: str | Path | None = None, soc: str | None = None,
    input_shape: Mapping[str, tuple[int, ...]] | None = None,
    input_files: Mapping[str, str | Path] | None = None,
    standard: str | Standard = DEFAULT_STANDARD, fix: str | None = None,
    output_dir: str | Path | None = None, force: bool = False, attribute: bool = True,
    overflow: str | None = None, fuse: bool = True, progress: Progress | None = None,
) -> ModelPrecisionReport:
    """Emulate ATC's precision setting on a whole ONNX model and judge its outputs.

    ``fix``: None, ``"node"`` or ``"op-type"``: search what to keep in float32 and write
    the ``--keep_dtype`` and ``--modify_mixlist`` files into ``output_dir``. ``overflow``:
    ``inf-nan`` or ``saturation`` (default: the SoC's, see :func:`overflow_mode`).
    ``fuse``: fold Conv+BatchNormalization pairs first, as ATC does. The outputs are
    judged against the float32 run of the model as given. In-process: a crash of ONNX
    Runtime ends this process; :func:`analyze_model_in_child` (what ``opsdk precision``
    runs) turns it into an error.

    Example:
        >>> r = analyze_model("model.onnx", "force_fp16", input_shape={"x": (1, 3, 64, 64)},
        ...                   fix="node", output_dir="out")  # doctest: +SKIP
        >>> r.failing, r.fix.kept  # doctest: +SKIP
        ([], ['p2o.ReduceSum.0'])
    """
    say = progress or (lambda _m: None)
    path = Path(model_path)
    std = get_standard(standard) if isinstance(standard, str) else standard
    su = setup(path, mode, keep_dtype=keep_dtype, modify_mixlist=modify_mixlist, soc=soc,
               input_shape=input_shape, input_files=input_files, overflow=overflow, fuse=fuse)
    original, model, folded, pm, unit, over = (su.original, su.model, su.folded, su.pm,
                                               su.unit, su.overflow)
    feeds, floats, assigned, low = su.feeds, su.floats, su.assigned, su.low
    candidates = [d for d in _candidates(model, floats, pm, unit) if d.lowered]
    say(f"{path.name}: {len(candidates)} of {len(assigned)} nodes lowerable under {mode}; "
        f"{sum(d.lowered for d in assigned)} lowered")
    runner = Runner(model, candidates, floats, feeds, low, std, over == "saturation",
                    expected=_reference_run(path, original, feeds))
    outputs = runner.evaluate_assignment(assigned, f"running the model lowered under {mode}")
    attribution = runner.attribution(say) if attribute and candidates else []
    report = ModelPrecisionReport(
        str(path.name), mode, unit, getattr(std, "name", str(standard)), low, over, folded,
        {k: list(v.shape) for k, v in feeds.items()}, assigned, outputs, attribution, 0)
    if fix:
        report.fix = _fix(model, pm, unit, floats, feeds, runner, attribution, fix,
                          Path(output_dir) if output_dir else None, force, say)
    report.runs = runner.runs + (report.fix.recheck_runs if report.fix else 0)
    if output_dir:
        import json

        files = {REPORT_FILE: json.dumps(report.as_dict(), indent=2, sort_keys=False) + "\n",
                 HTML_REPORT_FILE: report.to_html()}
        write_outputs(Path(output_dir), files, force)
    return report


@dataclass
class Setup:
    """One analysis before ONNX Runtime runs: the model as given (``original``) and as ATC
    fuses it (``model``), the setting, the inputs and each node's dtype."""

    original: onnx.ModelProto
    model: onnx.ModelProto
    folded: list[str]
    pm: PrecisionMode
    unit: str
    overflow: str
    feeds: dict[str, np.ndarray]
    floats: set[str]
    assigned: list[NodeDtype]
    low: str

    def lowered(self) -> onnx.ModelProto:
        """The model lowered under the whole setting (plain Cast pairs)."""
        return lower_model(self.model, self.assigned, self.floats, self.low,
                           self.overflow == "saturation")


def setup(path: Path, mode: str, *, keep_dtype: str | Path | None = None,
          modify_mixlist: str | Path | None = None, soc: str | None = None,
          input_shape: Mapping[str, tuple[int, ...]] | None = None,
          input_files: Mapping[str, str | Path] | None = None, overflow: str | None = None,
          fuse: bool = True) -> Setup:
    """The :class:`Setup` of :func:`analyze_model`'s arguments (no ONNX Runtime involved)."""
    original = _open(path)
    model, folded = fold_conv_batch_norm(original) if fuse else (original, [])
    pm = _setting(mode, keep_dtype, modify_mixlist)
    check_names(model.graph.node, pm, str(path))
    unit = soc_unit(soc)
    over = overflow or overflow_mode(unit)
    if over not in OVERFLOW_MODES:
        raise SpecError(f"--overflow {over!r}: expected one of {', '.join(OVERFLOW_MODES)}")
    if modify_mixlist and not pm.behaves_as.startswith("allow_mix_precision"):
        raise SpecError(f"--modify-mixlist applies to the mixed-precision modes "
                        f"(allow_mix_precision*, mixed_float16, mixed_bfloat16), not {mode}")
    feeds = make_inputs(model, input_shape, input_files)
    floats = float_tensors(model, shapes_given=bool(input_shape))
    return Setup(original, model, folded, pm, unit, over, dict(feeds), floats,
                 assign_dtypes(model.graph.node, floats, pm, unit), low_dtype(pm))


def _open(path: Path) -> onnx.ModelProto:
    """The model, refused naming it when unreadable or no valid graph (ONNX Runtime's own
    messages for those name neither the model nor the fix)."""
    from ...onnx._model import ModelError, load_model
    from ..atc.doctor import structure_errors

    model = load_model(path)
    problems = structure_errors(model)
    if problems:
        raise ModelError(f"{path}: {problems[0].message}"
                         + (f" (and {len(problems) - 1} more: opsdk doctor {path} lists them)"
                            if len(problems) > 1 else ""))
    return model


def _reference_run(path: Path, model: onnx.ModelProto,
                   feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The float32 run every assignment is judged against; ONNX Runtime refusing the model
    is an error naming it (an opset or op it lacks, an input of another dtype)."""
    import onnxruntime as ort

    from ...onnx._model import ModelError

    try:
        return run_model(model, feeds, "running the float32 model")
    except Exception as e:
        if not type(e).__module__.startswith("onnxruntime"):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelError(f"{path}: ONNX Runtime {ort.__version__} cannot run the model as "
                         f"given ({first}); the emulation needs the float32 model to run: "
                         f"check it with opsdk doctor {path}") from None


def _candidates(model: onnx.ModelProto, floats: set[str], pm: PrecisionMode,
                unit: str) -> list[NodeDtype]:
    """Nodes the mode can lower: its lowering without keep lists; under the mixed modes
    every op not on the black list (a gray op lowers whenever its upstream does)."""
    plain = replace(pm, keep_dtype=frozenset(), keep_nodes=frozenset())
    if pm.behaves_as.startswith("allow_mix_precision"):
        facts = [op_facts(n.op_type, unit) for n in model.graph.node]
        white = {f.cann_type for f in facts
                 if pm.mixlist(f.cann_type) == "white" or
                 (pm.mixlist(f.cann_type) == "gray" and f.mixlist != "black")}
        plain = replace(plain, white=frozenset(white))
    return assign_dtypes(model.graph.node, floats, plain, unit)


def _fix(model: onnx.ModelProto, pm: PrecisionMode, unit: str, floats: set[str],
         feeds: Mapping[str, np.ndarray], runner: Runner, attribution: Sequence[Attribution],
         by: str, out: Path | None, force: bool, say: Progress) -> FixResult:
    if by not in ("node", "op-type"):
        raise SpecError(f"--fix-by {by!r}: expected node or op-type")
    if out is None:
        raise SpecError("--fix writes the --keep_dtype and --modify_mixlist files: add -o DIR")
    nodes = model.graph.node
    named = {a.index: a.node for a in attribution}
    if by == "node":
        nameless = [a.index for a in attribution if not a.node]
        if nameless:
            raise SpecError(f"--fix-by node: node(s) #{nameless[0]} have no name, which "
                            "--keep_dtype cannot list; use --fix-by op-type")
        units = [a.node for a in attribution]
    else:
        units = list(dict.fromkeys(a.cann_type for a in attribution))

    def setting(keep: frozenset[str]) -> PrecisionMode:
        if by == "node":
            return replace(pm, keep_nodes=pm.keep_nodes | keep)
        return replace(pm, keep_dtype=pm.keep_dtype | keep)

    def passes(keep: frozenset[str]) -> bool:
        res = runner.evaluate_assignment(assign_dtypes(nodes, floats, setting(keep), unit),
                                         "running a keep set the --fix search tries")
        return all(r.passed for r in res)

    start = runner.runs
    bound = search_bound(len(units))
    say(f"fix: searching {len(units)} {by}s, at most {bound} runs")
    kept = bisect(units, passes)
    if kept is None:
        raise SpecError("--fix: even with every lowered node kept in float32 an output fails "
                        "the standard; the model's own float32 run differs (check the inputs)")
    runs = runner.runs - start
    say(f"fix: keep {len(kept)} {by}(s) in float32 after {runs} runs")
    order = {n: i for i, n in named.items()}
    if by == "node":
        kept = sorted(kept, key=lambda n: order.get(n, 0))
        text = keep_dtype_text(kept)
        types = [a.cann_type for a in attribution if a.node in kept]
    else:
        text = keep_dtype_text([], sorted(kept))
        types = list(kept)
    files = {KEEP_FILE: text, MIXLIST_FILE: mixlist_text(types) + "\n"}
    write_outputs(out, files, force)
    fixed = setting(frozenset(kept))
    kept_nodes = sum(1 for d, b in zip(assign_dtypes(nodes, floats, fixed, unit),
                                       assign_dtypes(nodes, floats, pm, unit), strict=True)
                     if b.lowered and not d.lowered)
    after = recheck(model, pm.mode, out / KEEP_FILE, unit, floats, feeds, runner)
    return FixResult(by, kept, kept_nodes, runs, bound, files, after, 1)


def recheck(model: onnx.ModelProto, mode: str, keep_file: Path, unit: str, floats: set[str],
            feeds: Mapping[str, np.ndarray], runner: Runner) -> list[OutputResult]:
    """Run the model lowered under ``mode`` with the written ``--keep_dtype`` file read back
    (a static model with plain Cast pairs, not the switchboard) and judge its outputs."""
    pm = PrecisionMode.from_atc(mode, keep_file)
    assigned = assign_dtypes(model.graph.node, floats, pm, unit)
    got = run_model(lower_model(model, assigned, floats, low_dtype(pm), runner.saturate), feeds,
                    f"running the model lowered with the written {KEEP_FILE}")
    return [judge_output(n, a, e, runner.low, runner.standard)
            for n, a, e in zip(runner.output_names, got, runner.expected, strict=True)]
