"""opsdk's ``rounding`` check: truncation and double rounding of float16/bfloat16 outputs
fail; correct rounding, a float32 kernel's rare misses and a float16 kernel's unbiased
errors pass."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from opsdk.testing import compare, get_standard
from opsdk.testing._rounding import rounding_check

EXACT = np.random.default_rng(7).uniform(-3, 3, 2000)
DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
#: significand bits below float16's / bfloat16's in a float32
DROP = {"float16": 13, "bfloat16": 16}


def _truncated(x: np.ndarray, dtype: str) -> np.ndarray:
    mask = np.uint32((1 << 32) - (1 << DROP[dtype]))
    return (x.astype(np.float32).view(np.uint32) & mask).view(np.float32).astype(DTYPES[dtype])


def _twice(x: np.ndarray, dtype: str) -> np.ndarray:
    """Rounded to nearest even with one more significand bit, then to nearest even."""
    bits = {"float16": 11, "bfloat16": 8}[dtype] + 1
    m, ex = np.frexp(x)
    finer = np.ldexp(np.round(np.ldexp(m, bits)), ex - bits)
    return finer.astype(DTYPES[dtype])


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_truncation_fails_naming_it(dtype: str) -> None:
    check = rounding_check(_truncated(EXACT, dtype), EXACT.astype(DTYPES[dtype]), dtype, EXACT)
    assert not check.passed and "rounded away from zero: truncated" in check.detail
    # without the exact reference, truncation is not judged
    assert rounding_check(_truncated(EXACT, dtype), EXACT.astype(DTYPES[dtype]), dtype).passed


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_double_rounding_fails_naming_it(dtype: str) -> None:
    check = rounding_check(_twice(EXACT, dtype), EXACT.astype(DTYPES[dtype]), dtype)
    assert not check.passed and "rounded twice" in check.detail, check.detail


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_correct_and_honest_roundings_pass(dtype: str) -> None:
    want = EXACT.astype(DTYPES[dtype])
    assert rounding_check(want, want, dtype).passed
    via32 = EXACT.astype(np.float32).astype(DTYPES[dtype])  # a float32 kernel
    assert rounding_check(via32, want, dtype, EXACT).passed
    # a narrow kernel multiplying by a constant rounded to its dtype: biased toward zero,
    # which the standards allow (the AI Core does it), and not truncation
    slope = float(np.array(0.1).astype(DTYPES[dtype]))
    biased = (EXACT.astype(DTYPES[dtype]).astype(np.float64) * slope).astype(DTYPES[dtype])
    golden = EXACT.astype(DTYPES[dtype]).astype(np.float64) * 0.1
    check = rounding_check(biased, golden.astype(DTYPES[dtype]), dtype, golden)
    assert check.passed, check.detail
    # a kernel computing in the narrow dtype: sums of narrow values, errors both ways
    parts = np.random.default_rng(1).uniform(-1, 1, (2000, 8))
    narrow = parts.astype(DTYPES[dtype])
    summed = narrow[:, 0]
    for k in range(1, 8):
        summed = (summed + narrow[:, k]).astype(DTYPES[dtype])
    exact = narrow.astype(np.float64).sum(axis=1).astype(DTYPES[dtype])
    check = rounding_check(summed, exact, dtype)
    assert check.passed, check.detail


def test_the_check_joins_opsdk_checks_for_narrow_outputs_only() -> None:
    got = compare(_truncated(EXACT, "float16"), EXACT.astype(np.float16),
                  get_standard("mere-mare"), golden=EXACT)
    assert not got.passed and "mere-mare: pass" in got.reason and "rounding:" in got.reason
    assert compare(_truncated(EXACT, "float16"), EXACT.astype(np.float16),
                   get_standard("mere-mare"), strict=False).passed
    wide = compare(EXACT.astype(np.float32), EXACT.astype(np.float32), get_standard("exact"))
    assert "rounding" not in wide.reason
