"""Tests of {{ cookiecutter.op_name }}: the kernel against the NumPy reference, for every dtype."""

from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.dtypes import is_float, to_numpy
from opsdk.registry import load_spec

HERE = Path(__file__).resolve().parent
SPEC = load_spec(HERE)
SHAPES = [(), (0,), (7,), (3, 5), (2, 3, 4)]


@pytest.fixture(scope="module")
def op():
    return opsdk.load(str(HERE))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtypes", SPEC.dtype_combinations(), ids="-".join)
def test_matches_reference(op, dtypes, shape):
    rng = np.random.default_rng(0)
    inputs = [
        (rng.uniform(-2, 2, shape) if is_float(d) else rng.integers(0, 5, shape)).astype(to_numpy(d))
        for d in dtypes
    ]
    got = op(*inputs)
    want = SPEC.reference(*inputs, **SPEC.resolve_attrs({}))
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert g.shape == np.shape(w)
        np.testing.assert_allclose(g.astype(np.float64), np.asarray(w, np.float64), rtol=1e-3, atol=1e-3)
