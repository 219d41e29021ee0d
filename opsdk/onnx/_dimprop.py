"""Output dims as expressions of the input dims, propagated through an ONNX graph.

:func:`propagate_dims` walks the graph once, in node order, carrying each tensor's shape as
:class:`~opsdk.onnx._dimexpr.Dim` values (``None`` where the graph does not determine a
dim, e.g. NonZero's count) and, for small integer tensors that hold shapes (``Shape`` ->
``Slice`` / ``Gather`` / ``Concat`` -> ``Reshape``), their values too. Weights may be
initializers or ``Constant`` nodes (as paddle2onnx writes them); model-local functions
(opsdk's fallback functions) are inlined first.

Where two dims must be equal for the graph to run (an elementwise op, the K of a MatMul)
but their expressions differ (an FPN's upsampled and lateral branches agree only for sizes
the model accepts), the simpler one is kept: the result holds for the shapes the model
runs on, which is why callers check it on real runs (see ``opsdk.triton``).

Example:
    >>> import onnx
    >>> from onnx import helper, TensorProto as T, numpy_helper
    >>> import numpy as np
    >>> w = numpy_helper.from_array(np.zeros((8, 3, 3, 3), np.float32), "w")
    >>> conv = helper.make_node("Conv", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])
    >>> g = helper.make_graph([conv], "g",
    ...     [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3, "h", "w"])],
    ...     [helper.make_tensor_value_info("y", T.FLOAT, None)], [w])
    >>> dims = propagate_dims(helper.make_model(g))
    >>> [str(d) for d in dims["y"]]
    ['n', '8', 'floor((h + 1)/2)', 'floor((w + 1)/2)']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

import numpy as np
import onnx
from onnx import numpy_helper

from ._dimexpr import Atom, Dim, product

__all__ = ["propagate_dims", "Shape"]

Shape = tuple[Dim | None, ...]
_BIG = 2**62  # Slice ends at or past this mean "to the end"


class _State:
    """Shapes, small integer values and constants of the tensors seen so far."""

    def __init__(self, model: onnx.ModelProto, inputs: Mapping[str, Shape]) -> None:
        self.shapes: dict[str, Shape | None] = dict(inputs)
        self.values: dict[str, tuple[Dim | None, ...]] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        for t in model.graph.initializer:
            self.set_const(t.name, numpy_helper.to_array(t))

    def set_const(self, name: str, arr: np.ndarray) -> None:
        self.consts[name] = arr
        self.shapes[name] = tuple(Dim.const(int(d)) for d in arr.shape)
        if arr.dtype.kind in "iu" and arr.ndim <= 1 and arr.size <= 64:
            self.values[name] = tuple(Dim.const(int(v)) for v in arr.reshape(-1))

    def shape(self, name: str) -> Shape | None:
        return self.shapes.get(name) if name else None

    def ints(self, name: str) -> list[int] | None:
        """A constant integer (or integral float) tensor's values, flattened."""
        arr = self.consts.get(name) if name else None
        if arr is None:
            vals = self.values.get(name) if name else None
            if vals is None or any(v is None or not v.is_const() for v in vals):
                return None
            return [v.value() for v in vals if v is not None]
        return [int(v) for v in np.asarray(arr).reshape(-1)]


def _attr(node: onnx.NodeProto, name: str, default: object = None) -> object:
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _ints_attr(node: onnx.NodeProto, name: str) -> list[int] | None:
    v = _attr(node, name)
    return [int(x) for x in v] if isinstance(v, list | tuple) else None


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _merge(a: Dim | None, b: Dim | None) -> Dim | None:
    """Two dims that broadcast together."""
    if a is None or b is None:
        return a if b is not None and b.is_const() and b.value() == 1 else (
            b if a is not None and a.is_const() and a.value() == 1 else None)
    if a == b:
        return a
    for x, y in ((a, b), (b, a)):
        if x.is_const() and x.value() == 1:
            return y
    if a.is_const() != b.is_const():
        return a if a.is_const() else b
    return a if a.size() <= b.size() else b


def _broadcast(shapes: Sequence[Shape | None]) -> Shape | None:
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes if s is not None)
    out: list[Dim | None] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if s is not None and len(s) - rank + i >= 0]
        acc: Dim | None = dims[0]
        for d in dims[1:]:
            acc = _merge(acc, d)
        out.append(acc)
    return tuple(out)


