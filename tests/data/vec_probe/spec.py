"""VecProbe: a test-only operator that applies one <opsdk/vec.h> function elementwise."""

from opsdk.spec import Attr, Input, OpSpec, Output

SPEC = OpSpec(
    "VecProbe",
    domain="com.opsdk.test",
    inputs=[Input("x", "T")],
    outputs=[Output("y", "T")],
    attrs=[
        Attr("fn", "string", "copy",
             doc="copy, copy_stream, exp, exp8, recip, recip8 or lanes (kLanes in every y)"),
    ],
    types={"T": ("float32", "float16", "bfloat16")},
)
