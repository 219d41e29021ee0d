"""NumPy reference of Gelu (ONNX Gelu, opset 20), written to be exact in float64.

NumPy has no erf, so the exact form uses ``math.erfc`` element by element (correct to
about one float64 ulp). Both forms are rearranged to avoid cancellation where y is tiny:

* ``0.5 x (1 + erf(x / sqrt 2)) == 0.5 x erfc(-x / sqrt 2)``
* ``0.5 x (1 + tanh z) == x / (1 + exp(-2 z))``

so an x far below zero gives its true tiny value rather than 0. The results equal ONNX's
formulas, including at the limits (x = -Inf gives NaN, as -Inf * 0 does in the formula).
The tanh form computes in the input's dtype (opsdk's tests pass float64).
"""

import math

import numpy as np

_ERFC = np.frompyfunc(math.erfc, 1, 1)


def reference(X: np.ndarray, *, approximate: str = "none") -> np.ndarray:
    """Gelu of ``X`` in X's dtype (pass float64 for the exact values)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"Gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = np.asarray(X)
    with np.errstate(over="ignore", invalid="ignore"):
        if approximate == "tanh":
            z = x.dtype.type(math.sqrt(2.0 / math.pi)) * (x + x.dtype.type(0.044715) * x**3)
            return np.asarray(x / (1 + np.exp(-2 * z))).astype(x.dtype)
        x64 = x.astype(np.float64)
        y = 0.5 * x64 * np.asarray(_ERFC(-x64 / math.sqrt(2.0)), np.float64)
    return np.asarray(y).astype(x.dtype)
