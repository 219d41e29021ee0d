"""Probe: a test-only operator that reports what its kernel saw (pointer, strides, ...)."""

from opsdk.spec import Attr, Input, OpSpec, Output, TensorType

SPEC = OpSpec(
    "Probe",
    domain="com.opsdk.test",
    inputs=[Input("x", "T"), Input("bias", "T", optional=True)],
    outputs=[Output("info", "int64")],
    attrs=[
        Attr("mode", "string", "info"),
        Attr("scale", "float", 1.0),
        Attr("axes", "ints", [0]),
        Attr("flag", "bool", False),
        Attr("count", "int", 3),
        Attr("weights", "floats", [0.5]),
    ],
    types={"T": ("float32", "float64")},
)


@SPEC.register_shape
def _shape(x, bias=None, **attrs):
    return TensorType((8,), "int64")
