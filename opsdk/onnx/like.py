"""``opsdk new MyOp --like onnx:<Op>``: a spec outline from ONNX's own schema.

:func:`like_onnx` reads ``onnx.defs.get_schema`` and returns plain data the scaffolder
renders into spec.py: inputs, outputs, attributes with defaults, type constraints mapped
to the dtypes opsdk supports, and the doc.
"""

from __future__ import annotations

from typing import Any

import onnx
from onnx.defs import OpSchema

from ..dtypes import ALL_DTYPES, DTYPES
from ..errors import SpecError
from ..naming import snake_case

__all__ = ["like_onnx", "ONNX_TYPE_TO_DTYPE"]

#: ONNX type strings -> opsdk dtype names (others have no opsdk kernel type).
ONNX_TYPE_TO_DTYPE = {d.onnx_type: d.name for d in DTYPES.values()}
_ATTR_TYPES = {
    OpSchema.AttrType.INT: "int",
    OpSchema.AttrType.FLOAT: "float",
    OpSchema.AttrType.STRING: "string",
    OpSchema.AttrType.INTS: "ints",
    OpSchema.AttrType.FLOATS: "floats",
}
_EMPTY = {"int": 0, "float": 0.0, "string": "", "ints": [], "floats": []}


def like_onnx(op_type: str, domain: str = "", version: int | None = None) -> dict[str, Any]:
    """Inputs, outputs, attributes, type constraints and doc of an ONNX operator.

    Args:
        op_type: the ONNX operator, e.g. ``"GridSample"``.
        domain: its domain ('' for ai.onnx, 'ai.onnx.ml', ...).
        version: the opset version to read (default: the newest).

    Returns:
        ``{"op_type", "domain", "since_version", "doc", "inputs": [{"name", "type",
        "optional", "doc"}], "outputs": [...], "attrs": [{"name", "type", "default"?,
        "doc"}], "types": {"T": [dtypes]}, "notes": [str]}``. Input and output names are
        snake_cased (ONNX maps them by position); attribute names are kept, so the
        operator can replace the ONNX node (``opsdk rewrite --replace``). A required
        attribute has no "default".

    Raises:
        SpecError: ``op_type`` is not an ONNX operator.

    Example:
        >>> outline = like_onnx("GridSample")
        >>> [i["name"] for i in outline["inputs"]], outline["types"]["T2"]
        (['x', 'grid'], ['float16', 'bfloat16', 'float32', 'float64'])
        >>> [(a["name"], a["default"]) for a in outline["attrs"]][:1]
        [('align_corners', 0)]
    """
    schema = _schema(op_type, domain, version)
    notes: list[str] = []
    used_types = {p.type_str for p in (*schema.inputs, *schema.outputs)}
    types = {}
    for tc in schema.type_constraints:
        if tc.type_param_str not in used_types:
            continue
        dts = [ONNX_TYPE_TO_DTYPE[t] for t in tc.allowed_type_strs if t in ONNX_TYPE_TO_DTYPE]
        types[tc.type_param_str] = sorted(dts, key=ALL_DTYPES.index)
        dropped = [t for t in tc.allowed_type_strs if t not in ONNX_TYPE_TO_DTYPE]
        if dropped:
            notes.append(f"type {tc.type_param_str}: dropped {', '.join(dropped)} (no opsdk dtype)")
    input_types = {p.type_str for p in schema.inputs}
    for tv, dts in types.items():
        if tv not in input_types and len(dts) > 1:
            types[tv] = ["float32"] if "float32" in dts else dts[:1]
            notes.append(
                f"type {tv} is bound by no input; narrowed to {types[tv][0]} (an opsdk type "
                "variable that only outputs use needs a single dtype)"
            )
    return {
        "op_type": schema.name,
        "domain": schema.domain,
        "since_version": schema.since_version,
        "doc": _clean(schema.doc or ""),
        "inputs": [_param(p, notes, "input") for p in schema.inputs],
        "outputs": [_param(p, notes, "output") for p in schema.outputs],
        "attrs": [a for a in (_attr(v, notes) for v in schema.attributes.values()) if a],
        "types": types,
        "notes": notes,
    }


def _schema(op_type: str, domain: str, version: int | None) -> OpSchema:
    try:
        if version is None:
            return onnx.defs.get_schema(op_type, domain)
        return onnx.defs.get_schema(op_type, version, domain)
    except onnx.defs.SchemaError:
        where = f" in domain {domain!r}" if domain else ""
        at = f" at opset {version}" if version is not None else ""
        raise SpecError(
            f"--like onnx:{op_type}: ONNX has no operator {op_type!r}{where}{at}; names are "
            "case-sensitive, e.g. onnx:GridSample, onnx:LayerNormalization"
        ) from None


def _param(p: Any, notes: list[str], kind: str) -> dict[str, Any]:
    option = OpSchema.FormalParameterOption
    type_str = p.type_str
    out: dict[str, Any] = {
        "name": snake_case(p.name),
        "type": ONNX_TYPE_TO_DTYPE.get(type_str, type_str),
        "optional": p.option == option.Optional,
        "doc": _clean(p.description or ""),
    }
    if p.option == option.Variadic:
        out["variadic"] = True
        notes.append(
            f"{kind} {p.name!r} is variadic in ONNX; opsdk specs have a fixed number of "
            "inputs and outputs: list as many as you need"
        )
    return out


def _attr(a: Any, notes: list[str]) -> dict[str, Any] | None:
    kind = _ATTR_TYPES.get(a.type)
    if kind is None:
        notes.append(f"attribute {a.name!r} ({a.type.name}) has no opsdk attribute type; left out")
        return None
    out: dict[str, Any] = {"name": a.name, "type": kind, "doc": _clean(a.description or "")}
    if a.required:
        return out
    if a.default_value.type != onnx.AttributeProto.UNDEFINED:
        value = onnx.helper.get_attribute_value(a.default_value)
        out["default"] = value.decode() if isinstance(value, bytes) else value
    else:
        out["default"] = _EMPTY[kind]
        notes.append(
            f"attribute {a.name!r} is optional without a default in ONNX; "
            f"{_EMPTY[kind]!r} stands for 'not given'"
        )
    return out


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in (text or "").strip().splitlines())
