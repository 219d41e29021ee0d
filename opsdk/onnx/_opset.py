"""Take a model down to an older ai.onnx opset, where ``onnx.version_converter`` alone cannot.

Exporters write new opsets (torch 2.13's dynamo exporter writes 20; ``affine_grid`` needs 20
in the TorchScript exporter too) while a runtime may read only older ones (ATC of CANN 8
reads up to 18). ``onnx.version_converter`` has no way down for ops that did not exist at
the older opset (Gelu and AffineGrid are new in 20) nor adapters for some that changed
(GridSample 20, ConstantOfShape 20, Identity 16). :func:`lower_opset`:

1. expands each op the older opset lacks into its ONNX function body (Gelu into Erf or Tanh
   arithmetic, AffineGrid into Range/MatMul arithmetic: the definitions ONNX itself gives);
2. carries the ops it knows the older form of across the converter (:data:`DOWN_ADAPTERS`:
   GridSample 20 on 4-D input is GridSample 16 with ``linear``/``cubic`` spelled
   ``bilinear``/``bicubic``; ConstantOfShape 20 and Identity 16 only added types);
3. converts the rest with ``onnx.version_converter``;
4. checks the result: ONNX's full checker, and, given inputs, ONNX Runtime runs both models
   and their outputs must agree.

Example:
    >>> from onnx import helper, TensorProto as T
    >>> g = helper.make_graph([helper.make_node("Gelu", ["x"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", T.FLOAT, [2])],
    ...     [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    >>> m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    >>> low = lower_opset(m, 18)
    >>> ops = {n.op_type for n in low.model.graph.node}
    >>> [o.version for o in low.model.opset_import], "Gelu" in ops, "Erf" in ops
    ([18], False, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import onnx
import onnx.inliner
import onnx.version_converter
from onnx import ModelProto, NodeProto

from ._model import (
    ModelError,
    is_standard_domain,
    iter_all_nodes,
    iter_nested_nodes,
    node_label,
    opset_version,
    value_types,
)
from ._names import FreshNames
from ._records import RewriteRecord, RewriteResult
from ._schema import infer_shapes

__all__ = ["DOWN_ADAPTERS", "EXPANSIONS", "lower_opset"]

_HOLD = "opsdk.lowering"  # the domain an op waits in while the converter runs
_FUNC = "opsdk.expanding"  # the domain of the function bodies before they are inlined


def _grid_sample(node: NodeProto, types: Mapping[str, Any], to: int) -> str:
    """GridSample 20 -> 16: 4-D input only; modes linear/cubic are bilinear/bicubic."""
    if to < 16:
        raise ModelError(f"GridSample exists since ai.onnx opset 16, not at {to}")
    rank = _rank(types, node.input[0])
    if rank is not None and rank != 4:
        raise ModelError(f"node {node_label(node)}: GridSample on rank-{rank} input exists "
                         "only since opset 20 (opset 16 takes 4-D input)")
    renamed = {"linear": "bilinear", "cubic": "bicubic"}
    for a in node.attribute:
        if a.name == "mode" and a.s.decode() in renamed:
            new = renamed[a.s.decode()]
            a.s = new.encode()
            return f"GridSample 20 -> 16: mode {new!r}"
    return "GridSample 20 -> 16"


def _same(op: str) -> Callable[[NodeProto, Mapping[str, Any], int], str]:
    def keep(node: NodeProto, types: Mapping[str, Any], to: int) -> str:
        return f"{op}: same semantics at opset {to} (the newer version only added types)"
    return keep


def _affine_grid_2d(node: NodeProto, types: Mapping[str, Any], name: Callable[[str], str]
                    ) -> list[NodeProto] | None:
    """AffineGrid on a 4-element size (N, C, H, W) in opset-13 arithmetic, without the
    rank test (``If``) of ONNX's own function body: ``grid[n, h, w] = theta[n] @ (x_w, y_h,
    1)`` with ``x_w = (2w + 1) / W - 1`` (``align_corners=0``) or ``2w / (W - 1) - 1`` (0 for
    W = 1, as torch's affine_grid; ONNX Runtime's AffineGrid differs there).
    None when the size's length is not known to be 4."""
    t = types.get(node.input[1])
    dims = t.tensor_type.shape.dim if t is not None and t.HasField("tensor_type") else []
    if len(dims) != 1 or dims[0].dim_value != 4:
        return None
    align = next((a.i for a in node.attribute if a.name == "align_corners"), 0)
    theta, size = node.input[0], node.input[1]
    h = onnx.helper
    nodes: list[NodeProto] = []

    def add(op: str, inputs: list[str], **attrs: Any) -> str:
        out = name(op.lower())
        nodes.append(h.make_node(op, inputs, [out], **attrs))
        return out

    def const(value: Any, dtype: Any = np.int64) -> str:
        return add("Constant", [], value=onnx.numpy_helper.from_array(np.array(value, dtype)))

    def piece(k: int) -> str:
        return add("Slice", [size, const([k]), const([k + 1])])

    zero, one_i = const(0), const(1)
    one = add("CastLike", [const(1.0, np.float32), theta])
    two = add("CastLike", [const(2.0, np.float32), theta])

    def coords(n_dim: str) -> str:  # the normalised centres along one axis, shape [n]
        steps = add("CastLike", [add("Range", [zero, add("Squeeze", [n_dim]), one_i]), theta])
        n = add("CastLike", [n_dim, theta])
        if align:  # (2w - (n - 1)) / max(n - 1, 1): 0 for n = 1, as torch's affine_grid
            n1 = add("Sub", [n, one])
            return add("Div", [add("Sub", [add("Mul", [steps, two]), n1]), add("Max", [n1, one])])
        return add("Sub", [add("Div", [add("Add", [add("Mul", [steps, two]), one]), n]), one])

    n_, h_, w_ = piece(0), piece(2), piece(3)
    hw = add("Concat", [h_, w_], axis=0)
    xs = add("Expand", [add("Unsqueeze", [coords(w_), const([0])]), hw])  # [H, W]
    ys = add("Expand", [add("Unsqueeze", [coords(h_), const([1])]), hw])
    ones = add("Expand", [one, hw])
    last = const([2])
    base = add("Concat", [add("Unsqueeze", [v, last]) for v in (xs, ys, ones)], axis=2)
    flat = add("Reshape", [base, const([-1, 3])])  # [H*W, 3]
    grid = add("MatMul", [flat, add("Transpose", [theta], perm=[0, 2, 1])])  # [N, H*W, 2]
    nodes.append(h.make_node("Reshape", [grid, add("Concat", [n_, h_, w_, last], axis=0)],
                             [node.output[0]], name=node.name or name("affine_grid")))
    return nodes


