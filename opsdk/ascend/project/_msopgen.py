"""The msopgen IR JSON of an operator: the input of CANN's ``msopgen gen -i <op>.json``.

Field names and spellings follow msopgen's parser (``op_info_ir_json.py``) and its
``config/transform.json``: ``param_type`` required/optional, one ``format`` per ``type``,
types from INPUT_OUTPUT_DTYPE_MAP (``fp16``, ``float``, ...), attr types from
IR_ATTR_TYPE_MAP (``int``, ``float``, ``bool``, ``string``, ``list_int``, ``list_float``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...spec import OpSpec
from .._op import MSOPGEN_DTYPES, CannOp, CannParam, cann_op

__all__ = ["msopgen_json", "msopgen_json_many", "msopgen_data", "MSOPGEN_ATTR_TYPES",
           "MSOPGEN_IO_TYPES"]

#: Attribute type names msopgen accepts (IR_ATTR_TYPE_MAP keys).
MSOPGEN_ATTR_TYPES = frozenset(
    "int float string bool type list_int list_string list_bool list_list_int tensor "
    "list_float list_tensor list_type".split()
)
#: Tensor type names msopgen accepts (INPUT_OUTPUT_DTYPE_MAP keys, single types).
MSOPGEN_IO_TYPES = frozenset(
    "float bool int32 int64 half uint32 uint64 uint1 int2 int8 int16 uint8 uint16 qint8 qint16 "
    "qint32 quint8 quint16 fp16 bf16 fp32 float16 bfloat16 float32 double complex32 complex64 "
    "complex128 string resource".split()
)


def _param(p: CannParam) -> dict[str, Any]:
    return {
        "name": p.name,
        "param_type": p.param_type,
        "format": ["ND"] * len(p.dtypes),
        "type": [MSOPGEN_DTYPES[d] for d in p.dtypes],
    }


def _default(attr_type: str, value: Any) -> Any:
    if attr_type == "float":
        return float(value)
    if attr_type == "floats":
        return [float(v) for v in value]
    return value


def msopgen_data(
    spec: OpSpec, op_type: str | None = None, *, op: CannOp | None = None
) -> list[dict[str, Any]]:
    """The msopgen IR description as Python data (a one-element list, as msopgen reads it).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, Attr, TFloat
        >>> s = OpSpec("MyOp", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            attrs=[Attr("pads", "ints", [1, 1])], types={"T": TFloat})
        >>> d = msopgen_data(s)[0]
        >>> d["input_desc"][0]["type"], d["attr"][0]["type"], d["attr"][0]["default_value"]
        (['fp16', 'float'], 'list_int', [1, 1])
    """
    op = op if op is not None else cann_op(spec, op_type=op_type)
    attrs = []
    for a in op.attrs:
        item: dict[str, Any] = {
            "name": a.name,
            "param_type": "required" if a.required else "optional",
        }
        item["type"] = a.msopgen_type
        if not a.required:
            item["default_value"] = _default(a.type, a.default)
        attrs.append(item)
    entry: dict[str, Any] = {
        "op": op.name,
        "input_desc": [_param(p) for p in op.inputs],
        "output_desc": [_param(p) for p in op.outputs],
    }
    if attrs:
        entry["attr"] = attrs
    entry["_generated"] = op.banner
    return [entry]


def msopgen_json(spec: OpSpec, op_type: str | None = None, *, op: CannOp | None = None) -> str:
    """The msopgen IR JSON text (``msopgen gen -i <snake>.json -f onnx -c ai_core-<soc> -lan cpp``).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, TFloat
        >>> s = OpSpec("MyOp", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": TFloat})
        >>> '"op": "MyOp"' in msopgen_json(s)
        True
    """
    return json.dumps(msopgen_data(spec, op_type, op=op), indent=4) + "\n"


def msopgen_json_many(ops: Sequence[tuple[OpSpec, CannOp]]) -> str:
    """The msopgen IR JSON of several operators (each a spec and its CANN description), in
    order; the package's build.sh runs ``msopgen gen -op <type>`` once per operator (``-m 1``
    after the first) because msopgen generates one operator per run.

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, TFloat
        >>> a = OpSpec("OpA", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": TFloat})
        >>> import json
        >>> ops = [(a, cann_op(a)), (a, cann_op(a, op_type="OpACustom"))]
        >>> [e["op"] for e in json.loads(msopgen_json_many(ops))]
        ['OpA', 'OpACustom']
    """
    data = [entry for spec, op in ops for entry in msopgen_data(spec, op=op)]
    return json.dumps(data, indent=4) + "\n"
