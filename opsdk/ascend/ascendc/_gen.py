# ruff: noqa: E501  (the emitter's C++ lines keep their natural lengths)
"""AI Core kernels (Ascend C) generated from an operator's ONNX decomposition.

:func:`prepare` and :func:`generate_elementwise` turn the decomposition registered with ``@SPEC.register_function`` into an
Ascend C kernel and its host tiling, when the decomposition is elementwise (arithmetic,
comparisons, Where, Cast/CastLike, Constant, Exp/Log/Tanh/Erf/Sqrt/Reciprocal/Abs/Relu/
Sigmoid/Neg, Pow with a constant exponent, Min/Max, Clip, Identity, and LabelEncoder of a
string attribute). Otherwise it raises :class:`GenerateRefused` with the reason, and the
operator keeps a TODO kernel and runs on AI CPU.

The kernel splits the elements over the cores (the last core takes the tail), walks each
core's range in tiles sized from the SoC's Unified Buffer (32-byte aligned, double-buffered
queues), computes in float32 whatever the I/O dtype (float16 and bfloat16 are widened on
load and rounded once on store), and keeps temporaries in one ``TBuf``.

The public entry, :func:`opsdk.ascend.ascendc.generate` (:mod:`._gen_reduce`), sends a
decomposition with reductions to the row kernel.

Example:
    >>> from opsdk.registry import load_spec
    >>> from opsdk.ascend.ascendc import generate
    >>> kernel = generate(load_spec("operators/thresholded_relu"))  # doctest: +SKIP
    >>> "extern \\"C\\" __global__ __aicore__ void thresholded_relu" in kernel.source  # doctest: +SKIP
    True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from onnx import AttributeProto, FunctionProto, NodeProto, numpy_helper

from ...errors import SpecError
from ...spec import Input, OpSpec, Output
from ..aicore_apis import UB_RESERVED
from ..errors import GenerateRefused
from ..spellings import ASCENDC_TYPES as _CPP_TYPES
from ._tiling import Tiling, TilingField

__all__ = ["AicoreKernel", "prepare", "generate_elementwise", "GenerateRefused", "GRANULE",
           "BUFFER_NUM", "OPSET", "TuningRow"]

#: Elements per 256-byte float32 repeat: tiles and compute counts are multiples of it.
GRANULE = 64
#: Buffers per queue (double buffering).
BUFFER_NUM = 2
#: The ai.onnx opset the decomposition is built for.
OPSET = 21



def _io(spec: OpSpec) -> list[Input | Output]:
    return [*spec.inputs, *spec.outputs]


@dataclass(frozen=True)
class TuningRow:
    """One shape bucket of a tuned tiling (``opsdk tune``): calls with ``totalLength <=
    up_to`` (None: every larger call) use ``buffers`` buffers per queue (1..BUFFER_NUM),
    tiles of at most ``tile_cap`` elements (0: what fits the Unified Buffer) and at most
    ``cores`` cores (0: every core)."""

    up_to: int | None
    buffers: int = BUFFER_NUM
    tile_cap: int = 0
    cores: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.buffers <= BUFFER_NUM:
            raise SpecError(f"tuned tiling: buffers must be 1..{BUFFER_NUM}, got {self.buffers}")
        if self.tile_cap < 0 or self.tile_cap % GRANULE:
            raise SpecError(f"tuned tiling: tile_cap must be 0 or a multiple of {GRANULE}, "
                            f"got {self.tile_cap}")
        if self.cores < 0 or (self.up_to is not None and self.up_to < 1):
            raise SpecError(f"tuned tiling: cores must be >= 0 and up_to >= 1 (got cores "
                            f"{self.cores}, up_to {self.up_to})")


def _table(rows: Sequence[TuningRow], knob: str) -> str:
    """The knob's value per shape bucket as one tiling expression (rows sorted by up_to, the
    last one None)."""
    expr = str(getattr(rows[-1], knob))
    for r in reversed(rows[:-1]):
        value = str(getattr(r, knob))
        expr = expr if value == expr else f"pick(le(totalLength, {r.up_to}), {value}, {expr})"
    return expr


@dataclass(frozen=True)
class AicoreKernel:
    """An AI Core kernel: its source, tiling and how the model compiles it per dtype."""

    op: str
    snake: str
    source: str
    tiling: Tiling
    io_names: tuple[str, ...]
    dtype_macro: str  # DTYPE_<INPUT> the kernel's T comes from ("" when T is fixed)
    origin: str  # "generated" or the path of a hand-written kernel
    needs_same_shape: bool = True
    #: ``applicable(shapes, attrs) -> reason or None`` of a hand-written kernel
    applicable: Callable[..., str | None] | None = None
    #: a row kernel (reductions over the last axis, :mod:`._gen_reduce`)
    rows: bool = False
    #: ``constraint(params, shapes, soc) -> reason or None`` of a hand-written kernel's
    #: search parameters (``opsdk tune``)
    constraint: Callable[..., str | None] | None = None
    #: a hand-written kernel's tiling module when it computes its own facts and data layouts
    #: (``call_facts``, ``tiling_problem``, ``kernel_inputs``, ``kernel_outputs``, ``CORES``)
    host: Any = None


@dataclass
class _Val:
    kind: str  # "scalar" | "tensor" | "mask" | "bool" | "string"
    expr: str = ""  # scalar / bool / string C++ expression
    slot: int = -1  # tensor temp or mask slot
    const: float | None = None  # literal value of a constant scalar
    dtype: str = "float32"  # the ONNX dtype the value has ("T": the kernel's dtype)
    erf_of: _Val | None = None  # for Erf(u): u, so that 1 + Erf(u) becomes Erfc(-u)
    row: bool = False  # one value per row (a reduction's result or computed from one)


@dataclass
class _Gen:
    spec: OpSpec
    lines: list[str] = field(default_factory=list)
    vals: dict[str, _Val] = field(default_factory=dict)
    temps: int = 0
    masks: int = 0
    scratch: bool = False
    api_tmp: bool = False  # the kernel calls a high-level API that takes apiTmpBuf_
    indent: str = "        "
    #: reductions (:mod:`._gen_reduce`): ``reduce(g, node, args)`` emits one, or None
    reduce: Callable[[_Gen, NodeProto, list[_Val]], _Val] | None = None
    rows: int = 0  # one-repeat tensors holding per-row values
    row_mode: bool = False  # emitting an op on per-row values: one repeat, row slots
    scalars: int = 0  # per-row values read back to the scalar unit

    def refuse(self, why: str) -> GenerateRefused:
        return GenerateRefused(f"{self.spec.name}: no AI Core kernel generated: {why}")

    def emit(self, line: str) -> None:
        if self.row_mode:
            line = line.replace(", m);", ", GRANULE);")
        self.lines.append(self.indent + line)

    def temp(self) -> _Val:
        if self.row_mode:
            self.rows += 1
            return _Val("tensor", slot=self.rows - 1, row=True)
        self.temps += 1
        return _Val("tensor", slot=self.temps - 1)

    def mask(self) -> _Val:
        self.masks += 1
        return _Val("mask", slot=self.masks - 1)


def _t(v: _Val) -> str:
    if v.kind == "tensor":
        return f"r{v.slot}" if v.row else f"v{v.slot}"
    return f"k{v.slot}"


def _literal(x: float) -> str:
    if not math.isfinite(x):
        raise SpecError(f"non-finite constant {x}")
    return f"static_cast<float>({float(x)!r})"


def _attr(node: NodeProto, name: str) -> AttributeProto | None:
    return next((a for a in node.attribute if a.name == name), None)


def _constant(g: _Gen, node: NodeProto) -> _Val:
    a = node.attribute[0] if node.attribute else None
    if a is None:
        raise g.refuse("a Constant node without a value")
    if a.ref_attr_name:
        ref = g.spec.attr_map[a.ref_attr_name]
        if ref.type in ("float", "int", "bool"):
            return _Val("scalar", expr=f"static_cast<float>(td_.{ref.name})")
        if ref.type == "string":
            return _Val("string", expr=f"td_.{ref.name}")
        raise g.refuse(f"attribute {ref.name!r} of type {ref.type} used as a Constant")
    if a.name in ("value_float", "value_int"):
        x = float(a.f if a.name == "value_float" else a.i)
        return _Val("scalar", expr=_literal(x), const=x)
    if a.name == "value_string":
        text = a.s.decode()
        if '"' in text or "\\" in text:
            raise g.refuse(f"string constant {text!r} with quotes or backslashes")
        return _Val("string", expr=f'"{text}"')
    if a.name == "value":
        arr = numpy_helper.to_array(a.t)
        if arr.size != 1 or arr.dtype.kind not in "fiub":
            raise g.refuse(f"a Constant tensor of shape {list(arr.shape)} and dtype {arr.dtype}")
        x = float(arr.reshape(-1)[0])
        return _Val("scalar", expr=_literal(x), const=x)
    raise g.refuse(f"Constant with attribute {a.name!r}")


_CMP = {"Greater": "GT", "Less": "LT", "Equal": "EQ", "GreaterOrEqual": "GE", "LessOrEqual": "LE"}
_FLIP = {"GT": "LT", "LT": "GT", "EQ": "EQ", "GE": "LE", "LE": "GE"}
_CMP_CPP = {"GT": ">", "LT": "<", "EQ": "==", "GE": ">=", "LE": "<="}
_UNARY = {"Exp": "Exp", "Log": "Ln", "Abs": "Abs", "Sqrt": "Sqrt", "Relu": "Relu"}
#: High-level APIs given ``apiTmpBuf_`` as their sharedTmpBuffer (never the tmp-buffer stack).
_HIGH_LEVEL = {"Erf": "Erf"}
#: Bytes of ``apiTmpBuf_``: Erfc on float computes in chunks of tmp / 4 / 5 elements
#: (highlevel_api/impl/math/erfc/erfc_common_impl.h), so 512 elements per pass; Erf, 853.
API_TMP_BYTES = 5 * 4 * 512
#: tanh(x) for |x| < 0.25: x (1 + x^2 (-1/3 + x^2 (2/15 + x^2 (-17/315 + x^2 62/2835)))),
#: relative error below 1e-8 there; the real Tanh, (e^2x - 1) / (e^2x + 1), loses ~1e-3 near 0.
_TANH_SERIES = (62.0 / 2835.0, -17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0, 1.0)
_BINARY = {"Add": ("Add", "Adds"), "Mul": ("Mul", "Muls"), "Max": ("Max", "Maxs"),
           "Min": ("Min", "Mins")}
_SCALAR_OPS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


def _as_tensor(g: _Gen, v: _Val) -> _Val:
    if v.kind == "tensor":
        return v
    if v.kind != "scalar":
        raise g.refuse(f"a {v.kind} used as a number")
    t = g.temp()
    g.emit(f"Duplicate({_t(t)}, {v.expr}, m);")
    return t


def _compare(g: _Gen, mode: str, a: _Val, b: _Val) -> _Val:
    if a.kind == "scalar" and b.kind == "scalar":
        return _Val("bool", expr=f"({a.expr} {_CMP_CPP[mode]} {b.expr})")
    if a.kind == "string" and b.kind == "string" and mode == "EQ":
        return _Val("bool", expr=f"OpsdkStrEq({a.expr}, {b.expr})")
    k = g.mask()
    if a.kind == "tensor" and b.kind == "tensor":
        g.emit(f"Compare({_t(k)}, {_t(a)}, {_t(b)}, CMPMODE::{mode}, m);")
    elif a.kind == "tensor" and b.kind == "scalar":
        g.emit(f"CompareScalar({_t(k)}, {_t(a)}, {b.expr}, CMPMODE::{mode}, m);")
    elif a.kind == "scalar" and b.kind == "tensor":
        g.emit(f"CompareScalar({_t(k)}, {_t(b)}, {a.expr}, CMPMODE::{_FLIP[mode]}, m);")
    else:
        raise g.refuse(f"a comparison of a {a.kind} with a {b.kind}")
    return k


def _arith(g: _Gen, op: str, a: _Val, b: _Val) -> _Val:
    if a.kind == "scalar" and b.kind == "scalar":
        if op in _SCALAR_OPS:
            return _Val("scalar", expr=f"({a.expr} {_SCALAR_OPS[op]} {b.expr})")
        fn = "max" if op == "Max" else "min"
        return _Val("scalar", expr=f"({a.expr} {'>' if fn == 'max' else '<'} {b.expr} ? "
                                   f"{a.expr} : {b.expr})")
    if op == "Add" and (a.const == 1.0 or b.const == 1.0):
        e = b if a.const == 1.0 else a
        if e.erf_of is not None:  # 1 + erf(u) == erfc(-u), without its cancellation
            neg = _unary(g, "Neg", e.erf_of)
            out = g.temp()
            g.api_tmp = True
            g.emit(f"Erfc({_t(out)}, {_t(neg)}, apiTmpBuf_.Get<uint8_t>(), m);")
            return out
    out = g.temp()
    if op in _BINARY:
        vec, sc = _BINARY[op]
        if a.kind == "tensor" and b.kind == "tensor":
            g.emit(f"{vec}({_t(out)}, {_t(a)}, {_t(b)}, m);")
        else:
            t, s = (a, b) if a.kind == "tensor" else (b, a)
            g.emit(f"{sc}({_t(out)}, {_t(t)}, {s.expr}, m);")
        return out
    if op == "Sub" and a.kind == "tensor" and b.kind == "scalar":
        g.emit(f"Adds({_t(out)}, {_t(a)}, -({b.expr}), m);")
        return out
    if op == "Sub" and a.kind == "scalar":
        g.emit(f"Muls({_t(out)}, {_t(b)}, -1.0f, m);")
        g.emit(f"Adds({_t(out)}, {_t(out)}, {a.expr}, m);")
        return out
    ta, tb = _as_tensor(g, a), _as_tensor(g, b)  # Sub, Div: exact tensor forms
    g.emit(f"{op}({_t(out)}, {_t(ta)}, {_t(tb)}, m);")
    return out


def _unary(g: _Gen, op: str, a: _Val) -> _Val:
    if a.kind == "scalar" and op == "Neg":
        return _Val("scalar", expr=f"(-{a.expr})", const=None if a.const is None else -a.const)
    if a.kind != "tensor":
        raise g.refuse(f"{op} of a constant; fold it into a Constant in spec.py")
    if op == "Tanh":
        return _tanh(g, a)
    out = g.temp()
    if op in _UNARY:
        g.emit(f"{_UNARY[op]}({_t(out)}, {_t(a)}, m);")
    elif op in _HIGH_LEVEL:
        g.api_tmp = True
        g.emit(f"{_HIGH_LEVEL[op]}({_t(out)}, {_t(a)}, apiTmpBuf_.Get<uint8_t>(), m);")
        out.erf_of = a if op == "Erf" else None
    elif op == "Neg":
        g.emit(f"Muls({_t(out)}, {_t(a)}, -1.0f, m);")
    elif op == "Reciprocal":
        one = _as_tensor(g, _Val("scalar", expr="1.0f"))
        g.emit(f"Div({_t(out)}, {_t(one)}, {_t(a)}, m);")
    elif op == "Sigmoid":
        g.emit(f"Muls({_t(out)}, {_t(a)}, -1.0f, m);")
        g.emit(f"Exp({_t(out)}, {_t(out)}, m);")
        g.emit(f"Adds({_t(out)}, {_t(out)}, 1.0f, m);")
        one = _as_tensor(g, _Val("scalar", expr="1.0f"))
        g.emit(f"Div({_t(out)}, {_t(one)}, {_t(out)}, m);")
    return out


def _tanh(g: _Gen, x: _Val) -> _Val:
    """tanh in float32 to within a few ulp: a series near 0, (e^2x - 1) / (e^2x + 1) elsewhere."""
    x2, p = g.temp(), g.temp()
    g.emit(f"Mul({_t(x2)}, {_t(x)}, {_t(x)}, m);")
    g.emit(f"Muls({_t(p)}, {_t(x2)}, {_literal(_TANH_SERIES[0])}, m);")
    for c in _TANH_SERIES[1:]:
        g.emit(f"Adds({_t(p)}, {_t(p)}, {_literal(c)}, m);")
        g.emit(f"Mul({_t(p)}, {_t(p)}, {_t(x2) if c != 1.0 else _t(x)}, m);")
    e, f = g.temp(), g.temp()
    g.emit(f"Mins({_t(e)}, {_t(x)}, 9.0f, m);")
    g.emit(f"Maxs({_t(e)}, {_t(e)}, -9.0f, m);")
    g.emit(f"Muls({_t(e)}, {_t(e)}, 2.0f, m);")
    g.emit(f"Exp({_t(e)}, {_t(e)}, m);")
    g.emit(f"Adds({_t(f)}, {_t(e)}, -1.0f, m);")
    g.emit(f"Adds({_t(e)}, {_t(e)}, 1.0f, m);")
    g.emit(f"Div({_t(f)}, {_t(f)}, {_t(e)}, m);")
    g.emit(f"Abs({_t(e)}, {_t(x)}, m);")
    near = _compare(g, "LT", e, _Val("scalar", expr="0.25f"))
    out = g.temp()
    g.emit(f"Select({_t(out)}, {_t(near)}, {_t(p)}, {_t(f)}, SELMODE::VSEL_TENSOR_TENSOR_MODE, m);")
    return out


def _pow(g: _Gen, a: _Val, b: _Val) -> _Val:
    if a.kind != "tensor" or b.const is None:
        raise g.refuse("Pow needs a tensor base and a literal constant exponent")
    e = b.const
    if e == 0.5:
        return _unary(g, "Sqrt", a)
    if e == int(e) and 1 <= abs(e) <= 4:
        acc = a
        for _ in range(int(abs(e)) - 1):
            acc = _arith(g, "Mul", acc, a)
        return _unary(g, "Reciprocal", acc) if e < 0 else acc
    if e == int(e):
        raise g.refuse(f"Pow with the integer exponent {e:g} (supported: 0.5, +-1 to +-4 and "
                       "non-integers)")
    ln = _unary(g, "Log", a)
    out = g.temp()
    g.emit(f"Muls({_t(out)}, {_t(ln)}, {b.expr}, m);")
    return _unary(g, "Exp", out)


def _round(g: _Gen, v: _Val, dtype: str) -> _Val:
    """Cast/CastLike: round a float32 value to ``dtype`` ("T" = the kernel's dtype)."""
    if dtype == "float32":
        return v
    cpp = "T" if dtype == "T" else _CPP_TYPES.get(dtype)
    if cpp is None:
        raise g.refuse(f"a Cast to {dtype} (the generator computes floating point only)")
    if v.kind == "scalar":
        exact = v.const is not None and (v.const == 0.5 or (v.const == int(v.const) and abs(v.const) <= 256))
        return _Val("scalar", expr=f"OpsdkRound<{cpp}>({v.expr})", const=v.const if exact else None)
    if v.kind != "tensor":
        raise g.refuse(f"a Cast of a {v.kind}")
    g.scratch = True
    out = g.temp()
    g.emit(f"RoundThrough<{cpp}>({_t(out)}, {_t(v)}, scratchBuf_.Get<{cpp}>(), m);")
    return out


_ELEM = {1: "float32", 9: "bool", 10: "float16", 16: "bfloat16"}


def _node(g: _Gen, node: NodeProto, args: list[_Val]) -> _Val:
    op = node.op_type
    if op == "Constant":
        return _constant(g, node)
    if op.startswith("Reduce"):
        if g.reduce is None:  # pragma: no cover - generate() routes reductions to _gen_reduce
            raise g.refuse(f"{op} outside a row kernel")
        return g.reduce(g, node, args)
    if not g.row_mode and any(a.row for a in args):
        return _per_row(g, node, args)
    if op == "Identity":
        return args[0]
    if op == "LabelEncoder":
        return _label(g, node, args[0])
    if op == "Cast" and args[0].kind == "scalar" and _ELEM.get(_attr_i(node, "to")) == "bool":
        return _Val("bool", expr=f"({args[0].expr} != 0.0f)")
    if op in ("Cast", "CastLike"):
        if op == "Cast":
            to = _attr(node, "to")
            dtype = _ELEM.get(to.i if to is not None else 0, f"ONNX type {to.i if to else '?'}")
        else:
            dtype = args[1].dtype
        out = _round(g, args[0], dtype)
        out.dtype = dtype
        return out
    dtype = next((a.dtype for a in args if a.kind == "tensor"), args[0].dtype if args else "T")
    if op in _CMP:
        return _compare(g, _CMP[op], args[0], args[1])
    if op in ("Add", "Sub", "Mul", "Div", "Max", "Min") and len(args) == 2:
        out = _arith(g, op, args[0], args[1])
    elif op in _UNARY or op in _HIGH_LEVEL or op in ("Neg", "Reciprocal", "Sigmoid", "Tanh"):
        out = _unary(g, op, args[0])
    elif op == "Pow":
        out = _pow(g, args[0], args[1])
    elif op == "Clip":
        out = args[0]
        if len(args) > 1 and node.input[1]:
            out = _arith(g, "Max", out, args[1])
        if len(args) > 2 and node.input[2]:
            out = _arith(g, "Min", out, args[2])
    elif op == "Where":
        out = _where_mask(g, args)
    else:
        raise g.refuse(f"the decomposition uses {op}, which is not elementwise-supported "
                       "(see docs/ascendc_model.md for the supported ONNX ops)")
    out.dtype = dtype
    return out


def _per_row(g: _Gen, node: NodeProto, args: list[_Val]) -> _Val:
    """A node reading per-row values: with a full tile, each per-row tensor is read back as
    a scalar (``ScalarOf``); else it runs on one-repeat row slots (a per-row scalar a
    vector op needs is put into one first), or stays a scalar expression."""
    if any(a.kind in ("tensor", "mask") and not a.row for a in args):
        read = []
        for a in args:
            if a.kind == "tensor" and a.row:
                g.scalars += 1
                g.emit(f"const float s{g.scalars - 1} = ScalarOf({_t(a)});")
                a = _Val("scalar", expr=f"s{g.scalars - 1}", row=True)
            read.append(a)
        out = _node(g, node, [dataclasses.replace(a, row=False) for a in read])
        out.row = out.kind == "scalar"
        return out
    scalar_ok = node.op_type in _SCALAR_OPS or node.op_type in ("Max", "Min", "Neg", "Identity",
                                                                "Cast", "CastLike", *_CMP)
    if all(a.kind != "tensor" for a in args) and scalar_ok:
        out = _node(g, node, [dataclasses.replace(a, row=False) for a in args])
        out.row = True
        return out
    g.row_mode = True
    try:
        vals = [_as_tensor(g, dataclasses.replace(a, row=False)) if a.kind == "scalar" and a.row
                else a for a in args]
        out = _node(g, node, vals)
    finally:
        g.row_mode = False
    out.row = out.kind in ("tensor", "scalar")
    return out


def _attr_i(node: NodeProto, name: str) -> int:
    a = _attr(node, name)
    return int(a.i) if a is not None else 0


def _label(g: _Gen, node: NodeProto, s: _Val) -> _Val:
    """LabelEncoder of a constant string (an attribute): a chain of string comparisons."""
    if s.kind != "string":
        raise g.refuse("LabelEncoder of a tensor (it maps constant strings only)")
    cats = _attr(node, "keys_strings")
    ints = _attr(node, "values_int64s")
    if cats is None or ints is None:
        raise g.refuse("LabelEncoder without keys_strings and values_int64s")
    default = _attr(node, "default_int64")
    expr = f"static_cast<float>({default.i if default is not None else -1})"
    for text, value in reversed(list(zip(cats.strings, ints.ints, strict=True))):
        word = text.decode()
        if '"' in word or "\\" in word:
            raise g.refuse(f"category {word!r} with quotes or backslashes")
        expr = f'(OpsdkStrEq({s.expr}, "{word}") ? static_cast<float>({value}) : {expr})'
    return _Val("scalar", expr=expr)


def _where_mask(g: _Gen, args: list[_Val]) -> _Val:
    cond, a, b = args
    if cond.kind != "mask":
        raise g.refuse(f"Where with a {cond.kind} condition")
    out = g.temp()
    if b.kind == "tensor":
        ta = _as_tensor(g, a)
        g.emit(f"Select({_t(out)}, {_t(cond)}, {_t(ta)}, {_t(b)}, "
               "SELMODE::VSEL_TENSOR_TENSOR_MODE, m);")
    else:
        ta = _as_tensor(g, a)
        g.emit(f"Select({_t(out)}, {_t(cond)}, {_t(ta)}, {b.expr}, "
               "SELMODE::VSEL_TENSOR_SCALAR_MODE, m);")
    return out


def _const_values(func: FunctionProto) -> set[str]:
    """Values computed from constants and attributes only (no function input)."""
    const: set[str] = set()
    for n in func.node:
        if all(not i or i in const for i in n.input):
            const.update(n.output)
    return const


def _exclusive(func: FunctionProto, w: int, slot: int) -> set[int]:
    """Nodes whose every use ends in input ``slot`` of node ``w``."""
    nodes = list(func.node)
    users: dict[str, list[tuple[int, int]]] = {}
    for i, n in enumerate(nodes):
        for k, name in enumerate(n.input):
            users.setdefault(name, []).append((i, k))
    outs = set(func.output)
    excl: set[int] = set()
    for i in range(w - 1, -1, -1):
        n = nodes[i]
        uses = [u for o in n.output for u in users.get(o, [])]
        if any(o in outs for o in n.output) or not uses:
            continue
        if all((u == w and k == slot) or u in excl for u, k in uses):
            excl.add(i)
    return excl


def _branches(func: FunctionProto) -> dict[int, tuple[set[int], set[int]]]:
    const = _const_values(func)
    found = {}
    for i, n in enumerate(func.node):
        if n.op_type == "Where" and n.input[0] in const and n.output[0] not in const:
            found[i] = (_exclusive(func, i, 1), _exclusive(func, i, 2))
    return found


def _emit(g: _Gen, func: FunctionProto, order: list[int], br: dict[int, tuple[set[int], set[int]]]) -> None:
    for i in order:
        n = func.node[i]
        if i in br:
            _emit_branch(g, func, i, br)
            continue
        missing = [x for x in n.input if x and x not in g.vals]
        if missing:
            raise g.refuse(f"node {n.op_type} reads {missing}, which nothing defines")
        args = [g.vals[x] if x else _Val("none") for x in n.input]
        g.vals[n.output[0]] = _node(g, n, args)
        if len(n.output) > 1:
            raise g.refuse(f"{n.op_type} with {len(n.output)} outputs")


def _emit_branch(g: _Gen, func: FunctionProto, w: int, br: dict[int, tuple[set[int], set[int]]]) -> None:
    n = func.node[w]
    cond = g.vals[n.input[0]]
    if cond.kind != "bool":
        raise g.refuse(f"Where with a constant {cond.kind} condition")
    out = g.temp()
    outer = g.indent
    for slot, head in ((1, f"if ({cond.expr}) {{"), (2, "} else {")):
        g.lines.append(outer + head)
        g.indent = outer + "    "
        part = sorted(br[w][slot - 1])
        _emit(g, func, sorted(set(part) - _inner(br, w, part)), br)
        v = g.vals[n.input[slot]]
        if v.kind == "tensor":
            g.emit(f"DataCopy({_t(out)}, {_t(v)}, m);")
        else:
            g.emit(f"Duplicate({_t(out)}, {_as_scalar(g, v)}, m);")
        g.indent = outer
    g.lines.append(outer + "}")
    out.dtype = next((g.vals[x].dtype for x in n.input[1:] if g.vals.get(x)), "T")
    g.vals[n.output[0]] = out


def _inner(br: dict[int, tuple[set[int], set[int]]], w: int, part: list[int]) -> set[int]:
    """Nodes of ``part`` that belong to a nested branch of another Where in ``part``."""
    inner: set[int] = set()
    for k in part:
        if k in br and k != w:
            inner |= br[k][0] | br[k][1]
    return inner


def _as_scalar(g: _Gen, v: _Val) -> str:
    if v.kind != "scalar":
        raise g.refuse(f"a {v.kind} where a number is expected")
    return v.expr


def _check_io(spec: OpSpec) -> tuple[str, str]:
    """The kernel's T (``DTYPE_<X>`` or a fixed C++ type) and its macro; refuse mixed dtypes."""
    types = {p.type for p in _io(spec)}
    if any(p.optional for p in spec.inputs):
        raise GenerateRefused(f"{spec.name}: no AI Core kernel generated: optional inputs")
    if len(types) != 1:
        raise GenerateRefused(
            f"{spec.name}: no AI Core kernel generated: inputs and outputs have different "
            f"types ({', '.join(sorted(types))}); the generator needs one dtype for all")
    (tv,) = types
    dtypes = spec.allowed_dtypes(tv)
    bad = [d for d in dtypes if d not in _CPP_TYPES]
    if bad:
        raise GenerateRefused(f"{spec.name}: no AI Core kernel generated: dtypes {bad} (the "
                              f"generator handles {', '.join(_CPP_TYPES)})")
    if tv in spec.types:
        macro = "DTYPE_" + spec.inputs[0].name.upper()
        return macro, macro
    return _CPP_TYPES[tv], ""


def _compute_lines(g: _Gen, spec: OpSpec, func: FunctionProto) -> list[str]:
    pre = []
    for p in spec.inputs:
        v = g.temp()
        v.dtype = "T"
        g.vals[p.name] = v
        pre += [f"LocalTensor<T> {p.name}In = {p.name}Que_.DeQue<T>();",
                f"LoadFloat({_t(v)}, {p.name}In, m);",
                f"{p.name}Que_.FreeTensor({p.name}In);"]
    br = _branches(func)
    deferred = set().union(*(a | b for a, b in br.values())) if br else set()
    _emit(g, func, [i for i in range(len(func.node)) if i not in deferred], br)
    post = []
    for o, name in zip(spec.outputs, func.output, strict=True):
        v = g.vals[name]
        if v.kind == "scalar":
            v = _as_tensor(g, v)
            post = g.lines[-1:]
            g.lines.pop()
        if v.kind != "tensor":
            raise g.refuse(f"output {o.name!r} is a {v.kind}; outputs must be numbers")
        post += [f"LocalTensor<T> {o.name}Out = {o.name}Que_.AllocTensor<T>();",
                 f"StoreFloat({o.name}Out, {_t(v)}, m);",
                 f"{o.name}Que_.EnQue({o.name}Out);"]
    body = [g.indent + x for x in pre] + g.lines + [g.indent + x.strip() for x in post]
    views = [f"{g.indent}LocalTensor<float> v{i} = temps[{i} * td_.tileLength];"
             for i in range(g.temps)]
    masks = [f"{g.indent}LocalTensor<uint8_t> k{i} = maskBuf_.Get<uint8_t>()[{i} * MaskStride()];"
             for i in range(g.masks)]
    return views + masks + body


def _tiling(spec: OpSpec, g: _Gen, tuning: Sequence[TuningRow] | None = None) -> Tiling:
    """Tiles filling the Unified Buffer below UB_RESERVED (Select's scratch) after apiTmpBuf_;
    with ``tuning``, buffers, tile cap and cores per shape bucket from its table."""
    io = len(spec.inputs) + len(spec.outputs)
    fixed = 32 * (g.masks + 8) + UB_RESERVED + (API_TMP_BYTES if g.api_tmp else 0)
    temps = 4 * (g.temps + (1 if g.scratch else 0))
    fields: tuple[TilingField, ...] = (
        TilingField("blockLength"), TilingField("lastBlockLength"),
        TilingField("tileLength", "uint32_t"), TilingField("tileNum", "uint32_t"))
    if not tuning:
        per8 = f"8 * ({BUFFER_NUM * io} * typeBytes + {temps}) + {g.masks}"
        steps: tuple[tuple[str, str], ...] = (
            ("blockLength", f"alignup(ceildiv(totalLength, coreNum), {GRANULE})"),
            *_tile_steps(per8, fixed),
        )
        return Tiling(spec.name, fields, steps, "usedCores")
    rows = sorted(tuning, key=lambda r: (r.up_to is None, r.up_to or 0))
    per8 = f"8 * (bufferNum * {io} * typeBytes + {temps}) + {g.masks}"
    steps = (
        ("bufferNum", _table(rows, "buffers")),
        ("tileCap", _table(rows, "tile_cap")),
        ("coreCap", _table(rows, "cores")),
        ("cores", "pick(coreCap, min2(coreCap, coreNum), coreNum)"),
        ("blockLength", f"alignup(ceildiv(totalLength, cores), {GRANULE})"),
        *_tile_steps(per8, fixed, "pick(tileCap, min2(tileCap, fitTile), fitTile)"),
    )
    return Tiling(spec.name, (*fields, TilingField("bufferNum", "uint32_t")), steps, "usedCores")


def _tile_steps(per8: str, fixed: int, fit: str = "fitTile") -> tuple[tuple[str, str], ...]:
    return (
        ("usedCores", "max2(1, ceildiv(totalLength, blockLength))"),
        ("lastBlockLength", "totalLength - (usedCores - 1) * blockLength"),
        ("bytesPer8", per8),
        ("fitTile", f"aligndown(floordiv((ubBytes - {fixed}) * 8, bytesPer8), {GRANULE})"),
        ("tileLength", f"max2({GRANULE}, min2({fit}, alignup(blockLength, {GRANULE})))"),
        ("tileNum", "ceildiv(blockLength, tileLength)"),
    )


def prepare(spec: OpSpec) -> tuple[FunctionProto, str, str]:
    """The decomposition (at :data:`OPSET`), the kernel's T and its ``DTYPE_`` macro; raises
    :class:`GenerateRefused` when the operator has none the generator takes."""
    if spec.function is None:
        raise GenerateRefused(f"{spec.name}: no AI Core kernel generated: spec.py registers no "
                              "decomposition (@SPEC.register_function)")
    if not spec.elementwise:
        raise GenerateRefused(f"{spec.name}: no AI Core kernel generated: the operator has its "
                              "own shape function, so it is not elementwise")
    from ...onnx import build_function

    dtype, macro = _check_io(spec)
    return build_function(spec, OPSET), dtype, macro


def generate_elementwise(spec: OpSpec, func: FunctionProto, dtype: str, macro: str,
                         banner: str = "", tuning: Sequence[TuningRow] | None = None
                         ) -> AicoreKernel:
    """The elementwise kernel of ``spec`` (:func:`prepare` gave the other arguments);
    ``tuning``: the table ``opsdk tune`` chose (the kernel then reads its buffer count from
    the tiling data). The public entry is :func:`opsdk.ascend.ascendc.generate`."""
    g = _Gen(spec)
    compute = _compute_lines(g, spec, func)
    source = _render(spec, g, compute, dtype, banner, bool(tuning))
    names = tuple(p.name for p in _io(spec))
    return AicoreKernel(spec.name, spec.snake_name, source, _tiling(spec, g, tuning), names,
                        macro, "generated")


def _render(spec: OpSpec, g: _Gen, compute: list[str], dtype: str, banner: str,
            tuned: bool = False) -> str:
    """The kernel source from its template (:mod:`opsdk.ascend.ascendc._templates`)."""
    from ._templates import prelude, render

    return render(
        "aicore", "kernel", banner=banner, op=spec.name, snake=spec.snake_name, dtype=dtype,
        prelude=prelude(), io=[p.name for p in _io(spec)],
        inputs=[p.name for p in spec.inputs], outputs=[p.name for p in spec.outputs],
        temps=max(g.temps, 1), masks=g.masks, api_tmp=API_TMP_BYTES if g.api_tmp else 0,
        scratch=g.scratch, tuned=tuned, compute=compute)
