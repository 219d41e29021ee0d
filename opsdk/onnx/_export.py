"""Export: single-op models, and custom nodes added to existing models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import onnx
from onnx import ModelProto, NodeProto

from .._generated import BANNER
from ..errors import SpecError
from ..spec import Dim, OpSpec, TensorType
from ._functions import MIN_FUNCTION_IR, attach_function
from ._model import make_type_proto, opset_version
from ._names import FreshNames
from ._schema import check_model, onnx_attr, register_schema

__all__ = [
    "DEFAULT_OPSET",
    "BANNER",
    "resolve_spec",
    "make_node",
    "export_model",
    "add_node",
    "insert_after",
    "to_text",
]

#: ai.onnx opset of exported models: the newest one ATC's ONNX parser accepts.
DEFAULT_OPSET = 15


def resolve_spec(op: OpSpec | str) -> OpSpec:
    """An OpSpec, or the spec of the operator named ``op`` (MyOp, my_op, domain::MyOp)."""
    if isinstance(op, OpSpec):
        return op
    from ..registry import find_operator

    return find_operator(op).spec


def make_node(
    op: OpSpec | str,
    inputs: Sequence[str],
    outputs: Sequence[str] | None = None,
    attrs: Mapping[str, Any] | None = None,
    name: str | None = None,
) -> NodeProto:
    """A NodeProto calling ``op``; every attribute is written, defaults included.

    Example:
        >>> n = make_node("ThresholdedRelu", ["x"], ["y"], {"alpha": 0.5})
        >>> (n.domain, n.op_type, n.attribute[0].f)
        ('com.opsdk', 'ThresholdedRelu', 0.5)
    """
    spec = resolve_spec(op)
    resolved = spec.resolve_attrs(dict(attrs or {}))
    node = onnx.helper.make_node(
        spec.name,
        list(inputs),
        list(outputs) if outputs is not None else [o.name for o in spec.outputs],
        name=name or None,
        domain=spec.domain,
    )
    node.attribute.extend(onnx_attr(a, resolved[a.name]) for a in spec.attrs)
    return node


def _input_dtypes(spec: OpSpec, dtype: str | Mapping[str, str] | None) -> dict[str, str]:
    per_input = dict(dtype) if isinstance(dtype, Mapping) else {}
    for key in per_input:
        if key not in {i.name for i in spec.inputs}:
            raise SpecError(f"{spec.name}: --dtype names unknown input {key!r}")
    out: dict[str, str] = {}
    for inp in spec.inputs:
        allowed = spec.allowed_dtypes(inp.type)
        want = per_input.get(inp.name, dtype if isinstance(dtype, str) else None)
        if want is None:
            want = "float32" if "float32" in allowed else allowed[0]
        elif want not in allowed:
            raise SpecError(
                f"{spec.name}: input {inp.name!r} cannot be {want}; allowed: {', '.join(allowed)}"
            )
        out[inp.name] = want
    return out


def _input_shapes(
    spec: OpSpec, shapes: Mapping[str, Sequence[Dim]] | None
) -> dict[str, tuple[Dim, ...]]:
    given = {k: tuple(v) for k, v in (shapes or {}).items()}
    names = [i.name for i in spec.inputs]
    for key in given:
        if key not in names:
            raise SpecError(f"{spec.name}: --shape names unknown input {key!r}; inputs: {names}")
    case = spec.cases[0].shapes if spec.cases else {}
    out: dict[str, tuple[Dim, ...]] = {}
    for inp in spec.inputs:
        if inp.name in given:
            out[inp.name] = given[inp.name]
        elif inp.optional:
            continue
        elif inp.name in case:
            out[inp.name] = tuple(case[inp.name])
        elif inp.rank is not None:
            out[inp.name] = tuple(f"{inp.name}_d{k}" for k in range(inp.rank))
        else:
            raise SpecError(
                f"{spec.name}: no shape for input {inp.name!r} (spec.py fixes no rank and "
                f"proposes no Case); pass --shape {inp.name}=1,3,224,224 (names allowed: N,3,H,W)"
            )
    return out


def export_model(
    op: OpSpec | str,
    *,
    shapes: Mapping[str, Sequence[Dim]] | None = None,
    dtype: str | Mapping[str, str] | None = None,
    attrs: Mapping[str, Any] | None = None,
    opset: int = DEFAULT_OPSET,
    with_function: bool = False,
) -> ModelProto:
    """A checked single-node model of ``op`` with its custom-domain opset import.

    Args:
        op: the spec or operator name.
        shapes: input name -> dims (int, or str for a symbolic dim).
        dtype: one dtype for every input, or input name -> dtype (default float32).
        attrs: attribute values (defaults filled from the spec).
        opset: the ai.onnx opset to import.
        with_function: embed the spec's fallback function as a model-local function.

    Example:
        >>> m = export_model("ThresholdedRelu", shapes={"x": ("N", 16)}, attrs={"alpha": 0.5})
        >>> [(o.domain, o.version) for o in m.opset_import]
        [('', 15), ('com.opsdk', 1)]
    """
    spec = resolve_spec(op)
    register_schema(spec)
    dts = _input_dtypes(spec, dtype)
    in_shapes = _input_shapes(spec, shapes)
    resolved = spec.resolve_attrs(dict(attrs or {}))
    present = [i for i in spec.inputs if i.name in in_shapes]
    types = [
        TensorType(in_shapes[i.name], dts[i.name]) if i.name in in_shapes else None
        for i in spec.inputs
    ]
    out_types = spec.infer(types, resolved)
    node_inputs = [i.name if i.name in in_shapes else "" for i in spec.inputs]
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    node = make_node(spec, node_inputs, None, resolved, name=spec.snake_name)
    graph = onnx.helper.make_graph(
        [node],
        spec.snake_name,
        [_value_info(i.name, TensorType(in_shapes[i.name], dts[i.name])) for i in present],
        [_value_info(o.name, t) for o, t in zip(spec.outputs, out_types, strict=True)],
    )
    model = _new_model(graph, spec, opset)
    if with_function:
        attach_function(model, spec)
    return check_model(model, extra=[spec])


def _value_info(name: str, t: TensorType) -> onnx.ValueInfoProto:
    vi = onnx.ValueInfoProto(name=name)
    vi.type.CopyFrom(make_type_proto(t.dtype, t.shape))
    return vi


def _new_model(graph: onnx.GraphProto, spec: OpSpec, opset: int) -> ModelProto:
    if not onnx.defs.onnx_opset_version() >= opset >= 1:
        raise SpecError(
            f"--opset {opset}: ai.onnx opsets run from 1 to {onnx.defs.onnx_opset_version()}"
        )
    imports = [
        onnx.helper.make_opsetid("", opset),
        onnx.helper.make_opsetid(spec.domain, spec.version),
    ]
    ir = onnx.helper.find_min_ir_version_for(imports[:1], ignore_unknown=True)
    ir = max(ir, MIN_FUNCTION_IR)
    model = onnx.helper.make_model(
        graph,
        opset_imports=imports,
        ir_version=ir,
        producer_name="opsdk",
        producer_version=_version(),
        doc_string=f"{spec.domain}::{spec.name} v{spec.version}; {BANNER}",
    )
    return model


def _version() -> str:
    try:
        from .._version import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "0"


# ------------------------------------------------------------- editing a model
def _ensure_import(model: ModelProto, spec: OpSpec) -> None:
    have = opset_version(model, spec.domain)
    if have is None:
        model.opset_import.append(onnx.helper.make_opsetid(spec.domain, spec.version))
    elif have < spec.version:
        raise SpecError(
            f"{spec.name}: the model imports {spec.domain!r} version {have}; {spec.name} "
            f"needs version {spec.version}. Update the model's opset import first"
        )


def _names_in(model: ModelProto) -> set[str]:
    g = model.graph
    names = {i.name for i in g.input} | {t.name for t in g.initializer}
    names |= {o for n in g.node for o in n.output} | {n.name for n in g.node if n.name}
    return names


def add_node(
    model: ModelProto,
    op: OpSpec | str,
    inputs: Sequence[str],
    outputs: Sequence[str] | None = None,
    attrs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    as_output: bool = False,
) -> NodeProto:
    """Append a custom node to ``model`` (in place) and import its domain.

    Args:
        model: the model to edit.
        op: the operator (spec or name).
        inputs: existing value names, in spec input order ("" skips an optional input).
        outputs: names for the results (default: fresh names derived from the op).
        attrs: attribute values.
        name: the node name (default: a fresh one).
        as_output: also make the results graph outputs.

    Example:
        >>> node = add_node(model, "ThresholdedRelu", ["features"], attrs={"alpha": 0.1})
        ...  # doctest: +SKIP
    """
    spec = resolve_spec(op)
    register_schema(spec)
    values = _names_in(model)
    for i in inputs:
        if i and i not in values:
            raise SpecError(f"{spec.name}: input {i!r} is not a value of the model")
    fresh = FreshNames(model)
    node_name = name or fresh(spec.snake_name)
    fresh.take(node_name)
    if outputs is None:
        outputs = [fresh(f"{node_name}_{o.name}") for o in spec.outputs]
    else:
        clash = [o for o in outputs if o in values]
        if clash:
            raise SpecError(f"{spec.name}: output name(s) {clash} already exist in the model")
    node = make_node(spec, inputs, outputs, attrs, name=node_name)
    _ensure_import(model, spec)
    model.graph.node.append(node)
    if as_output:
        model.graph.output.extend(onnx.ValueInfoProto(name=o) for o in outputs)
    return model.graph.node[-1]  # the graph's copy, so callers' edits stick


def insert_after(
    model: ModelProto,
    value: str,
    op: OpSpec | str,
    attrs: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
) -> NodeProto:
    """Insert a one-input, one-output custom node on ``value``: every reader sees its result.

    The value keeps its name (so graph outputs and readers are unchanged); the node that
    produced it now writes ``<value>_pre``.

    Example:
        >>> insert_after(model, "conv_out", "ThresholdedRelu", {"alpha": 0.1})  # doctest: +SKIP
    """
    spec = resolve_spec(op)
    g = model.graph
    producer = next((n for n in g.node if value in n.output), None)
    if producer is None:
        raise SpecError(
            f"{spec.name}: no node produces {value!r}; insert_after needs a node output "
            "(use add_node for graph inputs)"
        )
    fresh = FreshNames(model)
    pre = fresh(f"{value}_pre")
    producer.output[list(producer.output).index(value)] = pre
    for vi in list(g.value_info):
        if vi.name == value:
            g.value_info.remove(vi)
    idx = list(g.node).index(producer)
    added = add_node(model, spec, [pre], [fresh(f"{value}_new")], attrs, name=name)
    added.output[0] = value
    nodes = list(g.node)
    nodes.insert(idx + 1, nodes.pop())
    del g.node[:]
    g.node.extend(nodes)
    return g.node[idx + 1]


def to_text(model: ModelProto) -> str:
    """The ONNX textual form of ``model`` (used for golden files).

    Example:
        >>> print(to_text(export_model("ThresholdedRelu", shapes={"x": (2,)})))  # doctest: +SKIP
    """
    return onnx.printer.to_text(model)
