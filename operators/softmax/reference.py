"""NumPy reference of Softmax (ONNX opset 13), as ONNX's reference computes it.

Computes in the input's dtype; opsdk's tests pass float64 inputs.
"""

import numpy as np


def reference(input: np.ndarray, *, axis: int = -1) -> np.ndarray:  # noqa: A002 (ONNX name)
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``, in the input's dtype."""
    x = np.asarray(input)
    if x.size == 0:
        return x.copy()
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        y = e / e.sum(axis=axis, keepdims=True)
    return y.astype(x.dtype)
