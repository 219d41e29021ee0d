"""NumPy reference of GridSample (ONNX semantics), computed in float64 and vectorised.

Per spatial axis (size ``d``, normalised coordinate ``g``) every output location gets a
set of taps (input indices) and weights; the output is the sum over the tensor product of
the per-axis taps. The rules follow PyTorch's ``grid_sample`` and ONNX Runtime, with
which ONNX's reference implementation agrees except for cubic border padding (step 3):

1. unnormalise: ``(g + 1) / 2 * (d - 1)`` with align_corners, else ``((g + 1) * d - 1) / 2``;
2. nearest: round half to even -- the coordinate of step 1 computed in float32, as ONNX's
   reference, ONNX Runtime and PyTorch compute it (in float64 a coordinate within float32
   rounding of a half-integer would round to the other neighbour);
3. nearest and linear: a coordinate outside ``[lo, hi]`` (``[0, d-1]`` with
   align_corners, else ``[-0.5, d-0.5]``) is clamped to ``[0, d-1]`` (border) or
   reflected into ``[lo, hi]`` (reflection). Cubic leaves the coordinate alone and clamps
   or reflects each of its 4 taps (step 5), as PyTorch and ONNX Runtime do; ONNX's
   reference folds the coordinate first, which differs near the border with border
   padding (up to ~0.2 of the data's range) -- see README.md;
4. taps: nearest 1 (the coordinate), linear 2 (``floor`` and ``floor + 1``, weights
   ``1 - t, t``), cubic 4 (``floor - 1 .. floor + 2``, Keys' kernel with ``a = -0.75``);
5. a tap outside ``[0, d-1]`` reads 0 (zeros), the clamped index (border) or the
   reflected index, truncated toward zero (reflection).
"""

from __future__ import annotations

import numpy as np

_MODES = {"linear": "linear", "bilinear": "linear", "nearest": "nearest",
          "cubic": "cubic", "bicubic": "cubic"}
_CUBIC_A = -0.75


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Reflect ``x`` by the borders ``lo``/``hi`` until it lies within them."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    d = np.where(below, lo - x, np.where(above, x - hi, 0.0))
    flips = np.floor(d / span)
    r = d - flips * span
    even = flips % 2 == 0
    out = np.where(below, np.where(even, lo + r, hi - r), x)
    return np.where(above, np.where(even, hi - r, lo + r), out)


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for fraction t."""
    a = _CUBIC_A

    def near(s: np.ndarray) -> np.ndarray:  # |s| <= 1
        return np.asarray(((a + 2) * s - (a + 3)) * s * s + 1)

    def far(s: np.ndarray) -> np.ndarray:  # 1 < |s| < 2
        return np.asarray(((a * s - 5 * a) * s + 8 * a) * s - 4 * a)

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _axis_taps(
    g: np.ndarray, d: int, mode: str, padding_mode: str, align: bool
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(index, weight, inside) per tap of one spatial axis; ``inside`` is False where a
    zero-padded tap reads 0 (its index is clipped only to stay addressable)."""
    if mode == "nearest":  # rounded from float32 coordinates, as ONNX specifies it
        g32, d32 = g.astype(np.float32), np.float32(d)
        one, two = np.float32(1), np.float32(2)
        x32 = (g32 + one) / two * (d32 - one) if align else ((g32 + one) * d32 - one) / two
        x = np.rint(x32.astype(np.float64))
    else:
        x = (g + 1) / 2 * (d - 1) if align else ((g + 1) * d - 1) / 2
    lo, hi = (0.0, d - 1.0) if align else (-0.5, d - 0.5)
    outside = (x < lo) | (x > hi)
    if mode == "cubic":
        pass  # PyTorch and ONNX Runtime clamp or reflect each tap, not the coordinate
    elif padding_mode == "border":
        x = np.where(outside, np.clip(x, 0, d - 1), x)
    elif padding_mode == "reflection":
        x = np.where(outside, _reflect(x, lo, hi), x)
    if mode == "nearest":
        idx, weights = [np.trunc(x)], [np.ones_like(x)]
    else:
        x0 = np.floor(x)
        t = x - x0
        if mode == "linear":
            idx, weights = [x0, x0 + 1], [1 - t, t]
        else:
            idx, weights = [x0 - 1, x0, x0 + 1, x0 + 2], _cubic_weights(t)
    taps = []
    for i, w in zip(idx, weights):
        inside = (i >= 0) & (i <= d - 1)
        if padding_mode == "zeros":
            i = np.clip(i, 0, d - 1)
        else:
            inside = np.ones_like(inside)
            i = np.clip(i, 0, d - 1) if padding_mode == "border" else np.trunc(_reflect(i, lo, hi))
        taps.append((i.astype(np.intp), w, inside))
    return taps


def reference(
    x: np.ndarray, grid: np.ndarray, *, mode: str = "linear", padding_mode: str = "zeros",
    align_corners: int = 0,
) -> np.ndarray:
    """Sample ``x`` (N, C, *in) at ``grid`` (N, *out, r); returns (N, C, *out) in x's dtype.

    Example:
        >>> x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
        >>> grid = np.float32([[[[-1, -1], [0, 0], [1, 1]]]])
        >>> reference(x, grid, align_corners=1)
        array([[[[0. , 1.5, 3. ]]]], dtype=float32)
    """
    canon = _MODES[mode]
    xd, gd = x.astype(np.float64), grid.astype(np.float64)
    n, c, *sizes = xd.shape
    r = len(sizes)
    out_shape = gd.shape[1:-1]
    # grid's last axis is (x, y[, z]): the reverse of x's spatial axis order.
    per_axis = [
        _axis_taps(gd[..., r - 1 - a], sizes[a], canon, padding_mode, bool(align_corners))
        for a in range(r)
    ]
    y = np.zeros((n, c, *out_shape))
    batch = np.arange(n).reshape((n,) + (1,) * len(out_shape))
    flat = xd.reshape(n, c, -1)
    strides = [int(np.prod(sizes[a + 1:])) for a in range(r)]
    for combo in np.ndindex(*(len(t) for t in per_axis)):
        offset = sum(per_axis[a][k][0] * strides[a] for a, k in enumerate(combo))
        weight = np.prod([per_axis[a][k][1] for a, k in enumerate(combo)], axis=0)
        inside = np.logical_and.reduce([per_axis[a][k][2] for a, k in enumerate(combo)])
        vals = np.where(inside[..., None], flat[batch, :, offset], 0.0)  # (N, *out, C)
        y += np.moveaxis(vals * weight[..., None], -1, 1)
    return y.astype(x.dtype)
