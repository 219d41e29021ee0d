"""NumPy reference of LayerNormalization (ONNX opset 17).

Follows ONNX's reference implementation (two passes: mean, then the mean of squared
deviations) in X's dtype (opsdk's tests pass float64 inputs, so the expected values are
exact); Y is returned in X's dtype, Mean and InvStdDev in float32 (the spec's stash type),
or float64 for float64 inputs.
"""

import numpy as np


def reference(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    """Return ``(Y, Mean, InvStdDev)``."""
    x = np.asarray(X)
    a = axis % x.ndim
    xc = x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)
    norm_axes = tuple(range(a, x.ndim))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = xc.mean(axis=norm_axes, keepdims=True) if x.size else np.zeros(
            x.shape[:a] + (1,) * (x.ndim - a))
        dev = xc - mean
        var = (dev * dev).mean(axis=norm_axes, keepdims=True) if x.size else mean
        inv = 1.0 / np.sqrt(var + epsilon)
        y = dev * inv * np.asarray(Scale).astype(xc.dtype)
        if B is not None:
            y = y + np.asarray(B).astype(xc.dtype)
    stats = np.float64 if x.dtype == np.float64 else np.float32
    return y.astype(x.dtype), mean.astype(stats), inv.astype(stats)
