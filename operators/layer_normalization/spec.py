"""LayerNormalization: normalise over the trailing axes, exactly as ONNX (opset 17).

With ``axis`` splitting X's shape into outer (rows) and normalised (D elements) parts::

    Mean      = mean(X, over axes >= axis)
    InvStdDev = 1 / sqrt(mean((X - Mean)^2) + epsilon)
    Y         = (X - Mean) * InvStdDev * Scale + B

Scale and B broadcast unidirectionally to X, as ONNX specifies: usually they have the
normalised shape ``X.shape[axis:]``, but they may also vary along X's outer axes (a Scale
of shape (2, 2, 2) for X (2, 2, 2) and axis -1), as ONNX's reference and ONNX Runtime
allow. Mean and InvStdDev have shape
``X.shape[:axis] + (1,) * (rank - axis)`` and are float32 (``stash_type`` 1, the only stash
type ONNX's reference and ONNX Runtime implement): all statistics are computed in float32
or wider whatever X's dtype. They are real outputs (ONNX marks them optional): a caller
that needs only Y takes the first element of the returned tuple.
"""

from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType, Values

#: The statistics are float32 sums: a row holding values beyond ~1e4 next to values near 1
#: loses the small ones (65504 + 1 - 65504 is 0 in float32 after a few hundred terms), and
#: a square beyond float32's max overflows. The generated edge values stay in this range.
_STATS_RANGE = Values(range=(-1e4, 1e4))

SPEC = OpSpec(
    "LayerNormalization",
    domain="com.opsdk",
    version=1,
    inputs=[
        Input("X", "T", doc="input tensor of rank >= 1", values=_STATS_RANGE),
        # The kernel's order of operations makes an infinite Scale NaN where the textbook
        # order, (X - Mean) * InvStdDev * Scale + B, gives +-Inf; ONNX defines neither.
        Input("Scale", "T", doc="scale, broadcastable to X (usually X.shape[axis:])",
              values=Values(range=(-1e4, 1e4), inf=False)),
        Input("B", "T", optional=True, doc="bias, broadcastable to X (usually X.shape[axis:])",
              values=_STATS_RANGE),
    ],
    outputs=[
        Output("Y", "T", doc="normalised X, same shape and dtype as X"),
        Output("Mean", "float32", doc="mean over the normalised axes (keepdims)"),
        Output("InvStdDev", "float32", doc="1 / sqrt(variance + epsilon) (keepdims)"),
    ],
    attrs=[
        Attr("axis", "int", -1, doc="first normalised axis; negative counts from the end"),
        Attr("epsilon", "float", 1e-5, doc="added to the variance"),
        Attr("stash_type", "int", 1, doc="precision of Mean/InvStdDev: 1 (float32) only"),
    ],
    types={"T": ("float16", "float32", "bfloat16")},
    doc="Layer normalisation over the axes from `axis` on, with scale and optional bias.",
    onnx_op="LayerNormalization",
    # Y = a * Scale + B cancels where a * Scale ~ -B: the float32 rounding of the O(1)
    # terms (~1e-8 absolute) is then large relative to Y itself, for any float32
    # implementation. torch.testing's allclose (atol 1e-5) judges that absolute error.
    standard="allclose",
    batch_axis=0,
    cases=[
        Case({"X": (4, 33), "Scale": (33,), "B": (33,)}, {"axis": -1}, name="rows"),
        Case({"X": (2, 3, 40), "Scale": (40,)}, {"axis": -1}, name="no_bias"),
        Case({"X": (2, 3, 4, 5), "Scale": (4, 5), "B": (4, 5)}, {"axis": 2}, name="axis2"),
        Case({"X": (3, 4, 5), "Scale": (3, 4, 5), "B": (5,)}, {"axis": 0}, name="axis0"),
        Case({"X": (2, 6, 7), "Scale": (1, 7), "B": (6, 1)}, {"axis": -2}, name="broadcast"),
        Case({"X": (2, 2, 2), "Scale": (2, 2, 2), "B": (2, 1, 2)}, {"axis": -1},
             name="outer_broadcast"),
        Case({"X": (3, 4, 5, 6), "Scale": (4, 1, 6), "B": (1, 5, 6)}, {"axis": 3},
             name="outer_mixed"),
        # epsilon comparable to the variance: a kernel that ignored epsilon passed when the
        # only epsilon case had a variance of ~1e4
        Case({"X": (3, 16), "Scale": (16,), "B": (16,)}, {"epsilon": 0.5},
             ranges={"X": (-1.0, 1.0)}, name="large_eps"),
        Case({"X": (5, 300), "Scale": (300,), "B": (300,)}, {"epsilon": 1e-3},
             ranges={"X": (-100.0, 300.0)}, name="offset_eps"),
        Case({"X": (64, 1031), "Scale": (1031,), "B": (1031,)}, {"axis": 1}, name="large"),
        Case({"X": (0, 8), "Scale": (8,), "B": (8,)}, {"axis": 1}, name="empty_rows"),
        Case({"X": (9,), "Scale": (9,), "B": (9,)}, {"axis": 0}, name="rank1"),
    ],
)


def _axis(rank: int, axis: int) -> int:
    if not -rank <= axis < rank:
        raise SpecError(
            f"LayerNormalization: attribute 'axis' is {axis}, out of range for input 'X' of "
            f"rank {rank}; expected {-rank} <= axis < {rank}"
        )
    return axis % rank


def _check_param(name: str, t: TensorType | None, x: TensorType) -> None:
    """ONNX: Scale and B broadcast unidirectionally to X (right-aligned, 1 or equal)."""
    if t is None:
        return
    ok = len(t.shape) <= x.rank and all(
        d == 1 or n is None or d is None or isinstance(d, str) or isinstance(n, str) or d == n
        for d, n in zip(reversed(t.shape), reversed(x.shape))
    )
    if not ok:
        raise SpecError(
            f"LayerNormalization: input {name!r} has shape {tuple(t.shape)}, which does not "
            f"broadcast to X's shape {tuple(x.shape)}; give it X's trailing dims (or 1 in "
            "the dims to broadcast), e.g. X.shape[axis:]"
        )


@SPEC.register_shape
def _shape(
    x: TensorType,
    scale: TensorType,
    b: TensorType | None = None,
    *,
    axis: int,
    epsilon: float,
    stash_type: int,
) -> list[TensorType]:
    """Y like X; Mean and InvStdDev (float32) keep X's leading dims, 1 for the others."""
    if stash_type != 1:
        raise SpecError(
            f"LayerNormalization: attribute 'stash_type' is {stash_type}; only 1 (float32 "
            "statistics) is supported, as in ONNX's reference and ONNX Runtime"
        )
    if x.rank == 0:
        raise SpecError("LayerNormalization: input 'X' is a scalar; it needs rank >= 1")
    a = _axis(x.rank, axis)
    _check_param("Scale", scale, x)
    _check_param("B", b, x)
    stats = tuple(x.shape[:a]) + (1,) * (x.rank - a)
    return [
        TensorType(tuple(x.shape), x.dtype),
        TensorType(stats, "float32"),
        TensorType(stats, "float32"),
    ]


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """ONNX LayerNormalization itself (opset 17 on), with its three outputs."""
    return fb.op("LayerNormalization", fb.input("X"), fb.input("Scale"), fb.input("B"),
                 outputs=3, axis=fb.attr("axis"), epsilon=fb.attr("epsilon"),
                 stash_type=fb.attr("stash_type"))
