"""Each precision standard at the boundaries of its definition, on hand-made arrays."""

from __future__ import annotations

import numpy as np
import pytest

from opsdk.errors import SpecError
from opsdk.testing import (
    DEFAULT_STANDARD,
    STANDARDS,
    compare,
    get_standard,
    standard_for,
)
from opsdk.testing._standards import tiny


def judge(name: str, actual: list[float], expected: list[float], dtype: str) -> bool:
    a, e = np.array(actual, np.float64), np.array(expected, np.float64)
    return get_standard(name).judge(a, e, dtype).passed


# ----------------------------------------------------------------------------- msopst
def _msopst_case(n_bad: int, n: int = 100, rel: float = 0.02) -> tuple[list[float], list[float]]:
    expected = [1.0] * n
    actual = [1.0 + rel if i < n_bad else 1.0 for i in range(n)]
    return actual, expected


def test_msopst_allows_five_percent_beyond_threshold() -> None:
    assert judge("msopst", *_msopst_case(5), "float32")
    assert not judge("msopst", *_msopst_case(6), "float32")


def test_msopst_hard_limit_on_largest_relative_error() -> None:
    # One element (1% share) with rel. error just below / at 0.1: rdiff = d / max(|a|,|e|).
    below = [1.0 + 0.0999 / (1 - 0.0999)] + [1.0] * 99  # d/a just under 0.1
    assert judge("msopst", below, [1.0] * 100, "float16")
    at = [10.0 / 9.0 + 1e-6] + [1.0] * 99  # (a-1)/a >= 0.1
    assert not judge("msopst", at, [1.0] * 100, "float16")


def test_msopst_threshold_is_exclusive_and_small_values_use_absolute_error() -> None:
    # Absolute error below 0.01 never fails, however small the values are.
    assert judge("msopst", [0.0099] * 10, [0.0] * 10, "float32")
    # 0.01 relative error exactly is not beyond the threshold.
    r = STANDARDS["msopst"].rdiff(np.array([2.0]), np.array([2.0 * 1.01]))  # type: ignore[attr-defined]
    assert r[0] <= 0.01


# ---------------------------------------------------------------- double-thousandths
def test_double_thousandths_float16_share_boundary() -> None:
    n = 2000  # rtol*N = 2 elements may exceed atol*|e|
    expected = [1.0] * n
    two = [1.002] * 2 + [1.0] * (n - 2)
    three = [1.002] * 3 + [1.0] * (n - 3)
    assert judge("double-thousandths", two, expected, "float16")
    assert not judge("double-thousandths", three, expected, "float16")


def test_double_thousandths_element_boundary_and_max_atol() -> None:
    n = 1000
    exact_tol = [1.001] + [1.0] * (n - 1)  # |a-e| == atol*|e| does not fail
    assert judge("double-thousandths", exact_tol, [1.0] * n, "float16")
    hard = [1.11] + [1.0] * (n - 1)  # one element beyond max_atol (0.1) fails the case
    assert not judge("double-thousandths", hard, [1.0] * n, "float16")
    f32_hard = [1.0101] + [1.0] * 9999
    assert not judge("double-thousandths", f32_hard, [1.0] * 10000, "float32")
    f32_ok = [1.0099] + [1.0] * 9999
    assert judge("double-thousandths", f32_ok, [1.0] * 10000, "float32")


def test_double_thousandths_integers_allow_one() -> None:
    assert judge("double-thousandths", [1, 2, 4], [2, 3, 3], "int8")
    assert not judge("double-thousandths", [1, 2, 5], [2, 3, 3], "uint8")


def test_double_thousandths_undefined_dtype_names_the_fix() -> None:
    with pytest.raises(SpecError, match=r"defines no tolerance for bfloat16.*spec\.py"):
        judge("double-thousandths", [1.0], [1.0], "bfloat16")


# ------------------------------------------------------------------------ mere-mare
@pytest.mark.parametrize("dtype, t", [("float16", 2**-10), ("bfloat16", 2**-7), ("float32", 2**-13)])
def test_mere_boundary(dtype: str, t: float) -> None:
    n = 100
    just_below = [1.0 + 0.99 * t] * n  # every element: rel = 0.99 T -> MERE < T
    at = [1.0 + t] * n  # MERE == T fails (pass needs MERE < T)
    assert judge("mere-mare", just_below, [1.0] * n, dtype)
    assert not judge("mere-mare", at, [1.0] * n, dtype)


