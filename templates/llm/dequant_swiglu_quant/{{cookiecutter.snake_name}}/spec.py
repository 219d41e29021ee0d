"""{{ cookiecutter.op_name }}: dequantise an int32 matmul result, SwiGLU, quantise per token to int8.

Created by ``opsdk new {{ cookiecutter.op_name }} --like {{ cookiecutter.starter }}``; change it freely::

    v     = x * weight_scale * activation_scale[..., None]     float32, (..., 2H)
    act   = silu(v[..., :H]) * v[..., H:]                     gate first, then up
    scale = max(|act| over the last axis) / 127               float32, x.shape[:-1]
    y     = clip(round(act / scale), -127, 127)               int8, (..., H); 0 where scale is 0

``x`` is the int32 accumulator of the fused gate/up projection of a W8A8 model; the
per-channel ``weight_scale`` and per-token ``activation_scale`` undo its quantisation; the
result is quantised again per token (dynamic, symmetric) for the down projection.
Rounding is half to even. The int8 output is judged within one step (the ``quant``
standard): ``round`` jumps on a last-bit difference of its float input.
"""

from opsdk.errors import SpecError
from opsdk.spec import Case, Input, OpSpec, Output, TensorType, Values

#: Dequantisation scales are positive and normal: a subnormal or infinite scale makes the
#: per-token quantisation scale 0 or inf, where int8 has no answer to compare.
_SCALE = Values(range=(1e-4, 1e4), inf=False, nan=False)

SPEC = OpSpec(
    "{{ cookiecutter.op_name }}",
    domain="{{ cookiecutter.domain }}",
    version=1,
    inputs=[
        Input("x", "int32", doc="int32 accumulators of the gate/up projection (..., 2H)"),
        Input("weight_scale", "float32", doc="per-channel dequantisation scale (2H,)",
              values=_SCALE),
        Input("activation_scale", "float32", doc="per-token dequantisation scale, x.shape[:-1]",
              values=_SCALE),
    ],
    # scale first: torch.library.opcheck's autograd test sums the outputs in order into the
    # first one's dtype, and cannot add a float sum to an integer one.
    outputs=[
        Output("scale", "float32", doc="per-token quantisation scale, x.shape[:-1]"),
        Output("y", "int8", doc="quantised silu(gate) * up, (..., H)"),
    ],
    doc="Dequantise, SwiGLU, dynamic per-token int8 quantisation.",
    standard={"int8": "quant"},  # the int8 output y within one step
    batch_axis=0,
    cases=[
        Case({"x": (8, 64), "weight_scale": (64,), "activation_scale": (8,)},
             ranges={"x": (-3000, 3000), "weight_scale": (1e-3, 2e-3),
                     "activation_scale": (0.5, 2.0)}, name="tokens"),
        Case({"x": (2, 5, 200), "weight_scale": (200,), "activation_scale": (2, 5)},
             ranges={"x": (-30000, 30000), "weight_scale": (1e-4, 1e-3),
                     "activation_scale": (0.1, 1.0)}, name="batched"),
        Case({"x": (0, 16), "weight_scale": (16,), "activation_scale": (0,)}, name="no_tokens"),
    ],
)


def _same(a: object, b: object) -> bool:
    """Equal dims, or either unknown (a symbol or None)."""
    return a == b or not isinstance(a, int) or not isinstance(b, int)


@SPEC.register_shape
def _shape(x: TensorType, weight_scale: TensorType,
           activation_scale: TensorType) -> list[TensorType]:
    """scale: x's leading dims (float32); y: x's shape with the last dim halved (int8)."""
    name = SPEC.name
    if x.rank == 0:
        raise SpecError(f"{name}: input 'x' is a scalar; it needs rank >= 1 (..., 2H)")
    d = x.shape[-1]
    if isinstance(d, int) and d % 2:
        raise SpecError(f"{name}: input 'x' has last dim {d}; expected an even 2H "
                        "(gate and up halves)")
    if weight_scale.rank != 1 or not _same(weight_scale.shape[0], d):
        raise SpecError(f"{name}: input 'weight_scale' has shape {tuple(weight_scale.shape)}; "
                        f"expected ({d},), x's last dim")
    lead = tuple(x.shape[:-1])
    if activation_scale.rank != len(lead) or not all(
            _same(a, b) for a, b in zip(activation_scale.shape, lead, strict=True)):
        raise SpecError(f"{name}: input 'activation_scale' has shape "
                        f"{tuple(activation_scale.shape)}; expected x's leading dims {lead}")
    half = d // 2 if isinstance(d, int) else None
    return [TensorType(lead, "float32"), TensorType(lead + (half,), "int8")]


