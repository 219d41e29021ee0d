"""Tests of {{ cookiecutter.op_name }}: the ones the opsdk pytest plugin generates from spec.py
(kernel vs reference under the precision standard, ONNX fallback, shape functions), and the
pattern's invariant on the kernel's outputs in every dtype: a rotation preserves each
rotated pair's norm.

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
# Relative change of a pair's norm the kernel may show: cos, sin and y are rounded to the dtype.
INVARIANT_TOL = {"float32": 1e-5, "float16": 4e-3, "bfloat16": 3e-2}


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("dtype", sorted(INVARIANT_TOL))
def test_pair_norms_preserved(dtype: str, interleaved: int) -> None:
    """With cos and sin of one angle per pair, every rotated pair keeps its norm and the
    features past R pass through, for the kernel and the reference (partial rotary)."""
    np_dtype = to_numpy(dtype)
    rng = np.random.default_rng(0)
    b, h, s, d, r = 2, 3, 7, 40, 32
    x = rng.standard_normal((b, h, s, d)).astype(np_dtype)
    angles = np.arange(s)[:, None] * 10000.0 ** (-np.arange(r // 2) / (r // 2))
    cos, sin = (t.astype(np_dtype)[None, None] for t in REF.cos_sin(angles, interleaved))
    y = opsdk.load(str(FOLDER))(x, cos, sin, interleaved=interleaved)
    assert REF.invariant(x, y, r, interleaved) <= INVARIANT_TOL[dtype]
    wide = REF.cos_sin(angles, interleaved)
    assert REF.invariant(x, REF.reference(x.astype(np.float64), *wide, interleaved=interleaved),
                         r, interleaved) <= 1e-12
