"""NumPy reference of GridSample: ONNX GridSample with PyTorch's ``grid_sample`` numerics.

Per spatial axis (size ``d``, normalised coordinate ``g``) every output location gets a
set of taps (input indices) and weights; the output is the sum over the tensor product of
the per-axis taps (in float64). The coordinate rules are PyTorch's, in float32 as it
computes them (ONNX Runtime agrees for every finite coordinate):

1. unnormalise: 4-D ``(g + 1) * (d / 2) - 0.5`` (align_corners: ``(g + 1) * ((d - 1) / 2)``);
   5-D ``((g + 1) * d - 1) / 2`` (``(g + 1) / 2 * (d - 1)``);
2. nearest and linear: fold the coordinate -- border clamps it to ``[0, d-1]``,
   reflection reflects it by the borders (``-0.5`` and ``d-0.5``, or ``0`` and ``d-1``)
   then clamps; nearest then rounds half to even, linear takes ``floor`` and ``floor + 1``
   with weights ``1 - t, t``;
3. cubic: the coordinate is *not* folded; its 4 taps ``floor - 1 .. floor + 2`` (Keys'
   kernel, ``a = -0.75``) are each clamped or reflected. ONNX's reference folds the
   coordinate instead, which differs near the border with border padding (up to ~0.2 of
   the data's range; see README.md);
4. a tap outside ``[0, d-1]`` reads 0;
5. NaN, infinite and huge coordinates, as PyTorch's CPU kernels treat them: 4-D (its
   vectorised kernel) clamps NaN to 0, gives NaN for linear zero padding and for cubic
   (NaN weights); 5-D (its scalar kernel) clamps NaN to ``d-1`` and sends non-finite or
   out-of-int-range folded coordinates to -100 (outside: zero padding reads 0).
"""

from __future__ import annotations

import numpy as np

_MODES = {"linear": "linear", "bilinear": "linear", "nearest": "nearest",
          "cubic": "cubic", "bicubic": "cubic"}
