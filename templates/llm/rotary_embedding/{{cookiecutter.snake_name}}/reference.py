"""NumPy reference of {{ cookiecutter.op_name }} (the ground truth the kernel is checked against),
and the pattern's invariant, which the tests check beside the precision standard.
"""

import numpy as np


def rotate(x, interleaved):  # type: ignore[no-untyped-def]
    """``cat(-x2, x1)`` of the halves, or ``(a, b) -> (-b, a)`` of adjacent pairs."""
    if interleaved:
        pairs = x.reshape(x.shape[:-1] + (x.shape[-1] // 2, 2))
        return np.stack([-pairs[..., 1], pairs[..., 0]], axis=-1).reshape(x.shape)
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def reference(x, cos, sin, *, interleaved=0):  # type: ignore[no-untyped-def]
    """``x * cos + rotate(x) * sin`` over the first ``R = cos.shape[-1]`` features."""
    x = np.asarray(x)
    wide = np.promote_types(x.dtype, np.float32)
    xf = x.astype(wide)
    r = np.shape(cos)[-1]
    part = xf[..., :r]
    c, s = np.asarray(cos).astype(wide), np.asarray(sin).astype(wide)
    y = part * c + rotate(part, interleaved) * s
    return np.concatenate([y, xf[..., r:]], axis=-1).astype(x.dtype)


def pair_norms(x, r, interleaved):  # type: ignore[no-untyped-def]
    """The norm of each rotated pair of the first ``r`` features, in float64."""
    part = np.asarray(x, np.float64)[..., :r]
    if interleaved:
        a, b = part[..., 0::2], part[..., 1::2]
    else:
        a, b = part[..., : r // 2], part[..., r // 2:]
    return np.hypot(a, b)


def invariant(x, y, r, interleaved):  # type: ignore[no-untyped-def]
    """A rotation preserves each rotated pair's norm (cos and sin from one angle per pair) and
    leaves the features from ``r`` on unchanged: the largest relative change of a pair's norm,
    or inf when the pass-through part differs."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if not np.array_equal(x[..., r:], y[..., r:]):
        return float("inf")
    before, after = pair_norms(x, r, interleaved), pair_norms(y, r, interleaved)
    if before.size == 0:
        return 0.0
    return float(np.max(np.abs(after - before) / np.maximum(before, 1e-30)))


def cos_sin(angles, interleaved):  # type: ignore[no-untyped-def]
    """cos and sin tables of width R from angles (..., R/2), in the convention's layout."""
    full = np.repeat(angles, 2, axis=-1) if interleaved else np.concatenate([angles, angles], -1)
    return np.cos(full), np.sin(full)
