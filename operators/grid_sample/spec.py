"""GridSample: the operator's spec, the single source of truth.

ONNX GridSample (opsets 16 and 20): sample ``x`` (N, C, H, W) -- or (N, C, D, H, W) --
at the normalised locations of ``grid`` (N, H_out, W_out, 2) -- or (N, D_out, H_out,
W_out, 3) -- whose last axis holds (x, y[, z]) in [-1, 1], with nearest, (bi/tri)linear
or (bi)cubic interpolation and zeros, border or reflection padding.

Mode names: opset 20 calls them ``linear``, ``nearest`` and ``cubic``; opset 16's
``bilinear`` and ``bicubic`` are accepted as aliases, so models of either opset run.
"""

from __future__ import annotations

from typing import Any

from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType, Values

#: Accepted spellings of ``mode`` -> canonical (opset 20) name.
MODES = {
    "linear": "linear", "bilinear": "linear",
    "nearest": "nearest",
    "cubic": "cubic", "bicubic": "cubic",
}
PADDING_MODES = ("zeros", "border", "reflection")

SPEC = OpSpec(
    "GridSample",
    domain="com.opsdk",
    version=1,
    inputs=[
        # Interpolation weights the corner values: an infinite value with a zero weight is
        # NaN in one order of the terms and +-Inf in another, which ONNX does not fix; and
        # neighbours of opposite sign cancel, leaving float32's rounding of the corner
        # values (2^-24 of them), which allclose's atol of 1e-5 bounds at about 16.
        Input("x", "T", doc="input, (N, C, H, W) or (N, C, D, H, W)",
              values=Values(range=(-16.0, 16.0), inf=False)),
        Input("grid", "T2", doc="sampling locations, (N, H_out, W_out, 2) or "
              "(N, D_out, H_out, W_out, 3), normalised to [-1, 1]"),
    ],
    outputs=[
        Output("y", "T", doc="(N, C, H_out, W_out) or (N, C, D_out, H_out, W_out)"),
    ],
    attrs=[
        Attr("mode", "string", "linear",
             doc="linear (alias bilinear), nearest, or cubic (alias bicubic)"),
        Attr("padding_mode", "string", "zeros", doc="zeros, border or reflection"),
        Attr("align_corners", "int", 0,
             doc="1: -1 and 1 are the centres of the corner pixels; 0: their outer edges"),
    ],
    types={"T": ("float16", "float32"), "T2": ("float16", "float32")},
    doc="Sample x at the normalised locations of grid (ONNX GridSample).",
    standard="allclose",
    batch_axis=0,
    onnx_op="GridSample",
    cases=[
        Case({"x": (2, 3, 7, 9), "grid": (2, 5, 6, 2)}, {"mode": "linear"},
             ranges={"grid": (-1.2, 1.2)}, name="linear_zeros"),
        Case({"x": (1, 4, 8, 5), "grid": (1, 9, 7, 2)},
             {"mode": "bilinear", "padding_mode": "border", "align_corners": 1},
             ranges={"grid": (-1.5, 1.5)}, name="bilinear_border_ac1"),
        Case({"x": (2, 2, 6, 6), "grid": (2, 8, 8, 2)}, {"padding_mode": "reflection"},
             ranges={"grid": (-3.0, 3.0)}, name="linear_reflection"),
        Case({"x": (1, 2, 6, 5), "grid": (1, 8, 8, 2)},
             {"padding_mode": "reflection", "align_corners": 1},
             ranges={"grid": (-3.0, 3.0)}, name="linear_reflection_ac1"),
        Case({"x": (2, 3, 5, 7), "grid": (2, 6, 4, 2)}, {"mode": "nearest"},
             ranges={"grid": (-1.3, 1.3)}, name="nearest_zeros"),
        Case({"x": (1, 3, 5, 7), "grid": (1, 6, 4, 2)},
             {"mode": "nearest", "padding_mode": "border", "align_corners": 1},
             ranges={"grid": (-1.3, 1.3)}, name="nearest_border_ac1"),
        Case({"x": (1, 3, 5, 7), "grid": (1, 6, 4, 2)},
             {"mode": "nearest", "padding_mode": "reflection"},
             ranges={"grid": (-2.5, 2.5)}, name="nearest_reflection"),
        Case({"x": (2, 2, 6, 7), "grid": (2, 5, 5, 2)}, {"mode": "cubic"},
             ranges={"grid": (-1.2, 1.2)}, name="cubic_zeros"),
        Case({"x": (1, 2, 6, 7), "grid": (1, 5, 5, 2)},
             {"mode": "bicubic", "padding_mode": "border", "align_corners": 1},
             ranges={"grid": (-1.2, 1.2)}, name="bicubic_border_ac1"),
        Case({"x": (1, 2, 6, 7), "grid": (1, 5, 5, 2)},
             {"mode": "cubic", "padding_mode": "reflection"},
             ranges={"grid": (-2.0, 2.0)}, name="cubic_reflection"),
        Case({"x": (1, 2, 4, 5, 6), "grid": (1, 3, 4, 5, 3)}, {"mode": "linear"},
             ranges={"grid": (-1.2, 1.2)}, name="volumetric_linear"),
        Case({"x": (1, 2, 4, 5, 6), "grid": (1, 3, 4, 5, 3)},
             {"mode": "nearest", "padding_mode": "reflection", "align_corners": 1},
             ranges={"grid": (-1.5, 1.5)}, name="volumetric_nearest"),
        Case({"x": (1, 1, 1, 1), "grid": (1, 3, 3, 2)},
             {"padding_mode": "reflection", "align_corners": 1}, name="single_pixel"),
        Case({"x": (1, 32, 24, 40), "grid": (1, 33, 47, 2)}, {"mode": "linear"},
             ranges={"grid": (-1.1, 1.1)}, name="larger"),
        Case({"x": (2, 3, 4, 4), "grid": (2, 0, 5, 2)}, {"mode": "linear"}, name="empty_grid"),
        Case({"x": (2, 1, 5, 6), "grid": (2, 240, 240, 2)}, {"mode": "linear"},
             ranges={"grid": (-1.1, 1.1)}, name="chunked"),
    ],
)


