"""NumPy reference of {{ cookiecutter.op_name }}: ONNX's reference implementation of RMSNormalization
(``onnx.reference.ops.op_rms_normalization``) reproduced, with the statistics in float32 or
wider as ``stash_type`` 1 says (ONNX's reference computes in X's dtype, which differs for
float16 and bfloat16 only; opsdk's tests pass float64). test_{{ cookiecutter.snake_name }}.py checks it
against ONNX's.
"""

import numpy as np


def reference(x, scale, *, axis=-1, epsilon=1e-5, stash_type=1):  # type: ignore[no-untyped-def]
    """``x / sqrt(mean(x^2 over the axes from axis on) + epsilon) * scale``, X's dtype."""
    if stash_type != 1:
        raise NotImplementedError(f"RMSNormalization: stash_type={stash_type}; only 1")
    x = np.asarray(x)
    wide = np.promote_types(x.dtype, np.float32)
    xf = x.astype(wide)
    a = axis + x.ndim if axis < 0 else axis
    eps = float(np.float32(epsilon))  # an ONNX float attribute is a float32
    mean_sq = np.mean(np.power(xf, 2), axis=tuple(range(a, x.ndim)), keepdims=True)
    y = xf * np.reciprocal(np.sqrt(mean_sq + eps)) * np.asarray(scale).astype(wide)
    return y.astype(x.dtype)
