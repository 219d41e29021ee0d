"""{{ cookiecutter.op_name }}: ONNX RMSNormalization (opset 23), as ONNX's reference computes it.

Created by ``opsdk new {{ cookiecutter.op_name }} --like {{ cookiecutter.starter }}``. With ``axis`` splitting
X's shape into rows and the normalised dims (D elements)::

    rms = sqrt(mean(X^2 over the axes from axis on) + epsilon)
    Y   = X / rms * scale

``scale`` broadcasts to the normalised shape ``X.shape[axis:]``. ``stash_type`` 1 (the
statistics in float32, the only type ONNX's reference and ONNX Runtime implement). Unlike
ONNX, X, scale and Y share one type T (ONNX lets scale and Y have a type V of their own).
The names of the inputs and attributes are ONNX's (snake_cased), so the operator can stand
in for an RMSNormalization node (``opsdk rewrite --replace``).
"""

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
        Input("x", "T", doc="input tensor of rank >= 1", values=_RANGE),
        Input("scale", "T", doc="scale, broadcastable to X.shape[axis:]", values=_SCALE),
    ],
    outputs=[Output("y", "T", doc="normalised X, X's shape and dtype")],
    attrs=[
        Attr("axis", "int", -1, doc="first normalised axis; negative counts from the end"),
        Attr("epsilon", "float", 1e-5, doc="added to the mean square"),
        Attr("stash_type", "int", 1, doc="precision of the statistics: 1 (float32) only"),
    ],
    types={"T": ("bfloat16", "float16", "float32")},
    doc="RMS normalisation over the axes from `axis` on, with a scale (ONNX opset 23).",
    onnx_op="RMSNormalization",
    batch_axis=0,
    cases=[
        Case({"x": (4, 33), "scale": (33,)}, {"axis": -1}, name="rows"),
        Case({"x": (2, 3, 4, 5), "scale": (4, 5)}, {"axis": 2}, name="axis2"),
        Case({"x": (2, 3, 4, 5), "scale": (5,)}, {"axis": -2}, name="scale_broadcast"),
        Case({"x": (3, 4, 5), "scale": (3, 4, 5)}, {"axis": 0}, name="axis0"),
        Case({"x": (5, 300), "scale": (300,)}, {"axis": -1, "epsilon": 1e-3},
             ranges={"x": (-50.0, 80.0)}, name="offset_eps"),
        Case({"x": (16, 1031), "scale": (1031,)}, {"axis": 1}, name="large"),
        Case({"x": (0, 8), "scale": (8,)}, {"axis": -1}, name="empty_rows"),
    ],
)


def _axis(rank: int, axis: int) -> int:
    if not -rank <= axis < rank:
        raise SpecError(
            f"{SPEC.name}: attribute 'axis' is {axis}, out of range for input 'x' of rank "
            f"{rank}; expected {-rank} <= axis < {rank}"
        )
    return axis % rank


@SPEC.register_shape
def _shape(x: TensorType, scale: TensorType, *, axis: int, epsilon: float,
           stash_type: int) -> TensorType:
    """Y like X, after checking axis, stash_type and that scale fits X.shape[axis:]."""
    if stash_type != 1:
        raise SpecError(f"{SPEC.name}: attribute 'stash_type' is {stash_type}; only 1 (float32 "
                        "statistics) is supported, as in ONNX's reference and ONNX Runtime")
    if x.rank == 0:
        raise SpecError(f"{SPEC.name}: input 'x' is a scalar; it needs rank >= 1")
    norm = tuple(x.shape[_axis(x.rank, axis):])
    fits = scale.rank <= len(norm) and all(
        s == 1 or not isinstance(s, int) or not isinstance(n, int) or s == n
        for s, n in zip(reversed(scale.shape), reversed(norm), strict=False)
    )
    if not fits:
        raise SpecError(f"{SPEC.name}: input 'scale' has shape {tuple(scale.shape)}, which does "
                        f"not broadcast to the normalised shape {norm} (X.shape[axis:]); give "
                        f"it those dims or 1s, e.g. {norm}")
    return TensorType(tuple(x.shape), x.dtype)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """ONNX RMSNormalization itself (opset 23 on)."""
    return fb.op("RMSNormalization", fb.input("x"), fb.input("scale"), axis=fb.attr("axis"),
                 epsilon=fb.attr("epsilon"), stash_type=fb.attr("stash_type"))


@SPEC.register_backward
def _backward(inputs, outputs, grads, *, axis, epsilon, stash_type):  # type: ignore[no-untyped-def]
    """Gradients of x and scale (torch tensors; opsdk.torch calls it for autograd).

    With r = 1 / rms over the normalised axes and g = dy * scale: dx = r g - x r^3 mean(g x);
    dscale = dy x r summed over the axes scale was broadcast along.
    """
    import torch

    x, scale = inputs
    (dy,) = grads
    if dy is None:
        return [torch.zeros_like(x), torch.zeros_like(scale)]
    w = torch.promote_types(x.dtype, torch.float32)  # float32, or float64 under gradcheck
    xf, d = x.to(w), dy.to(w)
    dims = tuple(range(axis % x.dim(), x.dim()))
    r = torch.rsqrt(xf.pow(2).mean(dims, keepdim=True) + epsilon)
    g = d * scale.to(w)
    dx = r * g - xf * r.pow(3) * (g * xf).mean(dims, keepdim=True)
    dscale = (d * xf * r).sum_to_size(scale.shape)
    return [dx.to(x.dtype), dscale.to(scale.dtype)]
