"""``opsdk doctor``: what ATC's ONNX parser will reject or mis-handle in a model.

Each :class:`Finding` names the node, the reason and a fix that points to a shipped
operator (``opsdk rewrite --replace``), a new one (``opsdk new --like onnx:<Op>``) or an
``opsdk rewrite``. The tables of what ATC accepts live in ``_ascend_data.py``.

Example:
    >>> from opsdk.ascend.atc.doctor import diagnose
    >>> for f in diagnose("model.onnx", target="ascend"):  # doctest: +SKIP
    ...     print(f.node, f.reason, f.fix)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

import onnx
from onnx import ModelProto, NodeProto

from ...errors import SpecError
from ...onnx._constants import dim_form, input_dims
from ...onnx._model import (
    attribute_value,
    is_standard_domain,
    iter_all_nodes,
    iter_nested_nodes,
    load_model,
    node_label,
    opset_version,
    tensor_data_problem,
)
from ...onnx._probe import runnable_shapes
from ...onnx._structure import scan_structure
from ...spec import OpSpec
from ..parser import RESIZE_MODES, RESIZE_SAFE_MODES, TARGETS, TargetProfile, profile_for
from ..versions import CannVersion, parse_cann_version, resolve_cann

__all__ = ["Finding", "diagnose", "TARGETS", "format_findings", "rules_for", "blocking_findings",
           "structure_errors"]


@dataclass(frozen=True)
class Finding:
    """One problem ATC will have with the model.

    Attributes:
        code: a stable identifier (``unsupported-op``, ``opset-range``, ...).
        severity: ``error`` (ATC rejects it) or ``warning`` (ATC computes something else).
        node: the node's label, or None for model-wide findings.
        op: the operator involved, if any.
        reason: what goes wrong.
        fix: what to do about it.
    """

    code: str
    severity: str
    node: str | None
    op: str | None
    reason: str
    fix: str

    @property
    def message(self) -> str:
        """One line: where, what, and the fix."""
        return f"{self.node or 'model'}: {self.reason} -- fix: {self.fix}"

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return asdict(self)


def diagnose(
    model: Any,
    target: str | None = None,
    *,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    extra: Iterable[OpSpec] = (),
    cann: str | None = None,
    python: str | None = None,
    ort: bool = True,
) -> list[Finding]:
    """Everything ATC's ONNX parser will reject or mis-handle in ``model``.

    Args:
        model: a path, bytes or ModelProto.
        target: a key of :data:`TARGETS` (``ascend``: CANN 5-7; ``ascend-cann8``); default:
            the rules of ``cann`` (see :func:`rules_for`).
        input_shapes: shapes (or shape bounds) you will give ATC, by input name; inputs
            listed here are not reported as dynamic.
        extra: specs of operators not on the registry's search path.
        cann: the CANN release whose ONNX parser converts the model: its opset range and
            operator table, and whether a default-domain node next to a custom domain
            blocks (E16005). Default: the target's release, else the installed toolkit's,
            else :data:`~opsdk.ascend.versions.DEFAULT_CANN`.
        python: the interpreter whose ONNX Runtime opens the model (in a child process)
            and runs it once: on inputs of the model's shapes, or on example shapes of
            dynamic inputs; default: this one. A crash of that ONNX Runtime, opening or
            running, is an ``onnxruntime-crash`` finding naming the model, the version and,
            where it can be isolated, the node and its fix.
        ort: False skips that run (and with it the crash finding and the example shapes
            ONNX Runtime runs): for callers that keep only the errors.

    Raises:
        ModelError: the model cannot be read.

    Example:
        >>> [f.code for f in diagnose("grid_sample16.onnx")]  # doctest: +SKIP
        ['opset-range', 'unsupported-op']
    """
    profile, version = rules_for(target, cann)
    m = load_model(model)
    from ...onnx._schema import known_specs

    specs = known_specs(extra)
    _check_input_shapes(m, input_shapes or {})
    findings = _invalid_model(m) + _opset_findings(m, profile)
    findings += _mixed_domain_findings(m, version)
    label = str(model) if isinstance(model, (str, os.PathLike)) else "the model"
    findings += _ort_findings(m, dict(input_shapes or {}), label, python, ort)
    for idx, node in enumerate(m.graph.node):
        findings += _node_findings(m, node, idx, profile, specs)
    for node in iter_nested_nodes(m.graph):  # inside If/Loop/Scan bodies
        findings += _node_findings(m, node, None, profile, specs)
    return findings + _builtin_findings(m, specs)


def _builtin_findings(m: ModelProto, specs: Mapping[tuple[str, str], OpSpec]) -> list[Finding]:
    """A warning per custom op type that is also the type of a CANN built-in operator."""
    from .._op import builtin_clash_parts

    out = []
    used: dict[tuple[str, str], str] = {}  # op -> the first node of it
    for idx, n in enumerate(m.graph.node):
        if not is_standard_domain(n.domain):
            used.setdefault((n.domain, n.op_type), node_label(n, idx))
    for (domain, op_type), label in used.items():
        parts = builtin_clash_parts(op_type, spec=specs.get((domain, op_type)))
        if parts is not None:
            out.append(Finding("builtin-clash", "warning", label, f"{domain}::{op_type}",
                               *parts))
    return out


def rules_for(target: str | None = None, cann: str | None = None) -> tuple[TargetProfile,
                                                                          CannVersion]:
    """The parser rules and CANN release a check applies: one rule set per CANN version.

    ``cann`` alone picks its release's rules (CANN 8.1's opset range for ``8.1.RC1``);
    ``target`` alone its profile's release; both must agree; neither reads the installed
    toolkit (``auto``), else the default release. ``opsdk doctor``, ``opsdk atc`` and
    ``opsdk triton build/check --target ascend`` all resolve their rules here.

    Raises:
        SpecError: an unknown target, or a target whose rules are not the release's.

    Example:
        >>> profile, version = rules_for(cann="8.1.RC1")
        >>> profile.name, profile.opset_max, str(version)
        ('ascend-cann8', 18, '8.1.RC1')
        >>> rules_for("ascend")[0].opset_max
        15
    """
    if target is not None and target not in TARGETS:
        raise SpecError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")
    if cann is None or cann == "auto":
        if target is not None:
            return TARGETS[target], parse_cann_version(TARGETS[target].cann)
        version = resolve_cann("auto").version
    else:
        version = parse_cann_version(cann)
    implied = profile_for(version)
    if target is not None and target != implied.name:
        raise SpecError(
            f"--target {target} applies {TARGETS[target].description}, but --cann {version} "
            f"reads the rules of target {implied.name}; give --cann alone (or --target "
            f"{implied.name})"
        )
    return implied, version


def blocking_findings(
    model: Any,
    cann: CannVersion | str | None = None,
    *,
    extra: Iterable[OpSpec] = (),
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> list[Finding]:
    """The findings of :func:`diagnose` that make ATC fail (severity ``error``), with the
    rules of ``cann``: what ``opsdk atc`` and ``opsdk triton build/check --target ascend``
    refuse, so a model they pass passes the doctor for the same release.

    Example:
        >>> [f.code for f in blocking_findings("opset20.onnx", "8.1.RC1")]  # doctest: +SKIP
        ['opset-range']
    """
    found = diagnose(model, cann=None if cann is None else str(cann), extra=extra,
                     input_shapes=input_shapes, ort=False)  # its findings are warnings
    return [f for f in found if f.severity == "error"]


# ------------------------------------------------------------------ model level
def structure_errors(m: ModelProto) -> list[Finding]:
    """What makes ``m`` no valid ONNX model whatever the target (a broken graph, a repeated
    name, a custom domain it does not import), for commands that run the model themselves.

    Example:
        >>> import onnx.helper as h
        >>> m = h.make_model(h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [], []))
        >>> [f.reason for f in structure_errors(m)]
        ['the graph has no output', "input 'x' is never defined"]
    """
    return _invalid_model(m) + _import_findings(m)


def _invalid_model(m: ModelProto) -> list[Finding]:
    """What ONNX's checker rejects in the graph's structure: no opset import at all, a
    value defined twice, a value used but never defined, nodes out of order or in a cycle."""
    out = []
    fix = "repair the graph (ONNX's checker and ATC's parser reject it)"
    if not m.opset_import:
        out.append(Finding("invalid-model", "error", None, None,
                           "the model imports no opset", fix + ", e.g. "
                           "model.opset_import.append(onnx.helper.make_opsetid('', 15))"))
    out += _invalid_interface(m, fix)
    reasons = {
        "dangling": ("input {!r} is never defined", fix),
        "out-of-order": ("input {!r} is used before the node that defines it (nodes out of "
                         "order, or a cycle)", fix),
        "made-twice": ("output {!r} is defined twice (ONNX graphs are SSA)",
                       fix + ": give each value one producer"),
        "output-unmade": ("graph output {!r} is never defined", fix),
    }
    for p in scan_structure(m, ordered=True):  # the domains: _import_findings (nested too)
        if p.kind not in reasons:
            continue
        reason, how = reasons[p.kind]
        node = None if p.node is None else m.graph.node[p.node]
        out.append(Finding("invalid-model", "error",
                           None if node is None else node_label(node, p.node),
                           None if node is None else node.op_type, reason.format(p.value), how))
    for t in m.graph.initializer:
        problem = tensor_data_problem(t)
        if problem:
            out.append(Finding("invalid-model", "error", None, None, problem,
                               fix + ": re-export the model, or store the values "
                               "(onnx.numpy_helper.from_array)"))
    return out


def _check_input_shapes(m: ModelProto, shapes: Mapping[str, Sequence[Any]]) -> None:
    """Each ``--input-shape`` names an input, has its rank and agrees with its fixed dims."""
    inits = {t.name for t in m.graph.initializer}
    inputs = {vi.name: vi for vi in m.graph.input if vi.name not in inits}
    for name, dims in shapes.items():
        given = f"--input-shape {name}={','.join(map(str, dims))}"
        if name not in inputs:
            raise SpecError(
                f"--input-shape {name}=...: the model has no input {name!r}; its inputs are "
                f"{', '.join(inputs) or 'none'}"
            )
        if not all(isinstance(d, int) and d >= 0 for d in dims):
            raise SpecError(
                f"{given}: ATC needs integer dims "
                f"(e.g. --input-shape {name}={','.join('1' for _ in dims)})"
            )
        _check_against_model(given, name, list(dims), inputs[name])


def _check_against_model(given: str, name: str, dims: list[int],
                         vi: onnx.ValueInfoProto) -> None:
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return
    model = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or "?")
             for d in t.shape.dim]  # 0 or negative (as paddle2onnx and others write) is dynamic
    shown = f"[{','.join(map(str, model))}]"
    example = ",".join(str(d) if isinstance(d, int) else "1" for d in model)
    if len(dims) != len(model):
        raise SpecError(
            f"{given}: input {name!r} has {len(model)} dims {shown} in the model, the shape "
            f"gives {len(dims)}; give one size per dim, e.g. --input-shape {name}={example}"
        )
    for axis, (want, got) in enumerate(zip(model, dims, strict=True)):
        if isinstance(want, int) and want != got:
            raise SpecError(
                f"{given}: input {name!r} dim {axis} is fixed to {want} in the model "
                f"{shown}, the shape gives {got}; e.g. --input-shape {name}={example}"
            )


def _opset_findings(m: ModelProto, profile: TargetProfile) -> list[Finding]:
    out: list[Finding] = []
    # '' and 'ai.onnx' may both be imported (a model written for ATC and ONNX Runtime): the
    # parser keys ai.onnx nodes by the latter's version, ONNX Runtime the functions by ''
    versions = sorted({imp.version for imp in m.opset_import if imp.domain in ("", "ai.onnx")})
    for version in versions:
        if not profile.opset_min <= version <= profile.opset_max:
            to = min(max(version, profile.opset_min), profile.opset_max)
            out.append(
                Finding(
                    "opset-range",
                    "error",
                    None,
                    None,
                    f"the model imports ai.onnx opset {version}; {profile.description} "
                    f"accepts {profile.opset_min}-{profile.opset_max}",
                    _opset_fix(m, version, to),
                )
            )
    return out + _import_findings(m)


def _import_findings(m: ModelProto) -> list[Finding]:
    out: list[Finding] = []
    used = {n.domain for n in iter_all_nodes(m.graph)}
    imported = {imp.domain for imp in m.opset_import}
    for domain in sorted(used - imported - {"", "ai.onnx"}):
        out.append(
            Finding(
                "missing-opset-import",
                "error",
                None,
                None,
                f"nodes use domain {domain!r} but the model has no opset import for it; "
                "ATC looks custom ops up as <domain>::<opset>::<Op> and cannot",
                f"add onnx.helper.make_opsetid({domain!r}, 1) to model.opset_import",
            )
        )
    return out


def _opset_fix(m: ModelProto, version: int, to: int) -> str:
    """Re-export first; then the converter where it has an adapter for every op, else
    ``opsdk rewrite --opset`` (item 9: the converter has none for LayerNormalization,
    GridSample, AffineGrid, Gelu, ConstantOfShape ... across the versions ATC needs)."""
    export = f"re-export at opset {to}: torch.onnx.export(..., opset_version={to})"
    blocker = _converter_blocker(m, to) if version > to else None
    if blocker is None:
        return f"{export}, or convert: onnx.version_converter.convert_version(model, {to})"
    from ...onnx import ModelError, lower_opset

    try:
        lowered = lower_opset(m, to)
    except ModelError as e:
        return (f"{export} (onnx.version_converter cannot convert this model: {blocker}; nor "
                f"can opsdk: {e}); without the source, replace those ops first (opsdk rewrite "
                "--replace OP)")
    changed = sorted({r.node.split("(")[-1].rstrip(")") for r in lowered.records
                      if r.action in ("expanded", "adapted")})
    return (f"{export}; without the source: opsdk rewrite model.onnx -o model_opset{to}.onnx "
            f"--opset {to} (onnx.version_converter alone cannot: {blocker}; opsdk rewrites "
            f"{', '.join(changed)} and checks the result with ONNX Runtime)")


def _converter_blocker(m: ModelProto, to: int) -> str | None:
    """Why ``onnx.version_converter`` cannot take ``m`` to opset ``to``, or None if it can."""
    import re

    from onnx import version_converter

    try:
        version_converter.convert_version(m, to)
    except Exception as e:  # the converter reports every failure as a RuntimeError
        text = str(e)
        found = re.search(r"(No Previous Version of \w+ exists|No Adapter (?:From|To) Version "
                          r"\$\d+ for \w+)", text)
        if found:
            return f"no adapter: {found.group(1).replace('$', '')}"
        return f"it fails: {(text.strip().splitlines() or [type(e).__name__])[-1][:200]}"
    return None


def _mixed_domain_findings(m: ModelProto, cann: CannVersion) -> list[Finding]:
    """E16005: a default-domain node in a model that imports more than one domain."""
    imported = {imp.domain for imp in m.opset_import}
    nodes = [n for n in m.graph.node if n.domain == ""]
    if "" not in imported or len(imported) < 2 or not nodes:
        return []
    first = node_label(nodes[0], list(m.graph.node).index(nodes[0]))
    rule = (
        f"the GE ONNX parser resolves a default-domain node only when the model imports a "
        f"single domain (ATC error E16005, every release through CANN 9.1); this model imports "
        f"{len(imported)} ({', '.join(sorted(d or 'ai.onnx' for d in imported))}) and has "
        f"{len(nodes)} default-domain node(s)"
    )
    fix = (
        "opsdk atc and opsdk triton build --target ascend convert such a copy themselves; to "
        "run atc by hand, give it a copy made by opsdk.ascend.normalize_default_domain(model), "
        "which spells the default domain ai.onnx, or put the custom nodes in the default domain"
    )
    if cann.rejects_mixed_default_domain:
        return [Finding("mixed-default-domain", "error", first, None, f"{rule}; CANN {cann} "
                        "rejects the model", fix)]
    return [Finding("mixed-default-domain", "warning", first, None, f"{rule}; CANN {cann} "
                    "accepts it, older hosts do not", f"for hosts before CANN 9.2, {fix}")]


def _invalid_interface(m: ModelProto, fix: str) -> list[Finding]:
    """The model's header and the graph's interface: an IR version newer than onnx knows, an
    empty or repeated input/output name (ONNX's checker rejects them), no output at all."""
    out = []
    if m.ir_version > onnx.IR_VERSION:
        out.append(Finding("invalid-model", "error", None, None,
                           f"the model has IR version {m.ir_version}, newer than any onnx "
                           f"{onnx.__version__} reads (up to {onnx.IR_VERSION})",
                           "re-export it with an exporter of the onnx release ATC's parser "
                           f"reads, or set model.ir_version = {onnx.IR_VERSION} if nothing "
                           "newer is used"))
    if not m.graph.output:
        out.append(Finding("invalid-model", "error", None, None, "the graph has no output",
                           "ATC builds a graph's outputs (its NetOutput): list the values "
                           "the model computes in model.graph.output"))
    for kind, values in (("input", m.graph.input), ("output", m.graph.output)):
        seen: set[str] = set()
        for vi in values:
            if not vi.name or vi.name in seen:
                what = "has an empty name" if not vi.name else f"{vi.name!r} is listed twice"
                out.append(Finding("invalid-model", "error", f"graph {kind}", None,
                                   f"a graph {kind} {what}",
                                   fix + f": give each graph {kind} one unique name"))
            seen.add(vi.name)
    return out


def _ort_findings(m: ModelProto, shapes: Mapping[str, Sequence[int]],
                  label: str = "the model", python: str | None = None,
                  ort: bool = True) -> list[Finding]:
    """The dynamic-shape findings, and the crash of ONNX Runtime on the model, if any.

    The model is always opened in ONNX Runtime, in a child process, and run once (a
    fixed-shape model on inputs of its shapes; the inputs given in ``shapes``, the
    ``--input-shape`` ATC will get, on those; other dynamic ones on the first sizing that
    runs, which is the example shape of their findings): a crash there is an
    ``onnxruntime-crash`` finding, whatever the model's shapes."""
    dynamic = [(vi, dims) for vi, dims in _free_inputs(m, set(shapes))
               if dims is None or not all(isinstance(d, int) for d in dims)]
    out: list[Finding] = []
    runnable: dict[str, tuple[int, ...]] = {}
    if ort:
        crashes: list[str] = []  # ONNX Runtime runs in a child: its crash is a finding
        runnable = runnable_shapes(_with_input_shapes(m, shapes), crashes=crashes,
                                   python=python) or {}
        given = f"the --input-shape sizes ({_shapes_text(shapes)})" if shapes else ""
        if dynamic:
            asked = "asked for example input shapes" + (f" with {given}" if given else "")
        else:
            asked = f"run once on {given}" if given else "run once on inputs of the model's shapes"
        out += [_crash_finding(label, c, asked) for c in crashes]
    return out + [_dynamic_finding(vi, dims, runnable.get(vi.name)) for vi, dims in dynamic]


def _with_input_shapes(m: ModelProto, shapes: Mapping[str, Sequence[int]]) -> ModelProto:
    """``m`` with the given inputs' dims fixed to ``shapes`` (``m`` itself when none)."""
    if not shapes:
        return m
    fixed = ModelProto()
    fixed.CopyFrom(m)
    for vi in fixed.graph.input:
        if vi.name in shapes and vi.type.HasField("tensor_type"):
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[vi.name]:
                dims.add().dim_value = int(d)
    return fixed


def _shapes_text(shapes: Mapping[str, Sequence[int]]) -> str:
    return " ".join(f"{name}={','.join(map(str, dims))}" for name, dims in shapes.items())


def _free_inputs(m: ModelProto, bounded: set[str],
                 ) -> list[tuple[onnx.ValueInfoProto, list[int | str | None] | None]]:
    """The graph inputs that are not weights nor given a shape, with their dims."""
    inits = {t.name for t in m.graph.initializer}  # weights, even where also listed as inputs
    return [(vi, input_dims(vi) if vi.type.HasField("tensor_type") else [])
            for vi in m.graph.input if vi.name not in inits and vi.name not in bounded]


def _crash_finding(label: str, crash: str, asked: str) -> Finding:
    """A crash line of :func:`runnable_shapes` ("ONNX Runtime V crashed ...[; the crash is
    node N: why][; fix: ...]") as a finding on that node, if one was isolated."""
    said, _, fix = crash.partition("; fix: ")
    head, _, where = said.partition("; ")
    node = re.search(r"^the crash is node (#\d+ \([^)]*\))", where)
    return Finding("onnxruntime-crash", "warning", node.group(1) if node else None, None,
                   f"{label}: {head}, {asked}"
                   + (f"; {where}" if where else "") + "; a host that opens the model with "
                   "that ONNX Runtime (Triton's npu_ge backend) may crash too",
                   fix or "no one node could be blamed: opsdk triton build --target ascend, "
                   "then opsdk triton check on the folder, runs the model as npu_ge does")


def _dynamic_finding(vi: onnx.ValueInfoProto, dims: list[int | str | None] | None,
                     runs: tuple[int, ...] | None = None) -> Finding:
    """A dynamic-shape finding that says how each dynamic dim was written; the example
    shape is one ONNX Runtime runs the model on (``runs``), else 1 in each dynamic dim."""
    if dims is None:
        dims_text, forms, example = "unknown rank", "the input has no shape", "1,..."
    else:
        written = vi.type.tensor_type.shape.dim
        dims_text = ",".join("?" if d is None else str(d) for d in dims)
        forms = ", ".join(
            f"dim {i} is {dim_form(w)}" for i, (d, w) in enumerate(zip(dims, written))
            if not isinstance(d, int)
        )
        example = ",".join(str(d) if isinstance(d, int) else "1" for d in dims)
    if runs is not None:
        example = ",".join(map(str, runs))
    return Finding(
        "dynamic-shape",
        "warning",
        f"graph input {vi.name!r}",
        None,
        f"input {vi.name!r} has dynamic shape [{dims_text}] ({forms}); ATC compiles fixed "
        "shapes or declared ranges only",
        f"give ATC its shape: --input_shape=\"{vi.name}:{example}\" (fixed), or a "
        "range / gear list (--input_shape_range, --dynamic_batch_size); tell the "
        f"doctor with --input-shape {vi.name}={example}"
        + (" (a shape ONNX Runtime runs the model on)" if runs is not None else ""),
    )


# ------------------------------------------------------------------- node level
@cache
def _first_version(op_type: str, domain: str) -> int | None:
    versions = [
        s.since_version
        for s in onnx.defs.get_all_schemas_with_history()
        if s.name == op_type and s.domain == domain
    ]
    return min(versions) if versions else None


def _node_findings(
    m: ModelProto,
    node: NodeProto,
    idx: int | None,
    profile: TargetProfile,
    specs: Mapping[tuple[str, str], OpSpec],
) -> list[Finding]:
    label = node_label(node, idx)
    if node.domain in ("", "ai.onnx"):
        out = _standard_findings(node, label, profile, specs)
        if node.op_type == "Resize" and not out:
            out = _resize_findings(m, node, label)
        return out
    if is_standard_domain(node.domain):
        return [
            Finding(
                "unsupported-domain",
                "error",
                label,
                f"{node.domain}::{node.op_type}",
                f"ATC's ONNX parser converts ai.onnx operators; {node.domain} has no converters",
                _new_op_fix(node.op_type, node.domain),
            )
        ]
    return _custom_findings(m, node, label, specs)


def _standard_findings(
    node: NodeProto, label: str, profile: TargetProfile, specs: Mapping[tuple[str, str], OpSpec]
) -> list[Finding]:
    op = node.op_type
    reason = profile.unsupported.get(op)
    first = _first_version(op, "")
    if reason is None and first is not None and first > profile.opset_max:
        reason = f"{op} exists since ai.onnx opset {first}, after the {profile.opset_max} ATC reads"
    if reason is None and first is None:
        reason = f"{op} is no ai.onnx operator"
    if reason is None:
        return []
    shipped = next((s for s in specs.values() if s.onnx_op == op), None)
    if shipped is not None:
        fix = (
            f"replace it by the shipped operator {shipped.domain}::{shipped.name}: "
            f"opsdk rewrite model.onnx -o fixed.onnx --replace {op}"
        )
    else:
        fix = _new_op_fix(op, "")
    return [Finding("unsupported-op", "error", label, op, reason, fix)]


def _new_op_fix(op: str, domain: str) -> str:
    like = f" --like onnx:{op}" if domain in ("", "ai.onnx") and _first_version(op, "") else ""
    return (
        f"write it as an opsdk operator: opsdk new {op}{like}, then "
        f"opsdk rewrite model.onnx -o fixed.onnx --replace {op}"
        if like
        else f"write it as an opsdk operator: opsdk new {op} (domain {domain or 'your own'})"
    )


def _resize_findings(m: ModelProto, node: NodeProto, label: str) -> list[Finding]:
    if (opset_version(m, "") or 0) < 11:
        return []  # Resize-10 is asymmetric by definition
    attrs = {a.name: attribute_value(a) for a in node.attribute}
    out = []
    mode = attrs.get("mode", "nearest")
    if mode not in RESIZE_MODES:
        out.append(
            Finding(
                "resize-mode",
                "error",
                label,
                "Resize",
                f"Resize mode={mode!r}; ATC's Resize converter handles {', '.join(RESIZE_MODES)}",
                "use mode='linear' or 'nearest', or write the op: opsdk new ResizeCubic "
                "--like onnx:Resize",
            )
        )
    ctm = attrs.get("coordinate_transformation_mode")
    if ctm not in RESIZE_SAFE_MODES:
        shown = f"{ctm!r}" if ctm is not None else "not set (ONNX default 'half_pixel')"
        out.append(
            Finding(
                "resize-coordinate-mode",
                "warning",
                label,
                "Resize",
                f"coordinate_transformation_mode is {shown}; ATC computes it as 'asymmetric' "
                "(it maps only pytorch_half_pixel and align_corners), so results shift",
                "set coordinate_transformation_mode explicitly: 'pytorch_half_pixel' (same as "
                "half_pixel whenever an output size > 1), 'align_corners' or 'asymmetric'",
            )
        )
    return out


def _custom_findings(
    m: ModelProto, node: NodeProto, label: str, specs: Mapping[tuple[str, str], OpSpec]
) -> list[Finding]:
    op = f"{node.domain}::{node.op_type}"
    spec = specs.get((node.domain, node.op_type))
    if spec is None:
        return [
            Finding(
                "unknown-custom-op",
                "error",
                label,
                op,
                f"no opsdk operator {op} is registered, so there is no ATC plugin, op proto "
                "or kernel for it",
                f"create it: opsdk new {node.op_type} (domain {node.domain}), or add its "
                "folder to OPSDK_OPERATORS_PATH",
            )
        ]
    from ...onnx._schema import check_custom_node

    try:
        check_custom_node(spec, node, m)
    except SpecError as e:
        return [
            Finding(
                "invalid-custom-node",
                "error",
                label,
                op,
                str(e),
                f"fix the node to match {spec.name}'s spec (see its spec.py), e.g. with "
                "opsdk.onnx.make_node",
            )
        ]
    return []


def format_findings(findings: Sequence[Finding], target: str) -> str:
    """Human-readable report, one block per finding."""
    if not findings:
        return f"no problems found for target {target}"
    lines = [f"{len(findings)} problem(s) for target {target}:"]
    for f in findings:
        where = f.node or "model"
        lines.append(f"  [{f.severity}] {f.code} at {where}")
        lines.append(f"      reason: {f.reason}")
        lines.append(f"      fix:    {f.fix}")
    return "\n".join(lines)
