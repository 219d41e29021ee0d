"""FusedConvBnRelu: the operator's spec, the single source of truth.

``y = relu(conv2d(x, w) + b)``: an NCHW 2-D convolution exactly as ONNX Conv (strides,
pads in ONNX order ``[top, left, bottom, right]``, dilations, group), plus the optional
per-output-channel bias, followed by Relu in the same pass. It is what
``Conv -> BatchNormalization -> Relu`` becomes once BatchNormalization is folded into the
convolution's weights and bias (``opsdk rewrite --fuse conv-bn-relu``)::

    s = scale / sqrt(var + epsilon)
    w' = w * s[:, None, None, None]
    b' = (b - mean) * s + bias          (b = 0 when the Conv has no bias)

There are no BatchNormalization inputs: the rewrite folds them into ``w`` and ``b``.
"""

from __future__ import annotations

from typing import Any

from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType, Values

#: A sum of products: with +-Inf (or float32's largest values) among its terms, the order
#: of the additions decides between +-Inf and NaN, and IEEE leaves the order to the
#: implementation. The generated edge values keep NaN and float16's largest finite values.
_PRODUCTS = Values(range=(-65504.0, 65504.0), inf=False)

SPEC = OpSpec(
    "FusedConvBnRelu",
    domain="com.opsdk",
    version=1,
    inputs=[
        Input("x", "T", rank=4, doc="input, NCHW (N, C, H, W)", values=_PRODUCTS),
        Input("w", "T", rank=4, doc="weights with BN folded in, (M, C / group, kH, kW)",
              values=_PRODUCTS),
        Input("b", "T", optional=True, rank=1, doc="bias with BN folded in, (M,)",
              values=_PRODUCTS),
    ],
    outputs=[
        Output("y", "T", doc="relu(conv(x, w) + b), (N, M, OH, OW)"),
    ],
    attrs=[
        Attr("strides", "ints", [1, 1], doc="stride along H and W"),
        Attr("pads", "ints", [0, 0, 0, 0], doc="zero padding [top, left, bottom, right]"),
        Attr("dilations", "ints", [1, 1], doc="dilation along H and W"),
        Attr("group", "int", 1, doc="number of groups; C and M must be divisible by it"),
    ],
    types={"T": ("float16", "float32")},
    doc="2-D convolution (BatchNormalization folded into w and b) with Relu, in one pass.",
    standard="msopst",
    batch_axis=0,
    compute="cube",  # a convolution: the Cube unit (ATC precision modes treat it so)
    cases=[
        Case({"x": (1, 3, 7, 7), "w": (4, 3, 3, 3)}, {"group": 1}, name="no_bias"),
        Case({"x": (2, 8, 9, 9), "w": (16, 8, 3, 3), "b": (16,)},
             {"pads": [1, 1, 1, 1]}, name="3x3_same"),
        Case({"x": (2, 16, 8, 8), "w": (24, 16, 1, 1), "b": (24,)}, {"group": 1}, name="1x1"),
        Case({"x": (1, 8, 11, 10), "w": (12, 8, 1, 1), "b": (12,)},
             {"strides": [2, 2]}, name="1x1_stride2"),
        Case({"x": (1, 6, 13, 12), "w": (10, 6, 3, 3), "b": (10,)},
             {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2]}, name="asym"),
        Case({"x": (2, 8, 10, 10), "w": (12, 2, 3, 3), "b": (12,)},
             {"group": 4, "pads": [1, 1, 1, 1]}, name="grouped"),
        Case({"x": (1, 8, 9, 9), "w": (8, 1, 3, 3), "b": (8,)},
             {"group": 8, "pads": [1, 1, 1, 1], "strides": [2, 2]}, name="depthwise"),
        Case({"x": (1, 4, 10, 11), "w": (8, 1, 3, 3), "b": (8,)},
             {"group": 4, "pads": [2, 0, 1, 2], "dilations": [2, 1]}, name="depthwise_x2_dilated"),
        Case({"x": (2, 6, 7, 9), "w": (6, 1, 5, 5)},
             {"group": 6, "pads": [2, 2, 2, 2], "strides": [1, 2]}, name="depthwise_5x5_no_bias"),
        Case({"x": (2, 8, 7, 6), "w": (4, 2, 3, 3), "b": (4,)},
             {"group": 4, "pads": [1, 1, 1, 1]}, name="grouped_2_per_group"),
        Case({"x": (1, 3, 17, 17), "w": (8, 3, 7, 7), "b": (8,)},
             {"strides": [2, 2], "pads": [3, 3, 3, 3]}, name="stem7x7"),
        Case({"x": (1, 64, 14, 14), "w": (64, 64, 3, 3), "b": (64,)},
             {"pads": [1, 1, 1, 1]}, name="resnet_block"),
        Case({"x": (0, 4, 5, 5), "w": (4, 4, 3, 3), "b": (4,)}, {"group": 1}, name="empty_batch"),
    ],
)