#: Ops the older opset lacks, with an opsdk decomposition preferred to ONNX's function body:
#: ``(node, value types, fresh names) -> nodes`` or None (then the function body is used).
EXPANSIONS: dict[str, Callable[[NodeProto, Mapping[str, Any], Callable[[str], str]],
                               list[NodeProto] | None]] = {"AffineGrid": _affine_grid_2d}


#: Ops whose newer version has an older form the converter does not know, by op type:
#: ``(node, value types, target opset) -> note``; the function edits the node in place.
DOWN_ADAPTERS: dict[str, Callable[[NodeProto, Mapping[str, Any], int], str]] = {
    "GridSample": _grid_sample,
    "ConstantOfShape": _same("ConstantOfShape"),
    "Identity": _same("Identity"),
}


def _rank(types: Mapping[str, Any], name: str) -> int | None:
    t = types.get(name)
    if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    return len(t.tensor_type.shape.dim)


def lower_opset(
    model: ModelProto,
    to: int,
    feeds: Mapping[str, np.ndarray] | None = None,
) -> RewriteResult:
    """``model`` at ai.onnx opset ``to``, each change recorded; ``feeds``: inputs on which
    ONNX Runtime must give the same outputs for both models (else :class:`ModelError`).

    Raises :class:`ModelError` naming the op when no way down exists.

    Example:
        >>> low = lower_opset(onnx.load("stn_opset20.onnx"), 18)  # doctest: +SKIP
        >>> [r.action for r in low.records]  # doctest: +SKIP
        ['expanded', 'adapted', 'converted']
    """
    version = opset_version(model, "")
    out = ModelProto()
    out.CopyFrom(model)
    if version is None or version <= to:
        return RewriteResult(out, [RewriteRecord(
            "the model", "skipped",
            f"imports ai.onnx opset {version}, not above {to}: left at opset {version} "
            "(--opset only takes a model down)" if version is not None else
            f"imports no ai.onnx opset: nothing to take down to {to}")])
    try:
        types = value_types(infer_shapes(out))
    except Exception:  # types only serve the expansions and checks
        types = value_types(out)
    records: list[RewriteRecord] = []
    functions: list[onnx.FunctionProto] = []
    expanded: dict[int, list[NodeProto]] = {}
    names = FreshNames(out)

    def fresh(stem: str) -> str:
        return names(f"lowered_{stem}")

    for idx, node, schema in _newer_than(out, version, to):
        if node.op_type in DOWN_ADAPTERS or _exists_at(node.op_type, to):
            continue  # carried across the converter below, or the converter's adapters
        label = node_label(node, idx)
        own = EXPANSIONS.get(node.op_type)
        replacement = own(node, types, fresh) if own is not None and idx >= 0 else None
        if replacement is not None:
            expanded[idx] = replacement
            records.append(RewriteRecord(label, "expanded", (
                f"into {len(replacement)} nodes of opset {to} "
                f"({', '.join(sorted({n.op_type for n in replacement} - {'Constant'}))})")))
            continue
        body = _function_body(schema, node, types)
        if body is None:
            raise ModelError(
                f"node {label}: {node.op_type} exists since ai.onnx opset "
                f"{schema.since_version}, ONNX defines no function for it and there is no "
                f"older form: no way down to opset {to}; re-export at opset {to}, or replace "
                f"it (opsdk rewrite --replace {node.op_type})")
        body.name, body.domain = f"{node.op_type}_{len(functions)}", _FUNC
        functions.append(body)
        node.op_type, node.domain = body.name, _FUNC
        records.append(RewriteRecord(label, "expanded", (
            f"into its ONNX function body ({', '.join(sorted({n.op_type for n in body.node}))})")))
    if expanded:
        nodes = [m for i, n in enumerate(out.graph.node) for m in expanded.get(i, [n])]
        del out.graph.node[:]
        out.graph.node.extend(nodes)
    if functions:
        out.functions.extend(functions)
        out.opset_import.append(onnx.helper.make_opsetid(_FUNC, 1))
        out = onnx.inliner.inline_local_functions(out)
        _drop_import(out, _FUNC)
    held = []  # function bodies may hold such ops too: after inlining
    for idx, node, _ in _newer_than(out, version, to):
        if node.op_type in DOWN_ADAPTERS:
            label = node_label(node, idx if idx >= 0 else None)
            note = DOWN_ADAPTERS[node.op_type](node, types, to)
            held.append(node)
            node.domain = _HOLD
            records.append(RewriteRecord(label, "adapted", note))
    if held:
        out.opset_import.append(onnx.helper.make_opsetid(_HOLD, 1))
    try:
        out = onnx.version_converter.convert_version(out, to)
    except Exception as e:
        raise ModelError(f"onnx.version_converter cannot take the model from opset {version} "
                         f"to {to}: {str(e).strip().splitlines()[-1][:300]}") from None
    for node in iter_all_nodes(out.graph):
        if node.domain == _HOLD:
            node.domain = ""
    _drop_import(out, _HOLD)
    records.append(RewriteRecord("the model", "converted",
                                 f"ai.onnx opset {version} -> {to} (onnx.version_converter)"))
    try:
        onnx.checker.check_model(out, full_check=True)
    except Exception as e:  # an error only if ONNX accepted the original
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception:
            pass
        else:
            raise ModelError(f"the model lowered to opset {to} fails ONNX's checks: {e}"
                             ) from None
    if feeds is not None:
        records.append(_compare(model, out, feeds))
    return RewriteResult(out, records)


