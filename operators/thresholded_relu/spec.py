"""ThresholdedRelu: y = x if x > alpha else 0 (ONNX ThresholdedRelu semantics)."""

from opsdk.spec import Attr, Input, OpSpec, Output, TFloat

SPEC = OpSpec(
    "ThresholdedRelu",
    domain="com.opsdk",
    version=1,
    inputs=[Input("x", "T", doc="input tensor")],
    outputs=[Output("y", "T", doc="x where x > alpha, else 0")],
    attrs=[Attr("alpha", "float", 1.0, doc="threshold")],
    types={"T": TFloat},
    doc="Elementwise thresholded rectifier: y = x if x > alpha else 0.",
    onnx_op="ThresholdedRelu",
)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """Where(Greater(x, alpha), x, 0), comparing in x's dtype as the kernel does."""
    x = fb.input("x")
    alpha = fb.op("CastLike", fb.op("Constant", value_float=fb.attr("alpha")), x)
    zero = fb.op("CastLike", fb.op("Constant", value_float=0.0), x)
    return fb.op("Where", fb.op("Greater", x, alpha), x, zero)