def _last_axis(fb, op, t):  # type: ignore[no-untyped-def]
    """A keepdims reduction over the last axis: axes an input from opset 18, an attribute
    before."""
    if fb.opset >= 18:
        return fb.op(op, t, fb.op("Constant", value_ints=[-1]), keepdims=1)
    return fb.op(op, t, axes=[-1], keepdims=1)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """The ONNX fallback, in float32: Cast/Mul, Slice halves, Sigmoid/Mul, ReduceMax(Abs),
    Div/Round/Clip/Cast."""

    def const(v):  # type: ignore[no-untyped-def]
        return fb.op("Constant", value_float=v)

    def ints(*v):  # type: ignore[no-untyped-def]
        return fb.op("Constant", value_ints=list(v))

    token = fb.op("Unsqueeze", fb.input("activation_scale"), ints(-1))
    v = fb.op("Mul", fb.op("Mul", fb.op("Cast", fb.input("x"), to=1), fb.input("weight_scale")),
              token)
    d = fb.op("Shape", fb.input("x"), start=-1)
    half = fb.op("Div", d, ints(2))
    gate = fb.op("Slice", v, ints(0), half, ints(-1))
    up = fb.op("Slice", v, half, d, ints(-1))
    act = fb.op("Mul", fb.op("Mul", gate, fb.op("Sigmoid", gate)), up)
    scale = fb.op("Div", _last_axis(fb, "ReduceMax", fb.op("Abs", act)), const(127.0))
    safe = fb.op("Where", fb.op("Equal", scale, const(0.0)), const(1.0), scale)
    q = fb.op("Clip", fb.op("Round", fb.op("Div", act, safe)), const(-127.0), const(127.0))
    return fb.op("Squeeze", scale, ints(-1)), fb.op("Cast", q, to=3)


@SPEC.register_backward
def _backward(inputs, outputs, grads):  # type: ignore[no-untyped-def]
    """Gradients of the scales through the float output ``scale`` (torch tensors; opsdk.torch
    calls it for autograd). y is an integer: no gradient flows through it, and none to x.

    scale = |act_k| / 127 at each token's largest element k, so only act_k receives
    sign(act_k) dscale / 127; then the SwiGLU derivative and the products' rules.
    """
    import torch

    x, weight_scale, activation_scale = inputs
    dscale = grads[0]
    if dscale is None or x.shape[-1] == 0:
        return [None, torch.zeros_like(weight_scale), torch.zeros_like(activation_scale)]
    w = torch.promote_types(weight_scale.dtype, torch.float32)
    ws, ts = weight_scale.to(w), activation_scale.to(w)[..., None]
    xf = x.to(w)
    v = xf * ws * ts
    h = v.shape[-1] // 2
    gate, up = v[..., :h], v[..., h:]
    s = torch.sigmoid(gate)
    act = gate * s * up
    k = act.abs().argmax(-1, keepdim=True)
    dact = torch.zeros_like(act).scatter(
        -1, k, dscale.to(w)[..., None] * torch.sign(act.gather(-1, k)) / 127.0)
    dv = torch.cat([dact * up * s * (1 + gate * (1 - s)), dact * gate * s], dim=-1)
    dws = (dv * xf * ts).reshape(-1, v.shape[-1]).sum(0)
    dts = (dv * xf * ws).sum(-1)
    return [None, dws.to(weight_scale.dtype), dts.to(activation_scale.dtype)]
