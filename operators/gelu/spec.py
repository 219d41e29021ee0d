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



@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """Both forms in float32, chosen by ``approximate`` (mapped to 0/1 by LabelEncoder).

    none: 0.5 X (1 + erf(X / sqrt 2)); tanh: with z = sqrt(2 / pi) (X + 0.044715 X^3) and
    t = exp(-2 |z|), X / (1 + t) for z >= 0 and X t / (1 + t) for z < 0, which equals
    0.5 X (1 + tanh z) without its cancellation or overflow for X far below zero. The
    result is rounded once to X's dtype.
    """
    import math

    x = fb.op("Cast", fb.input("X"), to=1)  # float32

    def const(v):  # type: ignore[no-untyped-def]
        return fb.op("Constant", value_float=v)

    one = const(1.0)
    scaled = fb.op("Div", x, const(math.sqrt(2.0)))
    exact = fb.op("Mul", fb.op("Mul", const(0.5), x), fb.op("Add", one, fb.op("Erf", scaled)))
    cube = fb.op("Pow", x, const(3.0))
    z = fb.op("Mul", const(math.sqrt(2.0 / math.pi)),
              fb.op("Add", x, fb.op("Mul", const(0.044715), cube)))
    t = fb.op("Exp", fb.op("Mul", const(-2.0), fb.op("Abs", z)))  # in (0, 1]: no overflow
    numer = fb.op("Where", fb.op("Less", z, const(0.0)), fb.op("Mul", x, t), x)
    approx = fb.op("Div", numer, fb.op("Add", one, t))
    mode = fb.op("LabelEncoder", fb.op("Constant", value_string=fb.attr("approximate")),
                 domain="ai.onnx.ml", version=2, keys_strings=["none", "tanh"],
                 values_int64s=[0, 1], default_int64=0)
    is_tanh = fb.op("Cast", mode, to=9)  # bool
    return fb.op("CastLike", fb.op("Where", is_tanh, approx, exact), fb.input("X"))