# ------------------------------------------------------------------------- handlers
Handler = Callable[[_State, onnx.NodeProto], list[Shape | None]]


def _same(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    return [st.shape(n.input[0])] * len(n.output)


def _elementwise(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    _value_arith(st, n)
    return [_broadcast([st.shape(i) for i in n.input if i])]


def _value_arith(st: _State, n: onnx.NodeProto) -> None:
    """Add/Sub/Mul/Div of small integer shape values, elementwise."""
    if n.op_type not in ("Add", "Sub", "Mul", "Div") or len(n.input) != 2:
        return
    a, b = st.values.get(n.input[0]), st.values.get(n.input[1])
    if a is None or b is None or (len(a) != len(b) and 1 not in (len(a), len(b))):
        return
    size = max(len(a), len(b))
    out: list[Dim | None] = []
    for i in range(size):
        x, y = a[i if len(a) > 1 else 0], b[i if len(b) > 1 else 0]
        out.append(None if x is None or y is None else _arith(n.op_type, x, y))
    st.values[n.output[0]] = tuple(out)


def _arith(op: str, x: Dim, y: Dim) -> Dim | None:
    if op == "Add":
        return x + y
    if op == "Sub":
        return x - y
    if op == "Mul":
        return x * y
    if y.is_const() and y.value() > 0:
        return x.floordiv(y.value())  # shapes are non-negative: truncation is floor
    return None


def _spatial(n: onnx.NodeProto, rank: int, kernel: Sequence[int]) -> tuple[list[int], ...]:
    k = len(kernel)
    strides = _ints_attr(n, "strides") or [1] * k
    dil = _ints_attr(n, "dilations") or [1] * k
    pads = _ints_attr(n, "pads") or [0] * (2 * k)
    return strides, dil, pads


def _window(st: _State, n: onnx.NodeProto, kernel: Sequence[int], channels: Dim | None,
            ) -> list[Shape | None]:
    x = st.shape(n.input[0])
    if x is None:
        return [None] * len(n.output)
    strides, dil, pads = _spatial(n, len(x), kernel)
    auto = _attr(n, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    ceil_mode = bool(_attr(n, "ceil_mode", 0))
    out: list[Dim | None] = [x[0], channels]
    for i, d in enumerate(x[2:]):
        k_eff = (kernel[i] - 1) * dil[i] + 1
        if d is None:
            out.append(None)
        elif auto in ("SAME_UPPER", "SAME_LOWER"):
            out.append(d.ceildiv(strides[i]))
        else:
            out.append(_window_dim(d, k_eff, strides[i], (0, 0) if auto == "VALID" else
                                   (pads[i], pads[i + len(kernel)]), ceil_mode))
    shape: Shape = tuple(out)
    return [shape] * len(n.output)


def _window_dim(d: Dim, k_eff: int, stride: int, pads: tuple[int, int], ceil: bool,
                ) -> Dim | None:
    """Output size of a sliding window. With ``ceil_mode`` a last window that would start in
    the right padding is dropped (as ONNX Runtime and PyTorch do); that depends on ``d``
    modulo the stride unless the window minus the right pad spans a stride, so such a dim
    is left undetermined."""
    span = d + pads[0] + pads[1] - k_eff
    if not ceil:
        return span.floordiv(stride) + 1
    return span.ceildiv(stride) + 1 if k_eff - pads[1] >= stride else None


def _conv(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    w = st.shape(n.input[1])
    if w is None or any(d is None or not d.is_const() for d in w[2:]):
        return [None]
    kernel = _ints_attr(n, "kernel_shape") or [d.value() for d in w[2:] if d is not None]
    return _window(st, n, kernel, w[0])


def _pool(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    kernel = _ints_attr(n, "kernel_shape")
    if x is None or kernel is None:
        return [None] * len(n.output)
    return _window(st, n, kernel, x[1])


def _global_pool(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    return [None if x is None else x[:2] + (Dim.const(1),) * (len(x) - 2)]


def _conv_transpose(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x, w = st.shape(n.input[0]), st.shape(n.input[1])
    if x is None or w is None or any(d is None or not d.is_const() for d in w[:2] + w[2:]):
        return [None]
    kernel = _ints_attr(n, "kernel_shape") or [d.value() for d in w[2:] if d is not None]
    strides, dil, pads = _spatial(n, len(x), kernel)
    group = int(_attr(n, "group", 1))  # type: ignore[call-overload]
    channels = w[1] * group if w[1] is not None else None
    fixed = _ints_attr(n, "output_shape")
    if fixed:
        return [(x[0], channels, *(Dim.const(v) for v in fixed))]
    extra = _ints_attr(n, "output_padding") or [0] * len(kernel)
    auto = _attr(n, "auto_pad", b"NOTSET")
    same = (auto.decode() if isinstance(auto, bytes) else str(auto)).startswith("SAME")
    out: list[Dim | None] = [x[0], channels]
    for i, d in enumerate(x[2:]):
        if d is None:
            out.append(None)
        elif same:
            out.append(d * strides[i])
        else:
            k_eff = (kernel[i] - 1) * dil[i] + 1
            out.append((d - 1) * strides[i] + extra[i] + k_eff - pads[i] - pads[i + len(kernel)])
    return [tuple(out)]


def _resize(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    if x is None:
        return [None]
    if n.op_type == "Upsample" or st.opset < 11:
        scales_in = n.input[1] if len(n.input) > 1 else ""
    else:
        scales_in = n.input[2] if len(n.input) > 2 else ""
    sizes_in = n.input[3] if len(n.input) > 3 else ""
    sizes = st.values.get(sizes_in) if sizes_in else None
    if sizes is not None and len(sizes) == len(x) and _attr(n, "axes") is None:
        return [tuple(sizes)]
    arr = st.consts.get(scales_in) if scales_in else None
    if arr is None:
        scl = _attr(n, "scales")
        arr = np.asarray(scl, np.float32) if scl is not None else None
    if arr is None or arr.size != len(x):
        return [None]
    return [tuple(None if d is None else d.scale(Fraction(float(s)).limit_denominator(1 << 16))
                  for d, s in zip(x, arr.reshape(-1), strict=True))]


def _reshape(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    target = st.values.get(n.input[1])
    if target is None:
        return [None]
    allow_zero = bool(_attr(n, "allowzero", 0))
    out: list[Dim | None] = []
    for i, t in enumerate(target):
        if t is not None and t.is_const() and t.value() == 0 and not allow_zero:
            out.append(x[i] if x is not None and i < len(x) else None)
        else:
            out.append(t)
    holes = [i for i, d in enumerate(out) if d is not None and d.is_const() and d.value() == -1]
    if holes:
        out[holes[0]] = _hole(x, [d for i, d in enumerate(out) if i != holes[0]])
    return [tuple(out)]


def _hole(x: Shape | None, others: Sequence[Dim | None]) -> Dim | None:
    """The -1 of a Reshape: all elements over the other dims' product, when it divides."""
    if x is None or any(d is None for d in x) or any(d is None for d in others):
        return None
    total = product(d for d in x if d is not None)
    rest = product(d for d in others if d is not None)
    if rest.is_const() and rest.value() > 0:
        return total.floordiv(rest.value())
    if len(rest.terms) == 1:  # a single term: cancel its atoms from each term of the total
        (m, c), = rest.terms
        return _cancel(total, m, c) if c > 0 else None
    return None


def _cancel(total: Dim, atoms: Sequence[Atom], coeff: int) -> Dim | None:
    """``total / (coeff * atoms...)`` when every term of ``total`` holds them."""
    acc = Dim.const(0)
    for m, c in total.terms:
        left = list(m)
        for a in atoms:
            if a not in left:
                return None
            left.remove(a)
        if c % coeff:
            return None
        acc = acc + Dim.monomial(left, c // coeff)
    return acc


def _flatten(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    if x is None or any(d is None for d in x):
        return [None]
    axis = _axis(int(_attr(n, "axis", 1)), len(x))  # type: ignore[call-overload]
    return [(product(d for d in x[:axis] if d is not None),
             product(d for d in x[axis:] if d is not None))]


def _transpose(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    if x is None:
        return [None]
    perm = _ints_attr(n, "perm") or list(range(len(x)))[::-1]
    return [tuple(x[p] for p in perm)]


def _axes(st: _State, n: onnx.NodeProto, index: int) -> list[int] | None:
    axes = _ints_attr(n, "axes")
    if axes is None and len(n.input) > index and n.input[index]:
        axes = st.ints(n.input[index])
    return axes


def _squeeze(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    axes = _axes(st, n, 1)
    if x is None:
        return [None]
    if axes is None:
        if any(d is None or not d.is_const() for d in x):
            return [None]
        keep: list[Dim | None] = [d for d in x if d is not None and d.value() != 1]
    else:
        drop = {_axis(a, len(x)) for a in axes}
        keep = [d for i, d in enumerate(x) if i not in drop]
    _pass_values(st, n)
    return [tuple(keep)]


def _unsqueeze(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    axes = _axes(st, n, 1)
    if x is None or axes is None:
        return [None]
    rank = len(x) + len(axes)
    out: list[Dim | None] = list(x)
    for a in sorted(_axis(a, rank) for a in axes):
        out.insert(a, Dim.const(1))
    _pass_values(st, n)
    return [tuple(out)]


def _pass_values(st: _State, n: onnx.NodeProto) -> None:
    if n.input[0] in st.values:
        st.values[n.output[0]] = st.values[n.input[0]]


def _cast(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    _pass_values(st, n)
    return _same(st, n)


def _concat(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    shapes = [st.shape(i) for i in n.input]
    if all(i in st.values for i in n.input):
        st.values[n.output[0]] = tuple(v for i in n.input for v in st.values[i])
    if any(s is None for s in shapes):
        return [None]
    first = shapes[0]
    assert first is not None
    axis = _axis(int(_attr(n, "axis", 0)), len(first))  # type: ignore[call-overload]
    dims = [s[axis] for s in shapes if s is not None]
    total = None if any(d is None for d in dims) else sum((d for d in dims if d is not None),
                                                           Dim.const(0))
    rest = _broadcast([s[:axis] + s[axis + 1:] for s in shapes if s is not None])
    if rest is None:
        return [None]
    return [rest[:axis] + (total,) + rest[axis:]]


def _shape_op(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    if x is None:
        return [None]
    start = int(_attr(n, "start", 0))  # type: ignore[call-overload]
    end = _attr(n, "end")
    dims = x[start:] if end is None else x[start:int(end)]  # type: ignore[call-overload]
    st.values[n.output[0]] = tuple(dims)
    return [(Dim.const(len(dims)),)]


def _slice_dim(d: Dim | None, start: int, end: int, step: int) -> Dim | None:
    if d is not None and d.is_const():
        return Dim.const(len(range(*slice(start, end, step).indices(d.value()))))
    if d is None or step <= 0 or start < -_BIG // 2:
        return None
    lo: Dim = Dim.const(start) if start >= 0 else d + start
    hi: Dim = d if end >= _BIG // 4 else (Dim.const(end) if end >= 0 else d + end)
    return (hi - lo).ceildiv(step)


def _slice(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    if x is None:
        return [None]
    if st.opset < 10:
        starts, ends, axes = _ints_attr(n, "starts"), _ints_attr(n, "ends"), _ints_attr(n, "axes")
        steps = None
    else:
        starts, ends = st.ints(n.input[1]), st.ints(n.input[2])
        axes = st.ints(n.input[3]) if len(n.input) > 3 and n.input[3] else None
        steps = st.ints(n.input[4]) if len(n.input) > 4 and n.input[4] else None
    if starts is None or ends is None:
        return [None]
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    out = list(x)
    for a, s, e, k in zip(axes, starts, ends, steps, strict=True):
        out[_axis(a, len(x))] = _slice_dim(x[_axis(a, len(x))], s, e, k)
    vals = st.values.get(n.input[0])
    if vals is not None and len(axes) == 1 and steps[0] == 1:
        st.values[n.output[0]] = vals[slice(starts[0], min(ends[0], len(vals)))]
    return [tuple(out)]


def _gather(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x, idx = st.shape(n.input[0]), st.shape(n.input[1])
    if x is None or idx is None:
        return [None]
    axis = _axis(int(_attr(n, "axis", 0)), len(x))  # type: ignore[call-overload]
    vals, picks = st.values.get(n.input[0]), st.ints(n.input[1])
    if vals is not None and picks is not None and axis == 0:
        st.values[n.output[0]] = tuple(vals[p] for p in picks)
    return [x[:axis] + idx + x[axis + 1:]]


def _matmul(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    a, b = st.shape(n.input[0]), st.shape(n.input[1])
    if a is None or b is None:
        return [None]
    a2 = (Dim.const(1),) + a if len(a) == 1 else a
    b2 = b + (Dim.const(1),) if len(b) == 1 else b
    batch = _broadcast([a2[:-2], b2[:-2]])
    if batch is None:
        return [None]
    out = batch + (a2[-2], b2[-1])
    out = out[:-2] + out[-1:] if len(a) == 1 else out
    return [out[:-1] if len(b) == 1 else out]


def _gemm(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    a, b = st.shape(n.input[0]), st.shape(n.input[1])
    if a is None or b is None:
        return [None]
    m = a[1] if _attr(n, "transA", 0) else a[0]
    k = b[0] if _attr(n, "transB", 0) else b[1]
    return [(m, k)]


def _reduce(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    if x is None:
        return [None]
    axes = _ints_attr(n, "axes")
    if axes is None and n.op_type in ("ArgMax", "ArgMin"):
        axes = [int(_attr(n, "axis", 0))]  # type: ignore[call-overload]
    if axes is None and len(n.input) > 1 and n.input[1]:
        axes = st.ints(n.input[1])
        if axes is None:
            return [None]
    keep = bool(_attr(n, "keepdims", 1))
    drop = set(range(len(x))) if not axes else {_axis(a, len(x)) for a in axes}
    if not axes and _attr(n, "noop_with_empty_axes", 0):
        return [x]
    return [tuple(Dim.const(1) if i in drop else d
                  for i, d in enumerate(x) if keep or i not in drop)]


def _pad(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    pads = _ints_attr(n, "pads") if st.opset < 11 else st.ints(n.input[1])
    if x is None or pads is None or len(pads) != 2 * len(x):
        return [None]
    return [tuple(None if d is None else d + pads[i] + pads[i + len(x)] for i, d in enumerate(x))]


def _split(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    if x is None:
        return [None] * len(n.output)
    axis = _axis(int(_attr(n, "axis", 0)), len(x))  # type: ignore[call-overload]
    sizes = _ints_attr(n, "split") or (st.ints(n.input[1]) if len(n.input) > 1 and n.input[1]
                                       else None)
    d = x[axis]
    parts: list[Dim | None] = ([Dim.const(s) for s in sizes] if sizes else
                               [None if d is None else d.floordiv(len(n.output))] * len(n.output))
    return [x[:axis] + (p,) + x[axis + 1:] for p in parts]


def _expand(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    target = st.values.get(n.input[1])
    return [None if target is None else _broadcast([st.shape(n.input[0]), tuple(target)])]


def _scalar(st: _State, name: str) -> Dim | None:
    """A one-element value as a dim: a shape value, or an integral constant (any dtype)."""
    vals = st.values.get(name) if name else None
    if vals is not None:
        return vals[0] if len(vals) == 1 else None
    arr = st.consts.get(name) if name else None
    if arr is None or arr.size != 1 or not float(arr.reshape(-1)[0]).is_integer():
        return None
    return Dim.const(int(arr.reshape(-1)[0]))


def _range(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    """``Range(start, limit, delta)`` has ``ceil((limit - start) / delta)`` elements; with a
    shape value as the limit (``torch.arange(w)`` over ``Shape``), that is an expression."""
    start, limit, delta = (_scalar(st, i) for i in n.input[:3])
    if start is None or limit is None or delta is None or not delta.is_const():
        return [None]
    if limit.is_const() and start.is_const():
        size = max(0, -(-(limit.value() - start.value()) // delta.value()))
        return [(Dim.const(size),)]
    if delta.value() <= 0 or not start.is_const() or start.value() < 0:
        return [None]  # a symbolic size is non-negative only for these
    return [((limit - start).ceildiv(delta.value()),)]


def _tile(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x, reps = st.shape(n.input[0]), st.ints(n.input[1])
    if x is None or reps is None:
        return [None]
    return [tuple(None if d is None else d * r for d, r in zip(x, reps, strict=True))]


def _constant_of_shape(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    target = st.values.get(n.input[0])
    return [None if target is None else tuple(target)]


def _depth_space(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    b = int(_attr(n, "blocksize", 1))  # type: ignore[call-overload]
    if x is None or len(x) != 4 or any(d is None for d in x):
        return [None]
    nb, c, h, w = (d for d in x if d is not None)
    if n.op_type == "DepthToSpace":
        return [(nb, c.floordiv(b * b), h * b, w * b)]
    return [(nb, c * (b * b), h.floordiv(b), w.floordiv(b))]


def _topk(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x = st.shape(n.input[0])
    k = _ints_attr(n, "k") if st.opset < 10 else st.ints(n.input[1])
    if x is None or not k:
        return [None, None]
    axis = _axis(int(_attr(n, "axis", -1)), len(x))  # type: ignore[call-overload]
    out = x[:axis] + (Dim.const(k[0]),) + x[axis + 1:]
    return [out, out]


_SAME = (
    "Relu Sigmoid Tanh Clip HardSigmoid HardSwish Sqrt Exp Log Abs Neg Erf Softmax LogSoftmax "
    "Identity Dropout BatchNormalization LayerNormalization InstanceNormalization "
    "GroupNormalization LeakyRelu Elu Selu Celu Gelu Not Sign Floor Ceil Round Reciprocal "
    "CumSum LRN Softplus Softsign Mish Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh "
    "IsNaN IsInf Shrink ThresholdedRelu Hardmax LpNormalization MeanVarianceNormalization "
    "QuantizeLinear DequantizeLinear"
).split()
_BROADCAST = ("Add Sub Mul Div Pow Max Min Mean Sum Equal Less LessOrEqual Greater "
              "GreaterOrEqual And Or Xor Where PRelu Mod BitShift").split()
HANDLERS: dict[str, Handler] = {
    **{op: _same for op in _SAME}, **{op: _elementwise for op in _BROADCAST},
    "Cast": _cast, "CastLike": _cast, "Size": lambda st, n: [()], "Conv": _conv,
    "ConvTranspose": _conv_transpose, "MaxPool": _pool,
    "AveragePool": _pool, "LpPool": _pool, "GlobalAveragePool": _global_pool,
    "GlobalMaxPool": _global_pool, "GlobalLpPool": _global_pool, "Resize": _resize,
    "Upsample": _resize, "Reshape": _reshape, "Flatten": _flatten, "Transpose": _transpose,
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Concat": _concat, "Shape": _shape_op,
    "Slice": _slice, "Gather": _gather, "MatMul": _matmul, "Gemm": _gemm, "Pad": _pad,
    "Split": _split, "Expand": _expand, "Range": _range, "Tile": _tile,
    "ConstantOfShape": _constant_of_shape,
    "DepthToSpace": _depth_space, "SpaceToDepth": _depth_space, "TopK": _topk,
    **{op: _reduce for op in ("ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 "
                              "ReduceL2 ReduceLogSum ReduceLogSumExp ReduceSumSquare ArgMax "
                              "ArgMin").split()},
}
def _grid_sample(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    x, grid = st.shape(n.input[0]), st.shape(n.input[1])
    if x is None or grid is None:
        return [None]
    return [x[:2] + grid[1:-1]]


HANDLERS["GridSample"] = _grid_sample  # output spatial dims come from the grid


# ------------------------------------------------------------------- control flow
def _child(st: _State) -> _State:
    """A scope for a subgraph: it sees the outer tensors, and what it adds stays in it."""
    child = object.__new__(_State)
    child.shapes, child.values = dict(st.shapes), dict(st.values)
    child.consts, child.opset = dict(st.consts), st.opset
    return child


_Out = tuple[Shape | None, tuple[Dim | None, ...] | None]


def _run_graph(st: _State, g: onnx.GraphProto) -> list[_Out]:
    for node in g.node:
        _run_node(st, node)
    return [(st.shapes.get(o.name), st.values.get(o.name)) for o in g.output]


def _agree(a: Shape | None, b: Shape | None) -> Shape | None:
    """The dims two branches agree on (None where they differ, or ranks differ)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b, strict=True))


def _if(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    """Both branches run in their own scope over the outer tensors; a constant condition
    picks one, otherwise each output keeps the dims both branches agree on."""
    branches = {a.name: a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH}
    if set(branches) != {"then_branch", "else_branch"}:
        return [None] * len(n.output)
    cond = st.ints(n.input[0])
    if cond is not None and len(cond) == 1:
        taken = _run_graph(_child(st), branches["then_branch" if cond[0] else "else_branch"])
        outs = taken
    else:
        a = _run_graph(_child(st), branches["then_branch"])
        b = _run_graph(_child(st), branches["else_branch"])
        outs = [(_agree(sa, sb), va if va == vb else None)
                for (sa, va), (sb, vb) in zip(a, b, strict=True)]
    for name, (_, vals) in zip(n.output, outs, strict=False):
        if vals is not None:
            st.values[name] = vals
    return [shape for shape, _ in outs]


def _loop(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    """``Loop``: carried values keep the dims the body leaves unchanged; each scan output
    gets the trip count in front when ``M`` is known and the body never stops early."""
    body = next((a.g for a in n.attribute if a.name == "body"), None)
    if body is None:
        return [None] * len(n.output)
    carried = len(n.input) - 2
    inner = _child(st)
    names = [i.name for i in body.input]
    inner.shapes[names[0]] = ()
    inner.set_const(names[1], np.array(True))  # a body whose cond_out is then True never stops
    for name, outer in zip(names[2:], n.input[2:], strict=False):
        inner.shapes[name] = st.shape(outer)
    outs = _run_graph(inner, body)
    results: list[Shape | None] = [_agree(st.shape(n.input[2 + k]), outs[1 + k][0])
                                   for k in range(carried)]
    trip = _scalar(st, n.input[0]) if n.input[0] else None
    cond_out = body.output[0].name
    never_stops = (not n.input[1] or st.ints(n.input[1]) == [1]) and inner.ints(cond_out) == [1]
    for shape, _ in outs[1 + carried:]:
        lead = trip if never_stops else None
        results.append(None if shape is None else (lead, *shape))
    return results


def _scan(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    """``Scan`` (opset 9 on): the body sees each scan input without its scan axis; final
    states keep the dims the body leaves unchanged; each scan output gets the sequence length
    (the scan inputs' scan-axis dim) inserted at its ``scan_output_axes`` entry."""
    body = next((a.g for a in n.attribute if a.name == "body"), None)
    m = _attr(n, "num_scan_inputs")
    if body is None or not isinstance(m, int) or st.opset < 9:
        return [None] * len(n.output)
    states = len(n.input) - m
    in_axes = _ints_attr(n, "scan_input_axes") or [0] * m
    out_axes = _ints_attr(n, "scan_output_axes") or [0] * (len(body.output) - states)
    inner = _child(st)
    names = [i.name for i in body.input]
    for name, outer in zip(names[:states], n.input[:states], strict=False):
        inner.shapes[name] = st.shape(outer)
    seq: Dim | None = None
    for j, (name, outer) in enumerate(zip(names[states:], n.input[states:], strict=False)):
        x = st.shape(outer)
        if x is None or j >= len(in_axes):
            continue
        ax = _axis(in_axes[j], len(x))
        seq = x[ax] if seq is None else _merge(seq, x[ax])
        inner.shapes[name] = x[:ax] + x[ax + 1:]
    outs = _run_graph(inner, body)
    results: list[Shape | None] = [_agree(st.shape(n.input[k]), outs[k][0])
                                   for k in range(states)]
    for k, (shape, _) in enumerate(outs[states:]):
        if shape is None or k >= len(out_axes):
            results.append(None)
            continue
        ax = _axis(out_axes[k], len(shape) + 1)
        results.append((*shape[:ax], seq, *shape[ax:]))
    return results


def _rnn(st: _State, n: onnx.NodeProto) -> list[Shape | None]:
    """LSTM / GRU / RNN: ``Y`` is [seq, dirs, batch, hidden] and ``Y_h`` (``Y_c``)
    [dirs, batch, hidden]; with ``layout=1`` batch comes first in each."""
    x = st.shape(n.input[0])
    hidden = _attr(n, "hidden_size")
    if x is None or len(x) != 3 or not isinstance(hidden, int):
        return [None] * len(n.output)
    direction = _attr(n, "direction", b"forward")
    dirs = Dim.const(2 if direction in (b"bidirectional", "bidirectional") else 1)
    size = Dim.const(hidden)
    if _attr(n, "layout", 0):
        batch, seq = x[0], x[1]
        y: Shape = (batch, seq, dirs, size)
        state: Shape = (batch, dirs, size)
    else:
        seq, batch = x[0], x[1]
        y, state = (seq, dirs, batch, size), (dirs, batch, size)
    outs: list[Shape | None] = [y]
    return outs + [state] * (len(n.output) - 1)


HANDLERS.update({"LSTM": _rnn, "GRU": _rnn, "RNN": _rnn})
HANDLERS["If"] = _if
HANDLERS["Loop"] = _loop
HANDLERS["Scan"] = _scan


_FOLD_LIMIT = 4096  # elements: shape and index arithmetic, not weights
_NO_FOLD = frozenset({"If", "Loop", "Scan", "RandomNormalLike", "RandomUniformLike",
                      "Multinomial", "Bernoulli", "Dropout"})


def _fold(st: _State, node: onnx.NodeProto) -> bool:
    """Compute a standard node whose inputs are all small constants (torch's pad and index
    arithmetic: ConstantOfShape -> Concat -> Reshape -> Slice -> Transpose) with ONNX
    Runtime at the model's opset; False when it is not such a node or cannot run alone."""
    names = [i for i in node.input if i]
    if (not names or node.op_type in _NO_FOLD or any(i not in st.consts for i in names)
            or sum(st.consts[i].size for i in names) > _FOLD_LIMIT):
        return False
    import onnxruntime as ort

    arrays = {i: st.consts[i] for i in dict.fromkeys(names)}
    try:
        inputs = [onnx.helper.make_tensor_value_info(
            i, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for i, a in arrays.items()]
        outputs = [onnx.helper.make_empty_tensor_value_info(o) for o in node.output if o]
        plain = onnx.NodeProto()
        plain.CopyFrom(node)
        plain.domain = ""
        model = onnx.helper.make_model(
            onnx.helper.make_graph([plain], "fold", inputs, outputs),
            opset_imports=[onnx.helper.make_opsetid("", st.opset)])
        model.ir_version = min(model.ir_version, 9)
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        results = sess.run(None, arrays)
    except Exception:  # a dtype or op ONNX Runtime cannot run alone: left to the handlers
        return False
    for name, value in zip([o for o in node.output if o], results, strict=True):
        st.set_const(name, np.asarray(value))
    return True


def _run_node(st: _State, node: onnx.NodeProto) -> None:
    if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
        arr = _constant_value(node)
        if arr is not None:
            st.set_const(node.output[0], arr)
        return
    if node.domain in ("", "ai.onnx") and _fold(st, node):
        return
    handler = HANDLERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    outs = handler(st, node) if handler else [None] * len(node.output)
    for name, shape in zip(node.output, outs, strict=False):
        if name:
            st.shapes[name] = shape


def _constant_value(node: onnx.NodeProto) -> np.ndarray | None:
    a = node.attribute[0] if node.attribute else None
    if a is None:
        return None
    if a.name == "value":
        return numpy_helper.to_array(a.t)
    simple = {"value_int": np.int64, "value_ints": np.int64, "value_float": np.float32,
              "value_floats": np.float32}
    if a.name in simple:
        return np.asarray(onnx.helper.get_attribute_value(a), simple[a.name])
    return None


def propagate_dims(
    model: onnx.ModelProto, inputs: Mapping[str, Shape] | None = None
) -> dict[str, Shape | None]:
    """Each graph output's dims as expressions of the input dims (``None`` if unknown).

    ``inputs`` gives the input shapes; by default each named input dim becomes
    ``Dim.symbol(name)`` and each fixed one a constant (unnamed variable dims are unknown).

    Example:
        >>> from onnx import helper, TensorProto as T
        >>> g = helper.make_graph([helper.make_node("Flatten", ["x"], ["y"])], "g",
        ...     [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3, "h", "w"])],
        ...     [helper.make_tensor_value_info("y", T.FLOAT, None)])
        >>> [str(d) for d in propagate_dims(helper.make_model(g))["y"]]
        ['n', '3*h*w']
    """
    if model.functions:
        from onnx import inliner

        model = inliner.inline_local_functions(model)
    st = _State(model, inputs if inputs is not None else _default_inputs(model))
    for node in model.graph.node:
        _run_node(st, node)
    return {o.name: st.shapes.get(o.name) for o in model.graph.output}


def _default_inputs(model: onnx.ModelProto) -> dict[str, Shape]:
    out: dict[str, Shape] = {}
    inits = {i.name for i in model.graph.initializer}
    for v in model.graph.input:
        if v.name in inits:
            continue
        dims = v.type.tensor_type.shape.dim
        out[v.name] = tuple(
            Dim.const(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0
            else (Dim.symbol(d.dim_param) if d.dim_param else None) for d in dims)
    return out
