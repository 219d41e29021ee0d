"""NumPy reference of FusedConvBnRelu: relu(conv2d(x, w) + b), computed in float64.

The convolution is written as im2col (strided views of the zero-padded input, one per
kernel tap) followed by one ``einsum`` per group, which is plain to read and checks
every attribute (strides, pads, dilations, group) the way ONNX Conv defines them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _patches(
    xp: np.ndarray, kh: int, kw: int, oh: int, ow: int, strides: Sequence[int],
    dilations: Sequence[int],
) -> np.ndarray:
    """(N, C, kH, kW, OH, OW): the input value under each kernel tap at each output."""
    n, c = xp.shape[:2]
    sh, sw = strides
    dh, dw = dilations
    cols = np.empty((n, c, kh, kw, oh, ow), xp.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                                  j * dw: j * dw + sw * (ow - 1) + 1: sw]
    return cols


def reference(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1),
    group: int = 1,
) -> np.ndarray:
    """y[n, m] = relu(b[m] + sum_{c, i, j} w[m, c, i, j] * xpad[n, g*C/g + c, s*oh + d*i, ...]).

    Computed in float64 and returned in the input's dtype.

    Example:
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> w = np.ones((1, 1, 2, 2), np.float32)
        >>> reference(x, w, np.float32([-20]), strides=(2, 2))
        array([[[[ 0.,  0.],
                 [22., 30.]]]], dtype=float32)
    """
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wi = xd.shape
    m, cg, kh, kw = wd.shape
    pt, pl, pb, pr = pads
    xp = np.pad(xd, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wi + pl + pr - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    cols = _patches(xp, kh, kw, oh, ow, strides, dilations)
    mg = m // group
    y = np.empty((n, m, oh, ow))
    for g in range(group):
        y[:, g * mg:(g + 1) * mg] = np.einsum(
            "ncijhw,mcij->nmhw", cols[:, g * cg:(g + 1) * cg], wd[g * mg:(g + 1) * mg],
            optimize=True,
        )
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return np.maximum(y, 0.0).astype(x.dtype)