def _newer_than(model: ModelProto, version: int, to: int
                ) -> list[tuple[int, NodeProto, Any]]:
    """(index, node, schema) of the standard nodes whose op version is above ``to``, in
    the main graph and its subgraphs (index -1 there)."""
    found = []
    inner = list(iter_nested_nodes(model.graph))
    for idx, node in [*enumerate(model.graph.node), *((-1, m) for m in inner)]:
        if not is_standard_domain(node.domain):
            continue
        try:
            schema = onnx.defs.get_schema(node.op_type, version, "")
        except onnx.defs.SchemaError:
            continue
        if schema.since_version > to:
            found.append((idx, node, schema))
    return found


def _exists_at(op: str, version: int) -> bool:
    try:
        onnx.defs.get_schema(op, version, "")
    except onnx.defs.SchemaError:
        return False
    return True


def _function_body(schema: Any, node: NodeProto, types: Mapping[str, Any]
                   ) -> onnx.FunctionProto | None:
    body = onnx.FunctionProto()
    if schema.has_function:
        body.CopyFrom(schema.function_body)
    elif schema.has_context_dependent_function:
        arg_types = [types[i].SerializeToString() if i in types
                     else onnx.TypeProto().SerializeToString() for i in node.input]
        body.ParseFromString(schema.get_context_dependent_function(node.SerializeToString(),
                                                                   arg_types))
    else:
        return None
    return body


