"""NumPy reference of {{ cookiecutter.op_name }} (the ground truth the kernel is checked against),
and the pattern's invariant, which the tests check beside the precision standard.
"""

import numpy as np


def reference(x1, x2, gamma, *, epsilon=1e-6):  # type: ignore[no-untyped-def]
    """``(y, rstd, x)`` with ``x = x1 + x2`` and ``y = x / sqrt(mean(x^2) + epsilon) * gamma``."""
    x1 = np.asarray(x1)
    wide = np.promote_types(x1.dtype, np.float32)
    x = x1.astype(wide) + np.asarray(x2).astype(wide)
    d = max(x.shape[-1], 1)
    rstd = 1.0 / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) / d + epsilon)
    y = x * rstd * np.asarray(gamma).astype(wide)
    return y.astype(x1.dtype), rstd, x.astype(x1.dtype)


def invariant(x, y, rstd, gamma, *, epsilon=1e-6):  # type: ignore[no-untyped-def]
    """How far ``y / gamma`` is from unit RMS (up to epsilon), given the sum ``x``:
    ``mean((y/gamma)^2)`` equals ``mean(x^2) / (mean(x^2) + epsilon)``, and rstd is x's rows'.
    Returns the largest relative error over the rows (0 for exact arithmetic)."""
    x, y, rstd = (np.asarray(a, np.float64) for a in (x, y, rstd))
    if x.size == 0:
        return 0.0
    unit = y / np.asarray(gamma, np.float64)
    ms_x = np.mean(x * x, axis=-1, keepdims=True)
    got = np.mean(unit * unit, axis=-1, keepdims=True)
    expected = ms_x / (ms_x + epsilon)
    rstd_err = np.abs(rstd * np.sqrt(ms_x + epsilon) - 1.0)
    return float(max(np.max(np.abs(got - expected) / expected), np.max(rstd_err)))
