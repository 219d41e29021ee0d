"""Softmax: exp(x - max) / sum(exp(x - max)) along one axis, exactly as ONNX (opset 13).

Opset-13 semantics: the normalisation runs along ``axis`` alone (earlier opsets flattened
everything from ``axis`` on). Subtracting the maximum first keeps it finite for any finite
input; a NaN, or an Inf, in a slice along ``axis`` makes that whole slice NaN, as the
formula does.
"""

from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType

SPEC = OpSpec(
    "Softmax",
    domain="com.opsdk",
    version=1,
    inputs=[Input("input", "T", doc="input tensor of rank >= 1")],
    outputs=[Output("output", "T", doc="softmax along axis, same shape and dtype")],
    attrs=[Attr("axis", "int", -1, doc="the axis to normalise along; negative from the end")],
    types={"T": ("float16", "float32", "bfloat16")},
    doc="Numerically stable softmax along one axis (ONNX Softmax, opset 13).",
    onnx_op="Softmax",
    batch_axis=0,
    cases=[
        Case({"input": (5, 37)}, {"axis": -1}, name="last"),
        Case({"input": (3, 4, 21)}, {"axis": 1}, name="middle"),
        Case({"input": (6, 5, 3)}, {"axis": 0}, name="first"),
        Case({"input": (2, 7, 3, 19)}, {"axis": -3}, name="inner_tail"),
        Case({"input": (64, 1031)}, {"axis": 1}, name="large"),
        Case({"input": (2, 70001)}, {"axis": -1}, name="long_rows"),
        Case({"input": (3, 40)}, {"axis": -1}, ranges={"input": (-80.0, 80.0)}, name="wide"),
        Case({"input": (11,)}, {"axis": 0}, name="rank1"),
        Case({"input": (4, 1)}, {"axis": -1}, name="single"),
        Case({"input": (0, 6)}, {"axis": -1}, name="empty"),
    ],
)


@SPEC.register_shape
def _shape(x: TensorType, *, axis: int) -> TensorType:
    """Same shape and dtype as the input; checks that ``axis`` is in range."""
    r = x.rank
    if not -r <= axis < r:
        raise SpecError(
            f"Softmax: attribute 'axis' is {axis}, out of range for input 'input' of rank "
            f"{r}; expected {-r} <= axis < {r}"
            + (" (a scalar has no axis; reshape it to (1,))" if r == 0 else "")
        )
    return TensorType(tuple(x.shape), x.dtype)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """ONNX Softmax itself from opset 13 on, whose per-axis semantics this operator has.

    Earlier opsets flatten everything from ``axis`` on, so there is no decomposition for them.
    """
    if fb.opset < 13:
        raise SpecError(
            f"Softmax: the fallback function needs ai.onnx opset >= 13 (per-axis Softmax); the "
            f"model uses opset {fb.opset}: export with --opset 13 or later"
        )
    return fb.op("Softmax", fb.input("input"), axis=fb.attr("axis"))