def _drop_import(model: ModelProto, domain: str) -> None:
    kept = [o for o in model.opset_import if o.domain != domain]
    del model.opset_import[:]
    model.opset_import.extend(kept)


def _run_apart(model: ModelProto, feeds: Mapping[str, np.ndarray], which: str
               ) -> list[Any]:
    """The outputs of ONNX Runtime in a child process (:class:`~._ort_child.OrtChild`): its
    crash is a ModelError naming the version, the stage and, where children isolate it,
    the node, instead of the end of the command."""
    import sys

    from ._crash import crash_note
    from ._ort_child import OrtChild
    from .errors import OrtChildCrash

    try:
        child = OrtChild(model, sys.executable)
        try:
            return child.outputs(feeds)
        finally:
            child.close()
    except OrtChildCrash as e:
        words = f" ({e.last_words})" if e.last_words else ""
        raise ModelError(
            f"comparing the {which} model's outputs with the other's: {e}{words}"
            f"{crash_note(model, feeds, sys.executable)}; the {which} model is not kept"
        ) from None
    except RuntimeError as e:
        raise ModelError(f"ONNX Runtime cannot run the {which} model on the probe inputs "
                         f"({str(e).splitlines()[0][:300] if str(e) else 'no message'}); "
                         "it is not kept") from None


def _compare(before: ModelProto, after: ModelProto, feeds: Mapping[str, np.ndarray]
             ) -> RewriteRecord:
    want, got = _run_apart(before, feeds, "original"), _run_apart(after, feeds, "lowered")
    worst, scale = 0.0, 1.0
    for w, g in zip(want, got, strict=True):
        w64, g64 = np.asarray(w, np.float64), np.asarray(g, np.float64)
        if w64.shape != g64.shape:
            raise ModelError(f"the lowered model's output has shape {g64.shape}, the "
                             f"original's {w64.shape}")
        if w64.size:
            worst = max(worst, float(np.max(np.abs(w64 - g64))))
            scale = max(scale, float(np.max(np.abs(w64))))
    shapes = ", ".join(f"{k} {'x'.join(map(str, np.shape(v)))}" for k, v in feeds.items())
    if not worst <= 1e-4 * scale:
        raise ModelError(f"the lowered model's outputs differ from the original's by {worst:.3g} "
                         f"on {shapes} (ONNX Runtime); it is not kept")
    return RewriteRecord("the model", "checked", (
        f"ONNX Runtime gives the same outputs as the original's on {shapes} (max difference "
        f"{worst:.3g})"))
