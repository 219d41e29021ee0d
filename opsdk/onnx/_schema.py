"""ONNX schemas from specs: build, register (idempotently), and check custom nodes.

A registered schema carries a Python type-and-shape inference function that calls
``spec.infer``, so ``onnx.shape_inference.infer_shapes(strict_mode=True)`` infers through
custom nodes (symbolic dims included) and ``onnx.checker.check_model(full_check=True)``
accepts models holding them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import onnx
from onnx import AttributeProto, ModelProto, NodeProto
from onnx.defs import OpSchema

from ..errors import SpecError
from ..spec import Attr, OpSpec, TensorType
from ._model import (
    ModelError,
    attribute_value,
    has_shape,
    is_standard_domain,
    iter_all_nodes,
    make_type_proto,
    node_label,
    onnx_type_str,
    opset_version,
    tensor_type_of,
    topological_sort,
)

__all__ = [
    "make_schema",
    "register_schema",
    "unregister_schema",
    "registered_schemas",
    "register_all",
    "register_for_model",
    "infer_shapes",
    "known_specs",
    "node_attrs",
    "check_custom_node",
    "check_model",
    "onnx_attr",
    "ATTR_PROTO_TYPES",
]

#: The AttributeProto type of each spec attribute type (ONNX has no bool: int 0/1).
ATTR_PROTO_TYPES: dict[str, int] = {
    "int": AttributeProto.INT,
    "bool": AttributeProto.INT,
    "float": AttributeProto.FLOAT,
    "string": AttributeProto.STRING,
    "ints": AttributeProto.INTS,
    "floats": AttributeProto.FLOATS,
}
_SCHEMA_ATTR_TYPES: dict[int, OpSchema.AttrType] = {
    AttributeProto.INT: OpSchema.AttrType.INT,
    AttributeProto.FLOAT: OpSchema.AttrType.FLOAT,
    AttributeProto.STRING: OpSchema.AttrType.STRING,
    AttributeProto.INTS: OpSchema.AttrType.INTS,
    AttributeProto.FLOATS: OpSchema.AttrType.FLOATS,
}

_LOCK = threading.RLock()
_REGISTERED: dict[tuple[str, str, int], OpSpec] = {}


# ---------------------------------------------------------------------- attributes
def onnx_attr(attr: Attr, value: Any) -> AttributeProto:
    """An AttributeProto for a (resolved) value of ``attr``; bools become ints.

    Example:
        >>> onnx_attr(Attr("alpha", "float"), 0.5).f
        0.5
    """
    if attr.type == "bool":
        value = int(bool(value))
    return onnx.helper.make_attribute(attr.name, value, attr_type=ATTR_PROTO_TYPES[attr.type])


def _proto_value(spec: OpSpec, a: Attr, proto: AttributeProto, where: str) -> Any:
    expected = ATTR_PROTO_TYPES[a.type]
    if proto.type != expected:
        got = AttributeProto.AttributeType.Name(proto.type)
        want = AttributeProto.AttributeType.Name(expected)
        raise SpecError(
            f"{where}: attribute {a.name!r} is {got} ({attribute_value(proto)!r}), "
            f"{spec.name} expects {want} ({a.type}); write it as {a.type}"
        )
    value = attribute_value(proto)
    if a.type == "bool":
        if value not in (0, 1):
            raise SpecError(
                f"{where}: attribute {a.name!r} is a bool, expected 0 or 1, got {value}"
            )
        value = bool(value)
    return value


def node_attrs(spec: OpSpec, node: NodeProto, where: str | None = None) -> dict[str, Any]:
    """The node's attributes checked against the spec, defaults filled (resolve_attrs).

    Raises SpecError naming the node for an unknown, missing or mistyped attribute.
    """
    where = where or f"node {node_label(node)}"
    amap = spec.attr_map
    values: dict[str, Any] = {}
    for proto in node.attribute:
        a = amap.get(proto.name)
        if a is None:
            known = ", ".join(amap) or "none"
            raise SpecError(
                f"{where}: unknown attribute {proto.name!r}; {spec.name} declares: {known}"
            )
        values[a.name] = _proto_value(spec, a, proto, where)
    try:
        return spec.resolve_attrs(values)
    except SpecError as e:
        raise SpecError(f"{where}: {e}") from None


# -------------------------------------------------------------------------- schema
def make_schema(spec: OpSpec) -> OpSchema:
    """Build the ONNX OpSchema of ``spec`` with its shape inference attached.

    Example:
        >>> import opsdk
        >>> s = make_schema(opsdk.registry.find_operator("ThresholdedRelu").spec)
        >>> (s.domain, s.name, s.since_version)
        ('com.opsdk', 'ThresholdedRelu', 1)
    """
    param = OpSchema.FormalParameter
    opt = OpSchema.FormalParameterOption

    def type_str(t: str) -> str:
        return t if t in spec.types else onnx_type_str(t)

    inputs = [
        param(
            i.name,
            type_str(i.type),
            i.doc,
            param_option=opt.Optional if i.optional else opt.Single,
        )
        for i in spec.inputs
    ]
    outputs = [param(o.name, type_str(o.type), o.doc,
                     param_option=opt.Optional if o.optional else opt.Single)
               for o in spec.outputs]
    used = {i.type for i in spec.inputs} | {o.type for o in spec.outputs}
    constraints = [
        (tv, [onnx_type_str(d) for d in dts], f"{tv}: one of {', '.join(dts)}")
        for tv, dts in spec.types.items()
        if tv in used
    ]
    attributes = [_schema_attr(a) for a in spec.attrs]
    schema = OpSchema(
        spec.name,
        spec.domain,
        spec.version,
        spec.doc or f"{spec.name} (opsdk operator)",
        inputs=inputs,
        outputs=outputs,
        type_constraints=constraints,
        attributes=attributes,
    )
    schema.set_type_and_shape_inference_function(_inference_function(spec))
    return schema


def _schema_attr(a: Attr) -> OpSchema.Attribute:
    if a.required:
        kind = _SCHEMA_ATTR_TYPES[ATTR_PROTO_TYPES[a.type]]
        return OpSchema.Attribute(a.name, kind, a.doc, required=True)
    return OpSchema.Attribute(a.name, onnx_attr(a, a.default), a.doc)


def _inference_function(spec: OpSpec) -> Callable[[Any], None]:
    def infer(ctx: Any) -> None:
        where = ctx.get_display_name() or f"node {spec.name}"
        types: list[TensorType | None] = []
        for i in range(ctx.get_num_inputs()):
            if not ctx.has_input(i):
                types.append(None)
                continue
            t = tensor_type_of(ctx.get_input_type(i))
            if t is None:
                return  # input type not known (yet): nothing to infer
            types.append(t)
        attrs = {}
        for a in spec.attrs:
            proto = ctx.get_attribute(a.name)
            if proto is not None:
                attrs[a.name] = _proto_value(spec, a, proto, where)
        try:
            resolved = spec.resolve_attrs(attrs)
            if all(t is None or has_shape(t) for t in types):
                out_types = spec.infer(types, resolved)
                protos = [make_type_proto(t.dtype, t.shape) for t in out_types]
            else:
                binding = spec.bind_types([t.dtype if t else None for t in types])
                protos = [
                    make_type_proto(spec.output_dtype(o, binding), None) for o in spec.outputs
                ]
        except SpecError as e:
            raise SpecError(f"{where}: {e}") from None
        for idx, proto in enumerate(protos[: ctx.get_num_outputs()]):
            if ctx.has_output(idx):
                ctx.set_output_type(idx, proto)

    return infer


# -------------------------------------------------------------------- registration
def register_schema(spec: OpSpec) -> OpSchema:
    """Register ``spec``'s schema with ONNX; calling it again is a no-op.

    A different spec under the same (domain, name, version), e.g. after editing spec.py,
    replaces the earlier registration.

    Example:
        >>> register_schema(spec)  # doctest: +SKIP
        >>> onnx.defs.has("ThresholdedRelu", "com.opsdk")  # doctest: +SKIP
        True
    """
    key = spec.op_type
    with _LOCK:
        if _REGISTERED.get(key) is spec and onnx.defs.has(spec.name, spec.version, spec.domain):
            return onnx.defs.get_schema(spec.name, spec.version, spec.domain)
        schema = make_schema(spec)
        _deregister(key)
        _reference_table_built()
        try:
            onnx.defs.register_schema(schema)
        except onnx.defs.SchemaError as e:
            raise SpecError(f"{spec.name}: ONNX rejected the schema built from spec.py: {e}") from e
        _REGISTERED[key] = spec
        return schema


def _reference_table_built() -> None:
    """Import onnx.reference before opsdk's first schema: on its first import it tables
    every schema by name alone and refuses one name in two domains (NotImplementedError for
    com.opsdk's Gelu beside the standard Gelu), which broke onnxscript and torch's dynamo
    exporter in a process that had exported an opsdk model. Built first, it holds the
    standard ops only (about 25 ms, once)."""
    try:
        import onnx.reference  # noqa: F401
    except Exception:  # noqa: BLE001 - an onnx without it, or another library's schemas
        pass


def _deregister(key: tuple[str, str, int]) -> None:
    domain, name, version = key
    if onnx.defs.has(name, version, domain):
        existing = onnx.defs.get_schema(name, version, domain)
        if existing.since_version == version:
            onnx.defs.deregister_schema(name, version, domain)
    _REGISTERED.pop(key, None)


def unregister_schema(spec: OpSpec) -> bool:
    """Remove ``spec``'s schema; returns False when it was not registered.

    Example:
        >>> unregister_schema(spec)  # doctest: +SKIP
        True
    """
    with _LOCK:
        was = spec.op_type in _REGISTERED
        _deregister(spec.op_type)
        return was


def registered_schemas() -> list[tuple[str, str, int]]:
    """(domain, name, version) of every schema opsdk registered in this process.

    Example:
        >>> ("com.opsdk", "ThresholdedRelu", 1) in registered_schemas()  # doctest: +SKIP
        True
    """
    with _LOCK:
        return sorted(_REGISTERED)


def register_all(extra: Iterable[OpSpec] = ()) -> list[OpSpec]:
    """Register every operator opsdk can find (and ``extra`` specs); returns them.

    Example:
        >>> [s.name for s in register_all()]  # doctest: +SKIP
        ['ThresholdedRelu', ...]
    """
    from ._ops import catalog

    specs = list(catalog(extra).values())
    for spec in specs:
        register_schema(spec)
    return specs


def known_specs(extra: Iterable[OpSpec] = ()) -> dict[tuple[str, str], OpSpec]:
    """Specs by (domain, name): the registry's, then those registered here, then ``extra``."""
    from ._ops import catalog

    found = catalog()
    with _LOCK:
        found.update({(d, n): s for (d, n, _), s in _REGISTERED.items()})
    found.update({(s.domain, s.name): s for s in extra})
    return found


def register_for_model(
    model: ModelProto, extra: Iterable[OpSpec] = ()
) -> dict[tuple[str, str], OpSpec]:
    """Register the schemas of every opsdk operator ``model`` uses; returns them by name."""
    wanted = {
        (n.domain, n.op_type)
        for n in iter_all_nodes(model.graph)
        if not is_standard_domain(n.domain)
    }
    if not wanted:
        return {}
    found = {k: v for k, v in known_specs(extra).items() if k in wanted}
    for spec in found.values():
        register_schema(spec)
    return found


def infer_shapes(model: ModelProto, extra: Iterable[OpSpec] = (), **kwargs: Any) -> ModelProto:
    """``onnx.shape_inference.infer_shapes`` after registering the schemas of the opsdk
    operators ``model`` uses, so their nodes' outputs get types (and shapes) from spec.py
    instead of none. ``kwargs`` go to ONNX (``strict_mode``, ``check_type``, ...).

    Example:
        >>> typed = infer_shapes(onnx.load("with_custom_nodes.onnx"))  # doctest: +SKIP
    """
    register_for_model(model, extra)
    return onnx.shape_inference.infer_shapes(model, **kwargs)


# ------------------------------------------------------------------------ checking
def check_custom_node(
    spec: OpSpec, node: NodeProto, model: ModelProto | None = None, index: int | None = None
) -> dict[str, Any]:
    """Check one custom node against its spec; return its resolved attributes.

    Raises SpecError naming the node: input/output counts, attributes, opset import.
    """
    where = f"node {node_label(node, index)}"
    n_req = sum(1 for i in spec.inputs if not i.optional)
    n_in = len(node.input)
    while n_in and not node.input[n_in - 1]:
        n_in -= 1
    if not n_req <= n_in <= len(spec.inputs) or any(
        not node.input[i] for i, inp in enumerate(spec.inputs[:n_in]) if not inp.optional
    ):
        names = ", ".join(i.name + ("?" if i.optional else "") for i in spec.inputs)
        raise SpecError(
            f"{where}: has {len(node.input)} inputs {list(node.input)}, {spec.name} takes "
            f"{n_req}{'' if n_req == len(spec.inputs) else f' to {len(spec.inputs)}'} ({names})"
        )
    n_out_req = 1 + max((k for k, o in enumerate(spec.outputs) if not o.optional), default=0)
    if not n_out_req <= len(node.output) <= len(spec.outputs) or any(
            not node.output[k] for k, o in enumerate(spec.outputs[:len(node.output)])
            if not o.optional):
        raise SpecError(
            f"{where}: has {len(node.output)} outputs, {spec.name} produces "
            f"{len(spec.outputs)} ("
            + ", ".join(o.name + ("?" if o.optional else "") for o in spec.outputs)
            + "; an optional output '?' may be left out or named '')"
        )
    if model is not None:
        imported = opset_version(model, spec.domain)
        if imported is None:
            raise SpecError(
                f"{where}: the model has no opset import for domain {spec.domain!r}; add "
                f"onnx.helper.make_opsetid({spec.domain!r}, {spec.version})"
            )
        if imported < spec.version:
            raise SpecError(
                f"{where}: the model imports {spec.domain!r} version {imported}, but "
                f"{spec.name} exists since version {spec.version}; import version {spec.version}"
            )
    return node_attrs(spec, node, where)


def check_model(
    model: ModelProto, *, extra: Iterable[OpSpec] = (), full: bool = True
) -> ModelProto:
    """Check ``model`` with opsdk's custom-node checks, ONNX shape inference and checker.

    Returns the model with inferred value types. Every problem is raised as SpecError or
    ModelError naming the node, never as a bare ONNX error.

    Example:
        >>> inferred = check_model(onnx.load("my_op.onnx"))  # doctest: +SKIP
    """
    topological_sort(model.graph)  # names a node reading an undefined value, or a cycle
    specs = register_for_model(model, extra)
    local = {(f.domain, f.name) for f in model.functions}
    for idx, node in enumerate(model.graph.node):
        if is_standard_domain(node.domain):
            continue
        spec = specs.get((node.domain, node.op_type))
        if spec is not None:
            check_custom_node(spec, node, model, idx)
        elif (node.domain, node.op_type) not in local:
            raise SpecError(
                f"node {node_label(node, idx)}: no opsdk operator {node.domain}::{node.op_type} "
                f"is registered and the model carries no function for it; create it with "
                f"'opsdk new {node.op_type}' or add its folder to OPSDK_OPERATORS_PATH"
            )
    return run_onnx_checks(model, full=full)


def run_onnx_checks(model: ModelProto, *, full: bool = True) -> ModelProto:
    """ONNX's strict shape inference then checker, their errors re-raised with context."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except SpecError:
        raise
    except Exception as e:  # InferenceError, ValidationError, or a shape function's error
        raise ModelError(f"ONNX shape inference failed: {_first_line(e)}") from None
    try:
        onnx.checker.check_model(inferred, full_check=full)
    except Exception as e:
        raise ModelError(f"the ONNX checker rejects the model: {_first_line(e)}") from None
    return inferred


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " ".join(lines[:3]) if lines else type(e).__name__
