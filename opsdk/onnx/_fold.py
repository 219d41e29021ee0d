"""``opsdk rewrite --replace NAME`` for an operator's name: fold its decompositions.

Each place one of the operator's patterns (:mod:`._pattern`, its fallback function and
``@SPEC.register_pattern``) matches (:mod:`._decomp_match`) becomes one node of the
operator; its inputs are checked against the spec (dtypes, the shape function) and its
first output must have the replaced value's dtype and shape. Then ONNX Runtime runs the
original and the rewritten model (the operators as their fallback functions) on probe
inputs: when they differ by more than 1e-4 of the outputs' scale, no fold is kept.

Example:
    >>> result = fold_decompositions(model, [spec])  # doctest: +SKIP
    >>> [r.action for r in result.records]  # doctest: +SKIP
    ['replaced', 'replaced', 'checked']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, NodeProto

from ..errors import SpecError
from ..spec import OpSpec, TensorType
from ._decomp_match import DecompositionMatch, find_matches
from ._export import make_node
from ._model import has_shape, opset_version, tensor_type_of, topological_sort
from ._names import FreshNames
from ._pattern import build_patterns
from ._records import RewriteRecord, RewriteResult, replace_nodes
from ._schema import register_schema
from .errors import ModelError

__all__ = ["fold_decompositions"]


#: The proof's tolerance, relative to the outputs' scale, by the output's dtype: 1e-4 for
#: float32 and wider; 8 units in the last place for float16 (2^-10) and bfloat16 (2^-7),
#: where a fold that computes in float32 rounds once where the exported Cast islands round
#: at each step.
_RTOL = {"float16": 8 * 2.0**-10, "bfloat16": 8 * 2.0**-7}


class _Skip(Exception):
    pass


def _fused_node(spec: OpSpec, m: DecompositionMatch, types: dict[str, Any],
                readers: dict[str, list[int]], fresh: FreshNames) -> NodeProto:
    missing = [i.name for i in spec.inputs if not i.optional and i.name not in m.inputs]
    if missing:
        raise _Skip(f"the pattern binds no value to input(s) {', '.join(missing)}")
    inputs = [m.inputs.get(i.name, "") for i in spec.inputs]
    while inputs and not inputs[-1]:
        inputs.pop()
    try:
        attrs = spec.resolve_attrs(m.attrs)
        given = [tensor_type_of(types.get(v)) if v else None for v in inputs]
        if all(t is not None and has_shape(t) for t in given if t is not None):
            out = spec.infer(given, attrs)
            _same_type(spec, out[0], tensor_type_of(types.get(m.outputs[0] or "")))
    except SpecError as e:
        raise _Skip(str(e)) from None
    outputs = []
    for k, o in enumerate(spec.outputs):
        value = m.outputs[k] if k < len(m.outputs) else None
        if k == 0 or (value and any(r not in m.nodes for r in readers.get(value, []))):
            outputs.append(value or "")
        else:
            outputs.append("" if o.optional else fresh(f"{m.outputs[0]}_{o.name}_unused"))
    return make_node(spec, inputs, outputs, attrs)


def _same_type(spec: OpSpec, got: TensorType, want: TensorType | None) -> None:
    if want is None or not has_shape(want):
        return
    if got.dtype != want.dtype or (all(isinstance(d, int) for d in want.shape)
                                   and tuple(got.shape) != tuple(want.shape)):
        raise SpecError(f"{spec.name} would make {got.dtype} {tuple(got.shape)} where the "
                        f"model computes {want.dtype} {tuple(want.shape)}")


def _folded_text(model: ModelProto, m: DecompositionMatch, spec: OpSpec) -> str:
    """``8 nodes (Add, Cast, ...): '/n1/Pow', ... by com.llm::RmsNorm epsilon=1e-06 (the
    fallback function)``: what went into the fold, by op type and by node."""
    from ._model import node_label

    nodes = [model.graph.node[i] for i in sorted(m.nodes)]
    ops = ", ".join(sorted({n.op_type for n in nodes}))
    names = ", ".join(repr(n.name) if n.name else node_label(n, i)
                      for i, n in zip(sorted(m.nodes), nodes))
    attrs = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                      for k, v in sorted(m.attrs.items()))
    return (f"{len(nodes)} nodes ({ops}): {names} by {spec.domain}::{spec.name}"
            + (f" {attrs}" if attrs else "") + f" ({m.pattern})")


def _fold_one(model: ModelProto, spec: OpSpec, types: dict[str, Any]
              ) -> list[RewriteRecord]:
    from ._model import consumers_of

    register_schema(spec)
    patterns = build_patterns(spec, opset_version(model, "") or onnx.defs.onnx_opset_version())
    if not patterns:
        return [RewriteRecord(spec.name, "skipped", "the operator registers no fallback "
                              "function or pattern to find (@SPEC.register_pattern)")]
    matches = find_matches(model, spec, patterns, types)
    readers = consumers_of(model.graph)
    fresh = FreshNames(model)
    records, replaced, dropped = [], {}, set()
    for m in matches:
        try:
            node = _fused_node(spec, m, types, readers, fresh)
        except _Skip as why:
            records.append(RewriteRecord(m.label, "skipped", f"{m.pattern}: {why}"))
            continue
        root = model.graph.node[max(m.nodes)]
        node.name = root.name or fresh(f"{spec.name}_fused")
        replaced[max(m.nodes)] = node
        dropped |= set(m.nodes)
        records.append(RewriteRecord(m.label, "replaced", _folded_text(model, m, spec)))
    if replaced:
        seeds = {i for k in dropped for i in model.graph.node[k].input if i}
        replace_nodes(model, replaced, dropped, spec)
        _drop_orphans(model, seeds)
        order = topological_sort(model.graph)
        nodes = [model.graph.node[i] for i in order]
        del model.graph.node[:]
        model.graph.node.extend(nodes)
    return records


def _drop_orphans(model: ModelProto, seeds: set[str]) -> None:
    """Remove the nodes a fold left unread: the entry Cast of a Cast island, the
    Shape/Gather/Div chain that computed the Slice bounds. Only producers of ``seeds`` (the
    values the folded nodes read) and, in turn, of their inputs are candidates; a graph
    output or a value anything still reads stays."""
    from ._model import is_standard_domain

    g = model.graph
    while seeds:
        read = {i for n in g.node for i in n.input} | {o.name for o in g.output}
        dead = [k for k, n in enumerate(g.node) if is_standard_domain(n.domain)
                and any(o in seeds for o in n.output) and not any(o in read for o in n.output)]
        if not dead:
            return
        seeds = {i for k in dead for i in g.node[k].input if i}
        for k in reversed(dead):
            del g.node[k]


def fold_decompositions(model: ModelProto, specs: Sequence[OpSpec], *,
                        check: bool = True) -> RewriteResult:
    """Fold every decomposition of each of ``specs`` in ``model`` (a copy) into one node,
    and, with ``check``, prove the result in ONNX Runtime (see the module docstring).

    Example:
        >>> fold_decompositions(onnx.load("llama.onnx"), [rms_norm_spec])  # doctest: +SKIP
    """
    from ._model import value_types
    from ._schema import infer_shapes

    out = ModelProto()
    out.CopyFrom(model)
    records: list[RewriteRecord] = []
    for spec in specs:
        try:
            types = value_types(infer_shapes(out, specs))
        except Exception:  # types only refine the checks
            types = value_types(out)
        records += _fold_one(out, spec, types)
    result = RewriteResult(out, records)
    if check and result.changed:
        return _prove(model, result, specs)
    return result


def _prove(source: ModelProto, result: RewriteResult, specs: Sequence[OpSpec]
           ) -> RewriteResult:
    """ONNX Runtime on the original and on the result with the operators as their fallback
    functions: the folds are kept only when the outputs agree."""
    from ._functions import attach_function
    from ._opset import _run_apart
    from ._probe import probe_feeds, runnable_shapes

    shapes = runnable_shapes(source, {})
    if shapes is None:
        return RewriteResult(result.model, [*result.records, RewriteRecord(
            "the model", "unchecked", "ONNX Runtime runs the original on no probe input: "
            "the folds are not compared with it")])
    sizes = {(k, a): int(d) for k, v in shapes.items() for a, d in enumerate(v)}
    feeds = probe_feeds(source, sizes, {}, random=True)
    runnable = ModelProto()
    runnable.CopyFrom(result.model)
    for spec in specs:
        if spec.function is not None and any(n.op_type == spec.name and n.domain == spec.domain
                                             for n in runnable.graph.node):
            attach_function(runnable, spec)
    try:
        want = _run_apart(source, feeds, "original")
        got = _run_apart(runnable, feeds, "rewritten")
    except ModelError as e:
        return _undo(source, result, f"ONNX Runtime cannot compare the models: {e}")
    worst, bound = 0.0, 0.0
    for w, g in zip(want, got, strict=True):
        w64, g64 = np.asarray(w, np.float64), np.asarray(g, np.float64)
        if w64.shape != g64.shape:
            return _undo(source, result, f"an output has shape {g64.shape}, the original's "
                         f"{w64.shape}")
        if w64.size:
            worst = max(worst, float(np.max(np.abs(w64 - g64))))
            rtol = _RTOL.get(np.asarray(w).dtype.name, 1e-4)
            bound = max(bound, rtol * max(1.0, float(np.max(np.abs(w64)))))
    on = ", ".join(f"{k} {'x'.join(map(str, np.shape(v)))}" for k, v in feeds.items())
    if not worst <= bound:
        return _undo(source, result, f"the outputs differ from the original's by {worst:.3g} "
                     f"on {on} (ONNX Runtime, the operators as their fallback functions)")
    return RewriteResult(result.model, [*result.records, RewriteRecord(
        "the model", "checked", f"ONNX Runtime gives the original's outputs on {on} with the "
        f"operators as their fallback functions (max difference {worst:.3g})")])


def _undo(source: ModelProto, result: RewriteResult, why: str) -> RewriteResult:
    kept = ModelProto()
    kept.CopyFrom(source)
    records = [RewriteRecord(r.node, "refused", f"{r.detail}; not kept: {why}")
               if r.action == "replaced" else r for r in result.records]
    return RewriteResult(kept, [*records, RewriteRecord("the model", "refused", why)])