def _pair(name: str, value: list[int], n: int, minimum: int) -> list[int]:
    if len(value) != n or any(v < minimum for v in value):
        raise SpecError(
            f"FusedConvBnRelu: attribute {name!r} must be {n} ints >= {minimum}, got {value}; "
            + ("pass [top, left, bottom, right]" if n == 4 else "pass [h, w]")
        )
    return value


def _out_dim(size: Any, k: Any, stride: int, pad: int, dilation: int, axis: str) -> Any:
    if not isinstance(size, int) or not isinstance(k, int):
        return None
    extent = dilation * (k - 1) + 1
    if size + pad < extent:
        raise SpecError(
            f"FusedConvBnRelu: input 'x' {axis}={size - pad} (padded) is smaller than the "
            f"dilated kernel extent {extent}; use a smaller kernel or more padding"
        )
    return (size + pad - extent) // stride + 1


def _check_channels(x: TensorType, w: TensorType, b: TensorType | None, group: int) -> None:
    c, m, cg = x.shape[1], w.shape[0], w.shape[1]
    if group < 1:
        raise SpecError(f"FusedConvBnRelu: attribute 'group' must be >= 1, got {group}")
    if isinstance(c, int) and isinstance(cg, int) and c != cg * group:
        raise SpecError(
            f"FusedConvBnRelu: input 'w' has {cg} input channels per group (shape "
            f"{tuple(w.shape)}), expected C / group = {c} / {group}; w must be "
            "(M, C / group, kH, kW)"
        )
    if isinstance(m, int) and m % group:
        raise SpecError(
            f"FusedConvBnRelu: input 'w' has M={m} output channels, which group={group} "
            "does not divide"
        )
    if b is not None and isinstance(b.shape[0], int) and isinstance(m, int) and b.shape[0] != m:
        raise SpecError(
            f"FusedConvBnRelu: input 'b' has shape {tuple(b.shape)}, expected ({m},) "
            "(one bias per output channel of w)"
        )


@SPEC.register_shape
def _shape(
    x: TensorType,
    w: TensorType,
    b: TensorType | None = None,
    *,
    strides: list[int],
    pads: list[int],
    dilations: list[int],
    group: int,
) -> TensorType:
    """(N, C, H, W), (M, C/group, kH, kW) -> (N, M, OH, OW), as ONNX Conv infers it."""
    sh, sw = _pair("strides", strides, 2, 1)
    pt, pl, pb, pr = _pair("pads", pads, 4, 0)
    dh, dw = _pair("dilations", dilations, 2, 1)
    _check_channels(x, w, b, group)
    oh = _out_dim(x.shape[2], w.shape[2], sh, pt + pb, dh, "H")
    ow = _out_dim(x.shape[3], w.shape[3], sw, pl + pr, dw, "W")
    return TensorType((x.shape[0], w.shape[0], oh, ow), x.dtype)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """Relu(Conv(x, w, b)) with the same strides, pads, dilations and group (ONNX pads are
    [top, left, bottom, right] for 2-D too); a missing b stays missing."""
    conv = fb.op("Conv", fb.input("x"), fb.input("w"), fb.input("b"),
                 strides=fb.attr("strides"), pads=fb.attr("pads"),
                 dilations=fb.attr("dilations"), group=fb.attr("group"))
    return fb.op("Relu", conv)
