"""Tests of {{ cookiecutter.op_name }}: the ones the opsdk pytest plugin generates from spec.py
(kernel vs reference under the precision standard, ONNX fallback, shape functions), and the
pattern's invariant on the kernel's outputs: the quantisation round-trips within one step.

Run: opsdk test {{ cookiecutter.op_name }}   (or: pytest {{ cookiecutter.snake_name }}/)
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.registry import load_spec
from opsdk.testing import op_tests

globals().update(op_tests(__file__))

FOLDER = Path(__file__).resolve().parent
# reference.py, as opsdk loaded it beside spec.py
REF = sys.modules[load_spec(FOLDER).reference.__module__]


@pytest.mark.parametrize("tokens", [1, 7, 64])
def test_quantisation_round_trips_within_one_step(tokens: int) -> None:
    """y * scale is within one quantisation step of the float activation for the kernel
    (its float32 activation differs from the float64 one in the last bits), within half a
    step for the reference, and every token's largest value maps to +-127."""
    rng = np.random.default_rng(tokens)
    x = rng.integers(-20000, 20000, (tokens, 96), dtype=np.int32)
    ws = rng.uniform(1e-4, 1e-3, 96).astype(np.float32)
    act_scale = rng.uniform(0.5, 2.0, tokens).astype(np.float32)
    act = REF.activation(x, ws, act_scale)
    scale, y = opsdk.load(str(FOLDER))(x, ws, act_scale)
    assert y.dtype == np.int8 and scale.shape == (tokens,)
    assert REF.round_trip_error(act, y, scale) <= 1.0
    assert (np.abs(y).max(axis=-1) == 127).all()
    rscale, ry = REF.reference(x, ws, act_scale)
    assert REF.round_trip_error(act, ry, rscale) <= 0.5 + 1e-9
