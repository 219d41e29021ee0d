"""NumPy reference of {{ cookiecutter.op_name }}: the ground truth the kernel is checked against."""

import numpy as np


def silu(x):  # type: ignore[no-untyped-def]
    """``x * sigmoid(x)`` without overflow: with ``e = exp(-|x|)``, ``x / (1 + e)`` for x > 0
    and ``x e / (1 + e)`` otherwise (the kernel's formulation)."""
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x > 0, x, x * e) / (1 + e)


def reference(gate, up):  # type: ignore[no-untyped-def]
    """``silu(gate) * up``, in float32 or wider, rounded to gate's dtype."""
    gate, up = np.asarray(gate), np.asarray(up)
    wide = np.promote_types(gate.dtype, np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        y = silu(gate.astype(wide)) * up.astype(wide)
    return y.astype(gate.dtype)
