"""NumPy reference of LayerNormalization (ONNX opset 17), exact in float64.

Follows ONNX's reference implementation (two passes: mean, then the mean of squared
deviations), computing in float64 whatever the input dtype; Y is returned in X's dtype,
Mean and InvStdDev in float32 (the spec's stash type).
"""

import numpy as np


def reference(X, Scale, B=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    """Return ``(Y, Mean, InvStdDev)``."""
    x = np.asarray(X)
    a = axis % x.ndim
    x64 = x.astype(np.float64)
    norm_axes = tuple(range(a, x.ndim))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = x64.mean(axis=norm_axes, keepdims=True) if x.size else np.zeros(
            x.shape[:a] + (1,) * (x.ndim - a))
        dev = x64 - mean
        var = (dev * dev).mean(axis=norm_axes, keepdims=True) if x.size else mean
        inv = 1.0 / np.sqrt(var + epsilon)
        y = dev * inv * np.asarray(Scale, np.float64)
        if B is not None:
            y = y + np.asarray(B, np.float64)
    stats = np.float64 if x.dtype == np.float64 else np.float32
    return y.astype(x.dtype), mean.astype(stats), inv.astype(stats)