@pytest.mark.parametrize("dtype, t", [("float16", 2**-10), ("float32", 2**-13)])
def test_mare_boundary(dtype: str, t: float) -> None:
    n = 1000  # one element with a large error; MERE stays tiny
    below = [1.0 + 9.9 * t] + [1.0] * (n - 1)
    at = [1.0 + 10 * t] + [1.0] * (n - 1)
    assert judge("mere-mare", below, [1.0] * n, dtype)
    assert not judge("mere-mare", at, [1.0] * n, dtype)


def test_mere_mare_subnormals_use_smallest_normal_as_denominator() -> None:
    # float16 subnormal spacing is 2**-24; a half-spacing error is fine relative to tiny.
    e = [2.0**-24 * 3]
    assert judge("mere-mare", [e[0] + 2.0**-25], e, "float16")
    assert tiny("float16") == 2.0**-14


# ------------------------------------------------------------------------- allclose
@pytest.mark.parametrize(
    "dtype, rtol, atol",
    [("float16", 1e-3, 1e-5), ("bfloat16", 1.6e-2, 1e-5), ("float32", 1.3e-6, 1e-5),
     ("float64", 1e-7, 1e-7)],
)
def test_allclose_torch_defaults(dtype: str, rtol: float, atol: float) -> None:
    e = 3.0
    tol = atol + rtol * e
    assert judge("allclose", [e + tol * 0.999], [e], dtype)
    assert not judge("allclose", [e + tol * 1.001], [e], dtype)


def test_allclose_integers_are_exact() -> None:
    assert judge("allclose", [3], [3], "int32")
    assert not judge("allclose", [4], [3], "int32")


# ---------------------------------------------------------------------------- exact
def test_exact_requires_equal_values_and_sign_of_zero() -> None:
    assert judge("exact", [1.0, -0.0], [1.0, -0.0], "float32")
    assert not judge("exact", [1.0, 0.0], [1.0, -0.0], "float32")
    assert not judge("exact", [1.0 + 2**-23], [1.0], "float32")


# -------------------------------------------------------------- NaN/Inf, everywhere
@pytest.mark.parametrize("name", sorted(STANDARDS))
def test_nan_and_inf_positions_must_agree_in_every_standard(name: str) -> None:
    std = get_standard(name)
    e = np.array([np.nan, np.inf, -np.inf, 1.0], np.float16)
    assert compare(e.copy(), e, std).passed
    for bad in ([1.0, np.inf, -np.inf, 1.0], [np.nan, -np.inf, -np.inf, 1.0],
                [np.nan, np.inf, -np.inf, np.nan], [np.nan, np.inf, np.inf, 1.0]):
        c = compare(np.array(bad, np.float16), e, std)
        assert not c.passed and c.nonfinite_mismatches == 1, (name, bad)
        assert "NaN/Inf positions disagree" in c.reason


# ------------------------------------------------------------------ choice of standard
def test_default_standard_per_dtype_and_spec_override() -> None:
    assert DEFAULT_STANDARD["float16"] == "mere-mare"
    assert DEFAULT_STANDARD["float64"] == "allclose"
    assert DEFAULT_STANDARD["int8"] == "exact"
    assert standard_for("float32").name == "mere-mare"
    assert standard_for("float32", "msopst").name == "msopst"
    assert standard_for("float32", {"float16": "msopst"}).name == "mere-mare"
    assert standard_for("float16", {"float16": "msopst"}).name == "msopst"
    assert standard_for("float16", {"float16": "msopst"}, override="exact").name == "exact"


def test_unknown_standard_lists_the_names() -> None:
    with pytest.raises(SpecError, match=r"unknown precision standard 'close'.*msopst"):
        get_standard("close")


def test_every_standard_is_documented() -> None:
    for std in STANDARDS.values():
        assert std.summary and type(std).__doc__
        assert std.name in repr(std)
