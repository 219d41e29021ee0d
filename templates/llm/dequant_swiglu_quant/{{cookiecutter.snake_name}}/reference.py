"""NumPy reference of {{ cookiecutter.op_name }} (the ground truth the kernel is checked against),
and the pattern's invariant, which the tests check beside the precision standard.
"""

import numpy as np


def activation(x, weight_scale, activation_scale):  # type: ignore[no-untyped-def]
    """The dequantised ``silu(gate) * up`` in float64, before quantisation."""
    v = (np.asarray(x, np.float64) * np.asarray(weight_scale, np.float64)
         * np.asarray(activation_scale, np.float64)[..., None])
    h = v.shape[-1] // 2
    gate, up = v[..., :h], v[..., h:]
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(-np.abs(gate))
        return np.where(gate > 0, gate, gate * e) / (1 + e) * up


def reference(x, weight_scale, activation_scale):  # type: ignore[no-untyped-def]
    """``(scale, y)``: int8 ``round(act / scale)`` with ``scale = max|act| / 127`` per token."""
    act = activation(x, weight_scale, activation_scale)
    amax = np.max(np.abs(act), axis=-1, keepdims=True, initial=0.0)
    scale = amax / 127.0
    safe = np.where(scale == 0, 1.0, scale)
    y = np.clip(np.rint(act / safe), -127, 127).astype(np.int8)
    return scale[..., 0], y


def round_trip_error(act, y, scale):  # type: ignore[no-untyped-def]
    """The largest ``|y * scale - act|`` in quantisation steps (``scale``) over the tokens:
    at most 0.5 for exact rounding, and the quantisation is within one step when <= 1."""
    act, y = np.asarray(act, np.float64), np.asarray(y, np.float64)
    step = np.asarray(scale, np.float64)[..., None]
    if act.size == 0:
        return 0.0
    err = np.abs(y * step - act) / np.where(step == 0, 1.0, step)
    return float(np.max(err))
