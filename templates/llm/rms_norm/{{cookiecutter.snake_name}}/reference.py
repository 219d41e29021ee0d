"""NumPy reference of {{ cookiecutter.op_name }} (the ground truth the kernel is checked against),
and the pattern's invariant, which the tests check beside the precision standard.
"""

import numpy as np


def reference(x, gamma, *, epsilon=1e-6):  # type: ignore[no-untyped-def]
    """``(y, rstd)``: ``rstd = 1 / sqrt(mean(x^2) + epsilon)`` over the last axis."""
    x = np.asarray(x)
    wide = np.promote_types(x.dtype, np.float32)
    xf = x.astype(wide)
    d = max(x.shape[-1], 1)
    mean_sq = np.sum(xf * xf, axis=-1, keepdims=True) / d
    rstd = 1.0 / np.sqrt(mean_sq + epsilon)
    y = xf * rstd * np.asarray(gamma).astype(wide)
    return y.astype(x.dtype), rstd


def invariant(x, y, rstd, gamma, *, epsilon=1e-6):  # type: ignore[no-untyped-def]
    """How far ``y / gamma`` is from unit RMS (up to epsilon): ``mean((y/gamma)^2)`` equals
    ``mean(x^2) rstd^2 = mean(x^2) / (mean(x^2) + epsilon)``. Returns the largest relative
    error over the rows (0 for exact arithmetic)."""
    x, y, rstd = (np.asarray(a, np.float64) for a in (x, y, rstd))
    g = np.asarray(gamma, np.float64)
    if x.size == 0:
        return 0.0
    unit = y / g
    ms_x = np.mean(x * x, axis=-1, keepdims=True)
    expected = ms_x / (ms_x + epsilon)
    got = np.mean(unit * unit, axis=-1, keepdims=True)
    rstd_err = np.abs(rstd - 1.0 / np.sqrt(ms_x + epsilon)) * np.sqrt(ms_x + epsilon)
    return float(max(np.max(np.abs(got - expected) / expected), np.max(rstd_err)))
