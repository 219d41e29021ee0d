"""Tests of {{ cookiecutter.op_name }}: the ones the opsdk pytest plugin generates from spec.py
(kernel vs reference under the precision standard, ONNX fallback, shape functions), and the
pattern's invariant on the kernel's outputs in every dtype.

Run: opsdk test {{ cookiecutter.op_name }}   (or: pytest {{ cookiecutter.snake_name }}/)
"""

import sys
from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.dtypes import to_numpy
from opsdk.registry import load_spec
from opsdk.testing import op_tests

globals().update(op_tests(__file__))

FOLDER = Path(__file__).resolve().parent
# reference.py, as opsdk loaded it beside spec.py
REF = sys.modules[load_spec(FOLDER).reference.__module__]
# Relative error of mean((y/gamma)^2) the kernel may show: y is rounded to its dtype.
INVARIANT_TOL = {"float32": 1e-5, "float16": 4e-3, "bfloat16": 3e-2}


@pytest.mark.parametrize("dtype", sorted(INVARIANT_TOL))
def test_unit_rms(dtype: str) -> None:
    """The residual output is x1 + x2; y / gamma has unit RMS (up to epsilon) over its rows and
    rstd is theirs, for the kernel and the reference."""
    np_dtype = to_numpy(dtype)
    rng = np.random.default_rng(0)
    x1 = (rng.standard_normal((6, 257)) * 3).astype(np_dtype)
    x2 = rng.standard_normal((6, 257)).astype(np_dtype)
    gamma = rng.uniform(0.5, 2.0, 257).astype(np_dtype)
    y, rstd, x = opsdk.load(str(FOLDER))(x1, x2, gamma, epsilon=1e-6)
    total = x1.astype(np.float32) + x2.astype(np.float32)
    np.testing.assert_array_equal(x, total.astype(np_dtype))
    assert REF.invariant(x, y, rstd, gamma) <= INVARIANT_TOL[dtype]
    wide = REF.reference(x1.astype(np.float64), x2.astype(np.float64), gamma)
    assert REF.invariant(wide[2], wide[0], wide[1], gamma) <= 1e-12
