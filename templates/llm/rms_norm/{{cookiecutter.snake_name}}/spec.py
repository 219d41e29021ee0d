"""{{ cookiecutter.op_name }}: RMS normalisation over the last axis, as LLaMA-style models use it.

Created by ``opsdk new {{ cookiecutter.op_name }} --like {{ cookiecutter.starter }}``; change it freely::

    rstd = 1 / sqrt(mean(x^2 over the last axis) + epsilon)     float32, shape x.shape[:-1] + (1,)
    y    = x * rstd * gamma                                       x's dtype

Statistics are computed in float32 whatever x's dtype (bfloat16, float16, float32). rstd is
the per-row statistic a backward or a fused follower reuses; it is an optional output: a graph
node that does not use it leaves it out (an empty name, as ``opsdk rewrite --replace`` writes
it when it folds an exported RMSNorm).
"""

from opsdk.bench import register_ort_equivalent, single_node
from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType, Values

#: Sums of squares are float32 (as on the NPU): a value beyond ~1e4 squares past float32's
#: range where the float64 reference still has a finite RMS, so the generated edge values
#: stay in this range; an infinite scale is left out (0 * inf where a row's RMS overflows).
_RANGE = Values(range=(-1e4, 1e4))
_SCALE = Values(range=(-1e4, 1e4), inf=False)

SPEC = OpSpec(
    "{{ cookiecutter.op_name }}",
    domain="{{ cookiecutter.domain }}",
    version=1,
    inputs=[
        Input("x", "T", doc="activations (..., D), rank >= 1", values=_RANGE),
        Input("gamma", "T", doc="scale (D,)", values=_SCALE),
    ],
    outputs=[
        Output("y", "T", doc="x * rstd * gamma, x's shape"),
        Output("rstd", "float32", doc="1 / sqrt(mean(x^2) + epsilon), x.shape[:-1] + (1,)",
               optional=True),
    ],
    attrs=[Attr("epsilon", "float", 1e-6, doc="added to the mean square")],
    types={"T": ("bfloat16", "float16", "float32")},
    doc="RMS normalisation over the last axis with a learned scale; rstd as a second output.",
    batch_axis=0,
    cases=[
        Case({"x": (4, 33), "gamma": (33,)}, name="rows"),
        Case({"x": (2, 3, 64), "gamma": (64,)}, name="tokens"),
        Case({"x": (5, 300), "gamma": (300,)}, {"epsilon": 1e-3}, ranges={"x": (-50.0, 80.0)},
             name="offset_eps"),
        Case({"x": (16, 1031), "gamma": (1031,)}, name="large"),
        Case({"x": (0, 8), "gamma": (8,)}, name="empty_rows"),
        Case({"x": (9,), "gamma": (9,)}, name="rank1"),
    ],
)


def _same(a: object, b: object) -> bool:
    """Equal dims, or either unknown (a symbol or None)."""
    return a == b or not isinstance(a, int) or not isinstance(b, int)


@SPEC.register_shape
def _shape(x: TensorType, gamma: TensorType, *, epsilon: float) -> list[TensorType]:
    """y like x; rstd (float32) keeps x's leading dims and 1 for the last."""
    if x.rank == 0:
        raise SpecError(f"{SPEC.name}: input 'x' is a scalar; it needs rank >= 1 (..., D)")
    if gamma.rank != 1 or not _same(gamma.shape[0], x.shape[-1]):
        raise SpecError(
            f"{SPEC.name}: input 'gamma' has shape {tuple(gamma.shape)}; expected (D,) with D "
            f"= x's last dim ({x.shape[-1]}), e.g. gamma of shape ({x.shape[-1]},)"
        )
    return [
        TensorType(tuple(x.shape), x.dtype),
        TensorType(tuple(x.shape[:-1]) + (1,), "float32"),
    ]


def _mean_last(fb, t):  # type: ignore[no-untyped-def]
    """ReduceMean over the last axis, keepdims: axes an input from opset 18, an attribute
    before."""
    if fb.opset >= 18:
        return fb.op("ReduceMean", t, fb.op("Constant", value_ints=[-1]), keepdims=1)
    return fb.op("ReduceMean", t, axes=[-1], keepdims=1)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """The ONNX fallback, in float32: Mul/ReduceMean/Add/Sqrt/Reciprocal, then the scale."""
    x = fb.op("Cast", fb.input("x"), to=1)
    gamma = fb.op("Cast", fb.input("gamma"), to=1)
    mean_sq = _mean_last(fb, fb.op("Mul", x, x))
    eps = fb.op("Constant", value_float=fb.attr("epsilon"))
    rstd = fb.op("Reciprocal", fb.op("Sqrt", fb.op("Add", mean_sq, eps)))
    y = fb.op("CastLike", fb.op("Mul", fb.op("Mul", x, rstd), gamma), fb.input("x"))
    return y, rstd


@register_ort_equivalent(SPEC.name)
def _onnxruntime(spec, inputs, attrs, outputs):  # type: ignore[no-untyped-def]
    """The ONNX Runtime column of `opsdk bench`: ONNX Runtime's SimplifiedLayerNormalization,
    the node its optimizer fuses an exported RMSNorm into (outputs y and rstd alike)."""
    return single_node("SimplifiedLayerNormalization", spec, inputs,
                       {"axis": -1, "epsilon": attrs["epsilon"]}, outputs)


@SPEC.register_backward
def _backward(inputs, outputs, grads, *, epsilon):  # type: ignore[no-untyped-def]
    """Gradients of x and gamma (torch tensors; opsdk.torch calls it for autograd).

    With r = rstd and g = dy * gamma: dx = r g - x r^3 mean(g x) (- drstd r^3 x / D when rstd's
    gradient flows too); dgamma = sum over rows of dy x r.
    """
    import torch

    x, gamma = inputs
    dy, drstd = grads
    w = torch.promote_types(x.dtype, torch.float32)  # float32, or float64 under gradcheck
    xf, gf = x.to(w), gamma.to(w)
    d = max(x.shape[-1], 1)
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + epsilon)
    dx = torch.zeros_like(xf)
    dgamma = torch.zeros_like(gf)
    if dy is not None:
        g = dy.to(w) * gf
        dx = r * g - xf * r.pow(3) * (g * xf).mean(-1, keepdim=True)
        dgamma = (dy.to(w) * xf * r).reshape(-1, x.shape[-1]).sum(0)
    if drstd is not None:
        dx = dx - drstd.to(w) * r.pow(3) * xf / d
    return [dx.to(x.dtype), dgamma.to(gamma.dtype)]
