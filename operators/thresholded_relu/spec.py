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
