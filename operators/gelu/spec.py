"""Gelu: the Gaussian error linear unit, exactly as ONNX Gelu (opset 20).

``approximate="none"``: ``y = 0.5 x (1 + erf(x / sqrt(2)))``;
``approximate="tanh"``: ``y = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``.
"""

from opsdk.spec import Attr, Case, Input, OpSpec, Output

SPEC = OpSpec(
    "Gelu",
    domain="com.opsdk",
    version=1,
    inputs=[Input("X", "T", doc="input tensor, any shape")],
    outputs=[Output("Y", "T", doc="Gelu(X), same shape and dtype as X")],
    attrs=[
        Attr("approximate", "string", "none", doc="'none' (exact, erf) or 'tanh'"),
    ],
    types={"T": ("float16", "float32", "bfloat16")},
    doc="Gaussian error linear unit: y = x * Phi(x), exact (erf) or tanh approximation.",
    onnx_op="Gelu",
    cases=[
        Case({"X": (3, 67)}, name="erf"),
        Case({"X": (3, 67)}, {"approximate": "tanh"}, name="tanh"),
        Case({"X": (4, 257)}, ranges={"X": (-12.0, 12.0)}, name="tails"),
    ],
)

