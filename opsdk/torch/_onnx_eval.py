"""Evaluate an operator's decomposition (its ONNX function, see :mod:`opsdk.onnx`) with torch
ops, so that autograd can differentiate it.

Only the ONNX operators decompositions use are known (:data:`OPS`); any other raises a
:class:`~opsdk.errors.SpecError` that names the operator and the fix (a backward of its
own, ``@SPEC.register_backward``).

Example:
    >>> import torch
    >>> from opsdk.registry import load_spec
    >>> spec = load_spec("operators/thresholded_relu")  # doctest: +SKIP
    >>> evaluate(spec, [torch.tensor([0.5, 2.0])], {"alpha": 1.0})  # doctest: +SKIP
    [tensor([0., 2.])]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import onnx
from onnx import numpy_helper

from ..dtypes import onnx_dtype_name
from ..errors import SpecError
from ..spec import OpSpec

__all__ = ["evaluate", "OPS", "function_ops"]

#: the ai.onnx opset the decomposition is built for
OPSET = 21


def _t() -> Any:
    import torch

    return torch


def _cast(x: Any, to: int) -> Any:
    return x.to(getattr(_t(), onnx_dtype_name(to)))


def _constant(**a: Any) -> Any:
    torch = _t()
    if "value_string" in a:
        return a["value_string"]
    if "value" in a:
        return torch.from_numpy(numpy_helper.to_array(a["value"]).copy())
    for key, dtype in (("value_float", torch.float32), ("value_int", torch.int64),
                       ("value_floats", torch.float32), ("value_ints", torch.int64)):
        if key in a:
            return torch.tensor(a[key], dtype=dtype)
    raise SpecError(f"Constant with attributes {sorted(a)} is not supported")


def _softmax(x: Any, axis: int = -1) -> Any:
    return _t().softmax(x, dim=axis)


def _layer_norm(x: Any, scale: Any, b: Any = None, axis: int = -1, epsilon: float = 1e-5,
                stash_type: int = 1) -> tuple[Any, Any, Any]:
    torch = _t()
    axis = axis % x.dim()
    wide = x if x.dtype == torch.float64 else x.float()
    dims = tuple(range(axis, x.dim()))
    mean = wide.mean(dim=dims, keepdim=True)
    var = ((wide - mean) ** 2).mean(dim=dims, keepdim=True)
    inv = torch.rsqrt(var + epsilon)
    y = (wide - mean) * inv * scale
    if b is not None:
        y = y + b
    return y.to(x.dtype), mean.float(), inv.float()


def _conv(x: Any, w: Any, b: Any = None, strides: Sequence[int] = (1, 1),
          pads: Sequence[int] = (0, 0, 0, 0), dilations: Sequence[int] = (1, 1), group: int = 1,
          **_: Any) -> Any:
    torch = _t()
    n = x.dim() - 2
    begin, end = list(pads[:n]), list(pads[n:])
    if begin != end:  # F.pad takes (last-dim begin, last-dim end, ...)
        x = torch.nn.functional.pad(x, [p for i in reversed(range(n)) for p in (begin[i], end[i])])
        begin = [0] * n
    conv = torch.nn.functional.conv2d if n == 2 else torch.nn.functional.conv1d
    return conv(x, w, b, stride=list(strides), padding=begin, dilation=list(dilations),
                groups=group)


def _grid_sample(x: Any, grid: Any, mode: str = "linear", padding_mode: str = "zeros",
                 align_corners: int = 0) -> Any:
    names = {"linear": "bilinear", "cubic": "bicubic"}
    grid = grid.to(x.dtype)  # torch samples in one dtype; ONNX allows grid's to differ
    return _t().nn.functional.grid_sample(x, grid, mode=names.get(mode, mode),
                                          padding_mode=padding_mode,
                                          align_corners=bool(align_corners))


def _label_encoder(key: str, keys_strings: Sequence[str] = (), values_int64s: Sequence[int] = (),
                   default_int64: int = -1, **_: Any) -> Any:
    table = dict(zip(keys_strings, values_int64s))
    return _t().tensor(table.get(key, default_int64))


def _binary(name: str) -> Callable[..., Any]:
    return lambda a, b: getattr(_t(), name)(a, b)


def _unary(name: str) -> Callable[..., Any]:
    return lambda a: getattr(_t(), name)(a)


def _reduce(name: str) -> Callable[..., Any]:
    def reduce(x: Any, axes: Any = None, keepdims: int = 1, **_: Any) -> Any:
        dims = tuple(range(x.dim())) if axes is None else tuple(int(a) for a in axes)
        return getattr(x, name)(dim=dims, keepdim=bool(keepdims))

    return reduce


#: ONNX op type -> torch implementation (inputs positional, attributes as keywords).
OPS: dict[str, Callable[..., Any]] = {
    "Identity": lambda x: x,
    "Cast": _cast,
    "CastLike": lambda x, like: x.to(like.dtype),
    "Constant": _constant,
    **{k: _binary(v) for k, v in {
        "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow",
        "Greater": "gt", "Less": "lt", "Equal": "eq", "GreaterOrEqual": "ge",
        "LessOrEqual": "le", "And": "logical_and", "Or": "logical_or", "MatMul": "matmul",
    }.items()},
    **{k: _unary(v) for k, v in {
        "Neg": "neg", "Abs": "abs", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Erf": "erf",
        "Tanh": "tanh", "Sigmoid": "sigmoid", "Relu": "relu", "Reciprocal": "reciprocal",
        "Not": "logical_not", "Sin": "sin", "Cos": "cos", "Floor": "floor", "Ceil": "ceil",
    }.items()},
    "Where": lambda c, a, b: _t().where(c, a, b),
    "Max": lambda *xs: _fold(_t().maximum, xs),
    "Min": lambda *xs: _fold(_t().minimum, xs),
    "Clip": lambda x, lo=None, hi=None: _t().clamp(x, lo, hi),
    "Softmax": _softmax,
    "LogSoftmax": lambda x, axis=-1: _t().log_softmax(x, dim=axis),
    "ReduceSum": _reduce("sum"),
    "ReduceMean": _reduce("mean"),
    "LayerNormalization": _layer_norm,
    "Conv": _conv,
    "GridSample": _grid_sample,
    "LabelEncoder": _label_encoder,
}


def _fold(fn: Callable[[Any, Any], Any], xs: Sequence[Any]) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


def _attribute(a: onnx.AttributeProto, attrs: dict[str, Any]) -> Any:
    if a.ref_attr_name:
        return attrs[a.ref_attr_name]
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [e.decode() for e in v]
    return v


def function_ops(spec: OpSpec) -> list[str]:
    """The op types of ``spec``'s decomposition (built for ai.onnx opset 21)."""
    from ..onnx import build_function

    return [n.op_type for n in build_function(spec, OPSET).node]


def evaluate(spec: OpSpec, inputs: Sequence[Any], attrs: dict[str, Any]) -> list[Any]:
    """Run ``spec``'s decomposition on torch tensors; returns one tensor per output."""
    from ..onnx import build_function

    func = build_function(spec, OPSET)
    resolved = spec.resolve_attrs(attrs)
    values: dict[str, Any] = {"": None}
    values.update({i.name: t for i, t in zip(spec.inputs, inputs)})
    for node in func.node:
        impl = OPS.get(node.op_type)
        if impl is None:
            raise SpecError(
                f"{spec.name}: its decomposition uses {node.op_type}, which opsdk.torch cannot "
                f"evaluate for gradients (known: {', '.join(sorted(OPS))}); register the "
                "operator's own backward in spec.py with @SPEC.register_backward"
            )
        args = [values.get(name) for name in node.input]
        kwargs = {a.name: _attribute(a, resolved) for a in node.attribute}
        out = impl(*args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        values.update(zip(node.output, outs))
    return [values[o.name] for o in spec.outputs]