def _check_attrs(mode: str, padding_mode: str, align_corners: int, rank: int) -> None:
    if mode not in MODES:
        raise SpecError(
            f"GridSample: attribute 'mode' is {mode!r}, expected one of "
            f"{', '.join(MODES)} (opset 20 names linear/nearest/cubic; opset 16 aliases)"
        )
    if padding_mode not in PADDING_MODES:
        raise SpecError(
            f"GridSample: attribute 'padding_mode' is {padding_mode!r}, expected one of "
            f"{', '.join(PADDING_MODES)}"
        )
    if align_corners not in (0, 1):
        raise SpecError(
            f"GridSample: attribute 'align_corners' must be 0 or 1, got {align_corners}"
        )
    if rank not in (4, 5):
        raise SpecError(
            f"GridSample: input 'x' has rank {rank}, expected 4 (N, C, H, W) or 5 "
            "(N, C, D, H, W)"
        )


@SPEC.register_shape
def _shape(
    x: TensorType, grid: TensorType, *, mode: str, padding_mode: str, align_corners: int
) -> TensorType:
    """(N, C, *in), (N, *out, r) -> (N, C, *out)."""
    _check_attrs(mode, padding_mode, align_corners, x.rank)
    r = x.rank - 2
    last: Any = grid.shape[-1] if grid.rank else None
    if grid.rank != x.rank or (isinstance(last, int) and last != r):
        raise SpecError(
            f"GridSample: input 'grid' has shape {tuple(grid.shape)}, expected rank {x.rank} "
            f"with a last axis of {r} (N, *out, {r}) for x of shape {tuple(x.shape)}"
        )
    if any(d == 0 for d in x.shape[2:]):
        raise SpecError(
            f"GridSample: input 'x' has an empty spatial dim (shape {tuple(x.shape)}), so "
            "there is nothing to sample from; give every spatial dim at least 1 (PyTorch "
            "and ONNX Runtime refuse it too)"
        )
    n, gn = x.shape[0], grid.shape[0]
    if isinstance(n, int) and isinstance(gn, int) and n != gn:
        raise SpecError(
            f"GridSample: input 'grid' has batch {gn}, expected {n} (the batch of 'x')"
        )
    return TensorType((x.shape[0], x.shape[1], *grid.shape[1:-1]), x.dtype)


@SPEC.register_function
def _decomposition(fb):  # type: ignore[no-untyped-def]
    """ONNX GridSample itself (opset 16 on; the node's mode spelling is passed through, and
    models of opset 16 spell it bilinear/bicubic). ONNX Runtime then computes it, which
    differs from this operator only for NaN/Inf coordinates (see README.md)."""
    return fb.op("GridSample", fb.input("x"), fb.input("grid"), mode=fb.attr("mode"),
                 padding_mode=fb.attr("padding_mode"), align_corners=fb.attr("align_corners"))
