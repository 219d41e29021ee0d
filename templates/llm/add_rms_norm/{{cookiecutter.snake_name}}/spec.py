"""{{ cookiecutter.op_name }}: the residual add fused with RMS normalisation over the last axis.

Created by ``opsdk new {{ cookiecutter.op_name }} --like {{ cookiecutter.starter }}``; change it freely::

    x    = x1 + x2                                              x1's dtype (the new residual)
    rstd = 1 / sqrt(mean(x^2 over the last axis) + epsilon)       float32, x.shape[:-1] + (1,)
    y    = x * rstd * gamma                                       x1's dtype

The sum is kept in float32 for the normalisation and rounded once for the output ``x``, which
the next layer's residual add reads. bfloat16, float16 and float32; statistics in float32.
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
        Input("x1", "T", doc="activations (..., D), rank >= 1", values=_RANGE),
        Input("x2", "T", doc="the residual, x1's shape", values=_RANGE),
        Input("gamma", "T", doc="scale (D,)", values=_SCALE),
    ],
    outputs=[
        Output("y", "T", doc="(x1 + x2) * rstd * gamma, x1's shape"),
        Output("rstd", "float32", doc="1 / sqrt(mean(x^2) + epsilon), x1.shape[:-1] + (1,)",
               optional=True),
        Output("x", "T", doc="x1 + x2, the residual for the next layer", optional=True),
    ],
    attrs=[Attr("epsilon", "float", 1e-6, doc="added to the mean square")],
    types={"T": ("bfloat16", "float16", "float32")},
    doc="Residual add + RMS normalisation over the last axis; rstd and the sum as outputs.",
    batch_axis=0,
    cases=[
        Case({"x1": (4, 33), "x2": (4, 33), "gamma": (33,)}, name="rows"),
        Case({"x1": (2, 3, 64), "x2": (2, 3, 64), "gamma": (64,)}, name="tokens"),
        Case({"x1": (16, 1031), "x2": (16, 1031), "gamma": (1031,)}, name="large"),
        Case({"x1": (0, 8), "x2": (0, 8), "gamma": (8,)}, name="empty_rows"),
        Case({"x1": (9,), "x2": (9,), "gamma": (9,)}, name="rank1"),
    ],
)


def _same(a: object, b: object) -> bool:
    """Equal dims, or either unknown (a symbol or None)."""
    return a == b or not isinstance(a, int) or not isinstance(b, int)


@SPEC.register_shape
def _shape(x1: TensorType, x2: TensorType, gamma: TensorType, *,
           epsilon: float) -> list[TensorType]:
    """y and x like x1; rstd (float32) keeps x1's leading dims and 1 for the last."""
    if x1.rank == 0:
        raise SpecError(f"{SPEC.name}: input 'x1' is a scalar; it needs rank >= 1 (..., D)")
    if x2.rank != x1.rank or not all(_same(a, b) for a, b in zip(x1.shape, x2.shape, strict=True)):
        raise SpecError(
            f"{SPEC.name}: input 'x2' has shape {tuple(x2.shape)}; expected x1's shape "
            f"{tuple(x1.shape)} (the residual is added element by element)"
        )
    if gamma.rank != 1 or not _same(gamma.shape[0], x1.shape[-1]):
        raise SpecError(
            f"{SPEC.name}: input 'gamma' has shape {tuple(gamma.shape)}; expected (D,) with D "
            f"= x1's last dim ({x1.shape[-1]}), e.g. gamma of shape ({x1.shape[-1]},)"
        )
    return [
        TensorType(tuple(x1.shape), x1.dtype),
        TensorType(tuple(x1.shape[:-1]) + (1,), "float32"),
        TensorType(tuple(x1.shape), x1.dtype),
    ]


def _mean_last(fb, t):  # type: ignore[no-untyped-def]
    """ReduceMean over the last axis, keepdims: axes an input from opset 18, an attribute
    before."""
    if fb.opset >= 18:
        return fb.op("ReduceMean", t, fb.op("Constant", value_ints=[-1]), keepdims=1)
    return fb.op("ReduceMean", t, axes=[-1], keepdims=1)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """The ONNX fallback, in float32: Add, then Mul/ReduceMean/Add/Sqrt/Reciprocal and the
    scale."""
    x = fb.op("Add", fb.op("Cast", fb.input("x1"), to=1), fb.op("Cast", fb.input("x2"), to=1))
    gamma = fb.op("Cast", fb.input("gamma"), to=1)
    mean_sq = _mean_last(fb, fb.op("Mul", x, x))
    eps = fb.op("Constant", value_float=fb.attr("epsilon"))
    rstd = fb.op("Reciprocal", fb.op("Sqrt", fb.op("Add", mean_sq, eps)))
    y = fb.op("CastLike", fb.op("Mul", fb.op("Mul", x, rstd), gamma), fb.input("x1"))
    return y, rstd, fb.op("CastLike", x, fb.input("x1"))


@register_ort_equivalent(SPEC.name)
def _onnxruntime(spec, inputs, attrs, outputs):  # type: ignore[no-untyped-def]
    """The ONNX Runtime column of `opsdk bench`: ONNX Runtime's SkipSimplifiedLayerNormalization
    (com.microsoft), whose outputs are (y, mean, inv_std_var, input_skip_bias_sum)."""
    return single_node("SkipSimplifiedLayerNormalization", spec, inputs,
                       {"epsilon": attrs["epsilon"]}, outputs, domain="com.microsoft",
                       node_outputs=["y", "", "rstd", "x"])
