"""CANN's built-in operators: their types and signatures, and how an opsdk operator compares.

The signatures come from the ``REG_OP(<type>) ... OP_END_FACTORY_REG(<type>)`` declarations
of a toolkit's built-in op protos (``opp/built-in/op_proto/inc/*.h``) when a toolkit is
installed, else from ``data/cann_builtin_ops.txt`` (names and signatures as read in the
public CANN 8.1.RC1 toolkit; its header says where from). Only names are kept: input and
output names (``?`` optional, ``*`` dynamic) and attribute names with their CANN types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..spec import OpSpec

__all__ = ["BuiltinSignature", "parse_op_protos", "fallback_signatures", "compare_signature"]

_DATA = Path(__file__).parent / "data" / "cann_builtin_ops.txt"
_BLOCK = re.compile(r"^[ \t]*REG_OP\([ \t]*([A-Za-z_]\w*)[ \t]*\)(.*?)"
                    r"OP_END_FACTORY_REG\([ \t]*(\w+)[ \t]*\)", re.S | re.M)
_ITEM = re.compile(r"\.\s*(INPUT|OPTIONAL_INPUT|DYNAMIC_INPUT|OUTPUT|DYNAMIC_OUTPUT|ATTR|"
                   r"REQUIRED_ATTR)\s*\(\s*(\w+)\s*(?:,\s*([A-Za-z]+))?")
_MARK = {"INPUT": "", "OPTIONAL_INPUT": "?", "DYNAMIC_INPUT": "*", "OUTPUT": "",
         "DYNAMIC_OUTPUT": "*"}
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
#: CANN's attribute types (``.ATTR(name, Float, ...)``) by opsdk's attribute type.
CANN_ATTR_TYPES = {"int": "Int", "float": "Float", "bool": "Bool", "string": "String",
                   "ints": "ListInt", "floats": "ListFloat"}


@dataclass(frozen=True)
class BuiltinSignature:
    """One built-in operator: input and output names (suffix ``?`` optional, ``*`` dynamic)
    and attributes as ``name:CannType`` (suffix ``?`` when it has a default)."""

    name: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()

    def line(self) -> str:
        """The data file's line: ``Type|inputs|outputs|attributes``.

        Example:
            >>> BuiltinSignature("Gelu", ("x",), ("y",)).line()
            'Gelu|x|y|'
        """
        return "|".join([self.name, *(",".join(p) for p in (self.inputs, self.outputs,
                                                              self.attrs))])


def _from_line(line: str) -> BuiltinSignature:
    name, ins, outs, attrs = line.split("|")
    return BuiltinSignature(name, *(tuple(p for p in s.split(",") if p)
                                    for s in (ins, outs, attrs)))


def parse_op_protos(text: str) -> dict[str, BuiltinSignature]:
    """The signatures of every ``REG_OP`` declaration in one op proto header's ``text``.

    Example:
        >>> parse_op_protos('REG_OP(Foo)\\n  .INPUT(x, TensorType({DT_FLOAT}))\\n'
        ...                 '  .OPTIONAL_INPUT(b, TensorType({DT_FLOAT}))\\n'
        ...                 '  .OUTPUT(y, TensorType({DT_FLOAT}))\\n  .ATTR(eps, Float, 1e-6f)\\n'
        ...                 '  .OP_END_FACTORY_REG(Foo)\\n')["Foo"].line()
        'Foo|x,b?|y|eps:Float?'
    """
    out: dict[str, BuiltinSignature] = {}
    for m in _BLOCK.finditer(_COMMENT.sub("", text)):
        name, body, end = m.groups()
        if name != end:
            continue
        ins: list[str] = []
        outs: list[str] = []
        attrs: list[str] = []
        for kind, pname, typ in _ITEM.findall(body):
            if kind.endswith("INPUT"):
                ins.append(pname + _MARK[kind])
            elif kind.endswith("OUTPUT"):
                outs.append(pname + _MARK[kind])
            else:
                attrs.append(f"{pname}:{typ}" + ("" if kind == "REQUIRED_ATTR" else "?"))
        out.setdefault(name, BuiltinSignature(name, tuple(ins), tuple(outs), tuple(attrs)))
    return out


@lru_cache(maxsize=1)
def fallback_signatures() -> dict[str, BuiltinSignature]:
    """opsdk's table of CANN 8.1.RC1's built-in operators (``data/cann_builtin_ops.txt``).

    Example:
        >>> fallback_signatures()["RmsNorm"].outputs
        ('y', 'rstd')
    """
    lines = _DATA.read_text(encoding="utf-8").splitlines()
    sigs = (_from_line(s) for s in lines if s.strip() and not s.startswith("#"))
    return {s.name: s for s in sigs}


def _names(params: tuple[str, ...]) -> list[str]:
    return [p.rstrip("?*") for p in params]


def _part(what: str, cann: list[str], ours: list[str]) -> str:
    if cann == ours:
        return f"{what} match ({', '.join(cann) or 'none'})"
    return (f"{what} differ (CANN's: {', '.join(cann) or 'none'}; spec.py's: "
            f"{', '.join(ours) or 'none'})")


def compare_signature(builtin: BuiltinSignature, spec: OpSpec) -> tuple[bool, str]:
    """(everything matches, what matches and what differs) between CANN's built-in operator
    and ``spec``: input and output names in order, attribute names with their types.

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, Attr
        >>> s = OpSpec("RmsNorm", domain="com.example",
        ...            inputs=[Input("x", "float32"), Input("gamma", "float32")],
        ...            outputs=[Output("y", "float32"), Output("rstd", "float32")],
        ...            attrs=[Attr("epsilon", "float", 1e-6)])
        >>> compare_signature(fallback_signatures()["RmsNorm"], s)
        (True, 'inputs match (x, gamma); outputs match (y, rstd); attributes match (epsilon:Float)')
    """
    ins = (_names(builtin.inputs), [i.name for i in spec.inputs])
    outs = (_names(builtin.outputs), [o.name for o in spec.outputs])
    attrs = (sorted(a.rstrip("?") for a in builtin.attrs),  # attributes go by name
             sorted(f"{a.name}:{CANN_ATTR_TYPES.get(a.type, a.type)}" for a in spec.attrs))
    same = ins[0] == ins[1] and outs[0] == outs[1] and attrs[0] == attrs[1]
    return same, "; ".join([_part("inputs", *ins), _part("outputs", *outs),
                            _part("attributes", *attrs)])