_CUBIC_A = np.float32(-0.75)
F = np.float32


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for fraction t."""
    a = _CUBIC_A

    def near(v: np.ndarray) -> np.ndarray:  # |v| <= 1
        return ((a + F(2)) * v - (a + F(3))) * v * v + F(1)

    def far(v: np.ndarray) -> np.ndarray:  # 1 < |v| < 2
        return ((a * v - F(5) * a) * v + F(8) * a) * v - F(4) * a

    return [far(t + F(1)), near(t), near(F(1) - t), far(F(2) - t)]


class _Axis:
    """PyTorch's coordinate rules for one spatial axis (float32 arrays)."""

    def __init__(self, d: int, padding_mode: str, align: bool, vol: bool) -> None:
        self.d, self.pad, self.align, self.vol = d, padding_mode, align, vol
        self.max = F(d - 1)

    def unnormalise(self, g: np.ndarray) -> np.ndarray:
        d = F(self.d)
        if not self.vol:
            scaled = (g + F(1)) * ((d - F(1)) / F(2) if self.align else d / F(2))
            return scaled if self.align else scaled - F(0.5)
        if self.align:
            return (g + F(1)) / F(2) * (d - F(1))
        return ((g + F(1)) * d - F(1)) / F(2)

    def clip(self, x: np.ndarray) -> np.ndarray:
        if not self.vol:  # NaN -> 0
            return np.where(np.isnan(x), F(0), np.minimum(np.maximum(x, F(0)), self.max))
        lo = np.where(x < 0, F(0), x)  # std::max(x, 0): NaN stays
        return np.where(lo < self.max, lo, self.max)  # std::min(max, .): NaN -> max

    def reflect(self, x: np.ndarray) -> np.ndarray:
        d = F(self.d)
        if not self.vol:
            if self.align and self.d <= 1:
                return np.zeros_like(x)
            low = F(0) if self.align else F(-0.5)
            span2 = F(2) * (d - F(1)) if self.align else F(2) * d
            a = np.abs(x - low)
            extra = a - np.trunc(a / span2) * span2
            back = span2 - extra
            return np.where(np.isnan(extra) | (back >= extra), extra, back) + low
        tl, th = (0, 2 * (self.d - 1)) if self.align else (-1, 2 * self.d - 1)
        if tl == th:
            return np.zeros_like(x)
        mn, span = F(tl) / F(2), F(th - tl) / F(2)
        a = np.abs(x - mn)
        extra = np.fmod(a, span)
        f = np.floor(a / span)
        ok = (f >= F(-2147483648.0)) & (f < F(2147483648.0))
        flips = np.where(ok, np.where(ok, f, 0).astype(np.int64), 0)
        return np.where(flips % 2 == 0, extra + mn, span - extra + mn)

    def fold(self, x: np.ndarray) -> np.ndarray:
        if self.pad == "border":
            x = self.clip(x)
        elif self.pad == "reflection":
            x = self.clip(self.reflect(x))
        if self.vol:
            bad = ~np.isfinite(x) | (x > F(2147483646.0)) | (x < F(-2147483648.0))
            x = np.where(bad, F(-100), x)
        return x

    def taps(self, g: np.ndarray, mode: str) -> tuple[list[tuple[np.ndarray, np.ndarray]],
                                                      np.ndarray]:
        """[(index or -1, weight)] per tap, and where the output is NaN (poisoned)."""
        u = self.unnormalise(g)
        if mode == "nearest":
            return [(np.rint(self.fold(u)), np.ones_like(u))], np.zeros(u.shape, bool)
        if mode == "linear":
            x = self.fold(u)
            x0 = np.floor(x)
            t = x - x0
            return [(x0, F(1) - t), (x0 + F(1), t)], ~np.isfinite(x)
        x0 = np.floor(u)
        ws = _cubic_weights(u - x0)
        return [(self.fold(x0 + F(k - 1)), ws[k]) for k in range(4)], ~np.isfinite(u)

    def index(self, i: np.ndarray) -> np.ndarray:
        inside = (i >= 0) & (i <= self.max)
        return np.where(inside, np.where(inside, i, 0), -1).astype(np.intp)


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
    g32 = grid.astype(np.float32)
    n, c, *sizes = x.shape
    r = len(sizes)
    out_shape = g32.shape[1:-1]
    # grid's last axis is (x, y[, z]): the reverse of x's spatial axis order.
    axes = [_Axis(sizes[a], padding_mode, bool(align_corners), r == 3) for a in range(r)]
    with np.errstate(invalid="ignore", over="ignore"):
        per_axis = [axes[a].taps(g32[..., r - 1 - a], canon) for a in range(r)]
    poison = np.logical_or.reduce([p for _, p in per_axis])
    y = np.zeros((n, c, *out_shape))
    batch = np.arange(n).reshape((n,) + (1,) * len(out_shape))
    flat = x.astype(np.float64).reshape(n, c, -1)
    strides = [int(np.prod(sizes[a + 1:])) for a in range(r)]
    for combo in np.ndindex(*(len(t) for t, _ in per_axis)):
        idx = [axes[a].index(per_axis[a][0][k][0]) for a, k in enumerate(combo)]
        weight = np.prod([per_axis[a][0][k][1].astype(np.float64) for a, k in enumerate(combo)],
                         axis=0)
        inside = np.logical_and.reduce([i >= 0 for i in idx])
        offset = sum(np.maximum(i, 0) * s for i, s in zip(idx, strides))
        vals = np.where(inside[..., None], flat[batch, :, offset], 0.0)  # (N, *out, C)
        y += np.moveaxis(vals * weight[..., None], -1, 1)
    y[np.broadcast_to(poison[:, None], y.shape)] = np.nan
    return y.astype(x.dtype)
