"""Each precision standard at the boundaries of its definition, on hand-made arrays.

The CANN standards reproduce the verdicts of the tools that define them (see
docs/validation.md): the examples where those tools and opsdk's stricter checks disagree
are tests here, and each names the rule whose verdict it pins down.
"""

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

F16, F32 = np.float16, np.float32


def judge(name: str, actual: list[float], expected: list[float], dtype: str) -> bool:
    """The standard's own verdict (no opsdk checks); float values stay float64."""
    np_dtype = {"bool": np.bool_}.get(dtype, dtype if "int" in dtype else np.float64)
    a, e = np.array(actual, np_dtype), np.array(expected, np_dtype)
    return get_standard(name).judge(a, e, dtype).passed


def checks(actual: np.ndarray, expected: np.ndarray, name: str) -> dict[str, bool]:
    """Each check's verdict under ``compare`` with opsdk's checks on."""
    return {c.name: c.passed for c in compare(actual, expected, get_standard(name)).checks}


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
    at = [10.0 / 9.0 + 1e-3] + [1.0] * 99  # (a-1)/a >= 0.1
    assert not judge("msopst", at, [1.0] * 100, "float16")


def test_msopst_small_differences_are_absolute_errors() -> None:
    # An absolute error below 0.01 never fails, however small the values are.
    assert judge("msopst", [0.0099] * 10, [0.0] * 10, "float32")
    # 1% relative error exactly is not beyond the threshold.
    r = STANDARDS["msopst"].rdiff(F32([100.0]), F32([101.0]))  # type: ignore[attr-defined]
    assert 0.0098 < r[0] <= 0.01


def test_msopst_computes_in_float32() -> None:
    # float32(0.01) against 0 is not below float32(0.01): a relative error of ~1, fail.
    a, e = F32([0.01]), F32([0.0])
    assert not get_standard("msopst").judge(a, e, "float32").passed
    # In float64 the same values would pass (0.009999999776 < 0.01): msopst does not.
    assert float(np.abs(a.astype(np.float64) - 0)[0]) < 0.01
    assert checks(a, e, "msopst") == {"msopst": False, "nonfinite": True}


def test_msopst_skips_nan_and_counts_over_the_whole_size() -> None:
    # actual=[nan], expected=[1.0]: msopst passes (NaN is skipped); opsdk's check fails.
    c = compare(F32([np.nan]), F32([1.0]), get_standard("msopst"))
    assert not c.passed
    assert c.reason == "msopst: pass; nonfinite: 1 NaN where the reference has 1.0"
    # n=100, 50 NaN on both sides, 3 of the 50 finite values off by 5%:
    # msopst 3/100 = 3% passes; over the finite elements 3/50 = 6% fails.
    e = np.ones(100, F32)
    e[:50] = np.nan
    a = e.copy()
    a[50:53] = 1.05
    assert get_standard("msopst").judge(a, e, "float32").passed
    c = compare(a, e, get_standard("msopst"))
    assert {x.name: x.passed for x in c.checks} == {
        "msopst": True, "nonfinite": True, "finite-share": False}
    assert "finite-share: msopst over the 50 finite elements: 6.00% of 50" in c.reason
    assert not compare(a, e, get_standard("msopst"), strict=False).checks[1:]


@pytest.mark.parametrize("a, e", [(np.inf, 1.0), (1.0, np.inf), (-np.inf, np.inf),
                                  (np.inf, np.inf), (np.nan, np.nan), (np.nan, 2.0)])
def test_msopst_never_fails_a_nonfinite_position(a: float, e: float) -> None:
    # An Inf vs finite pair gives rdiff = inf/inf = NaN, which is never an error.
    assert judge("msopst", [a], [e], "float32")


def test_msopst_bool_and_integers_are_judged_as_float32_values() -> None:
    # A flipped bool is a relative error of ~1: beyond the hard limit 0.1 on its own.
    assert judge("msopst", [True, False] * 50, [True, False] * 50, "bool")
    assert not judge("msopst", [True] * 99 + [False], [True] * 100, "bool")
    assert judge("msopst", [100, 200], [100, 201], "int32")  # 1/201 < 1%
    assert judge("msopst", [100, 200], [100, 202], "int32")  # 2/202 just under 1%
    assert not judge("msopst", [100, 200], [100, 203], "int32")  # 3/203 over 1%


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
    assert not get_standard("double-thousandths").judge(
        np.array(hard), np.ones(n), "float16").passed
    f32_hard = np.array([1.0101] + [1.0] * 9999)
    assert not get_standard("double-thousandths").judge(f32_hard, np.ones(10000),
                                                        "float32").passed
    f32_ok = np.array([1.0099] + [1.0] * 9999)
    assert get_standard("double-thousandths").judge(f32_ok, np.ones(10000), "float32").passed


def test_double_thousandths_bool_fails_beyond_a_thousandth() -> None:
    n = 2000
    every_flipped = [False] * n
    assert not judge("double-thousandths", every_flipped, [True] * n, "bool")
    two = [False] * 2 + [True] * (n - 2)  # 0.1% of 2000 = 2 may differ
    three = [False] * 3 + [True] * (n - 3)
    assert judge("double-thousandths", two, [True] * n, "bool")
    assert not judge("double-thousandths", three, [True] * n, "bool")
    assert not judge("double-thousandths", [False], [True], "bool")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_double_thousandths_integers_allow_one(dtype: str) -> None:
    assert judge("double-thousandths", [1, 2, 4], [2, 3, 3], dtype)
    assert not judge("double-thousandths", [1, 2, 5], [2, 3, 3], dtype)


def test_double_thousandths_integers_do_not_wrap() -> None:
    # The UT frame subtracts in int8/uint8 and wraps; opsdk's +-1 rule does not.
    assert not judge("double-thousandths", [127], [-128], "int8")
    assert not judge("double-thousandths", [0], [255], "uint8")
    big = np.iinfo(np.int64)
    assert not judge("double-thousandths", [big.max], [big.min], "int64")
    assert judge("double-thousandths", [big.max], [big.max - 1], "int64")


def test_double_thousandths_nonfinite_as_the_ut_frame_judges() -> None:
    # Both NaN: the UT frame fails (NaN is not within atol*|e|); opsdk's check agrees they agree.
    assert not judge("double-thousandths", [np.nan], [np.nan], "float32")
    assert checks(F32([np.nan]), F32([np.nan]), "double-thousandths") == {
        "double-thousandths": False, "nonfinite": True}
    # Finite where the reference is Inf: the UT frame passes (inf <= inf); opsdk fails it.
    assert judge("double-thousandths", [1.0], [np.inf], "float32")
    assert checks(F32([1.0]), F32([np.inf]), "double-thousandths") == {
        "double-thousandths": True, "nonfinite": False}
    # Inf where the reference is finite fails both.
    assert not judge("double-thousandths", [np.inf], [1.0], "float32")


def test_double_thousandths_undefined_dtype_names_the_fix() -> None:
    with pytest.raises(SpecError, match=r"defines no tolerance for bfloat16.*spec\.py"):
        judge("double-thousandths", [1.0], [1.0], "bfloat16")


# ------------------------------------------------------------------------ mere-mare
@pytest.mark.parametrize("dtype, t", [("float16", 2**-10), ("bfloat16", 2**-7), ("float32", 2**-13)])
def test_mere_boundary(dtype: str, t: float) -> None:
    n, e = 100, 2.0  # rel = |a-g| / (|g| + 1e-7)
    below = [e + 0.99 * t * (e + 1e-7)] * n
    at = [e + 1.0001 * t * (e + 1e-7)] * n  # MERE >= T fails (pass needs MERE < T)
    assert judge("mere-mare", below, [e] * n, dtype)
    assert not judge("mere-mare", at, [e] * n, dtype)


@pytest.mark.parametrize("dtype, t", [("float16", 2**-10), ("bfloat16", 2**-7), ("float32", 2**-13)])
def test_mare_boundary(dtype: str, t: float) -> None:
    n = 1000  # one element with a large error; MERE stays tiny
    below = [1.0 + 9.9 * t] + [1.0] * (n - 1)
    at = [1.0 + 10.001 * t] + [1.0] * (n - 1)
    assert judge("mere-mare", below, [1.0] * n, dtype)
    assert not judge("mere-mare", at, [1.0] * n, dtype)


def test_mere_mare_denominator_is_golden_plus_1e7() -> None:
    # actual=1+2^-10, expected=1 in float16: rel = 2^-10/(1+1e-7) < T, CANN passes.
    assert judge("mere-mare", [1 + 2**-10], [1.0], "float16")
    # opsdk's statistics divide by max(|e|, tiny) and report exactly 2^-10.
    assert compare(F16([1 + 2**-10]), F16([1.0]), get_standard("mere-mare")).mere == 2**-10


def test_mere_mare_tiny_float32_values_pass() -> None:
    # Divided by |g| + 1e-7 a float32 error of 1e-30 is nothing (old opsdk: rel 1, fail).
    assert judge("mere-mare", [2e-30], [1e-30], "float32")


@pytest.mark.parametrize("dtype, small, err, g", [("float16", 2**-11, 2**-16, 2**-12),
                                                  ("bfloat16", 2**-8, 2**-16, 2**-14),
                                                  ("float32", 2**-14, 2**-30, 2**-22)])
def test_small_value_rule_boundaries(dtype: str, small: float, err: float, g: float) -> None:
    n, std = 100, get_standard("mere-mare")
    ref = np.array([1.0] * (n - 1) + [g])  # the last element is a small value (|g| < small)
    within = ref.copy()
    within[-1] += err  # rel. error >= 10T, absolute error == err: not an error
    beyond = ref.copy()
    beyond[-1] += 1.5 * err
    assert std.judge(within, ref, dtype).passed
    assert "passes by the small-value rule" in std.judge(within, ref, dtype).reason
    v = std.judge(beyond, ref, dtype)
    assert not v.passed and "1 small values (|g| < " in v.reason and v.failed[-1]


def test_small_value_bound_is_exclusive() -> None:
    # |g| == 2^-11 is a normal float16 value: its relative error (2^-5 >= 10T) counts.
    g = np.array([1.0] * 99 + [2.0**-11])
    a = g.copy()
    a[-1] += 2.0**-16
    assert not get_standard("mere-mare").judge(a, g, "float16").passed
    g[-1] = a[-1] = 2.0**-11 - 2.0**-22  # just below the bound: judged by abs. error
    a[-1] += 2.0**-16
    assert get_standard("mere-mare").judge(a, g, "float16").passed


def test_small_value_rule_float16_subnormals() -> None:
    # A float16 subnormal off by one spacing: rel ~0.2 by the public formula alone, but a
    # small value (|g| < 2^-11) within 2^-16, so CANN Bench's rule passes it.
    g = [1.0] * 99 + [3 * 2.0**-24]
    a = [1.0] * 99 + [4 * 2.0**-24]
    assert judge("mere-mare", a, g, "float16")
    # Normal values still decide: the rule does not excuse a bad normal element.
    a_bad = [1.0 + 2**-5] + a[1:]
    assert not judge("mere-mare", a_bad, g, "float16")


def test_mere_mare_nonfinite_as_cann_bench() -> None:
    std = get_standard("mere-mare")
    # Agreeing NaN and Inf are left out; the rest is judged.
    assert judge("mere-mare", [np.nan, np.inf, -np.inf, 1.0], [np.nan, np.inf, -np.inf, 1.0],
                 "float32")
    assert not judge("mere-mare", [np.nan, 1.0], [1.0, 1.0], "float32")
    assert "NaN positions disagree" in std.judge(F32([1, 1]), F32([np.nan, 1]), "float32").reason
    assert "Inf signs disagree" in std.judge(F32([np.inf]), F32([-np.inf]), "float32").reason
    # One-sided Inf is replaced by the largest finite value: 65504 vs Inf in float16 passes
    # mere-mare, and opsdk's nonfinite check fails it.
    assert std.judge(F16([np.inf]), F16([65504.0]), "float16").passed
    assert checks(F16([np.inf]), F16([65504.0]), "mere-mare") == {
        "mere-mare": True, "nonfinite": False, "rounding": True}
    assert not judge("mere-mare", [np.inf], [1.0], "float16")


@pytest.mark.parametrize("dtype", ["int8", "int32", "bool"])
def test_mere_mare_integers_and_bool_must_be_equal(dtype: str) -> None:
    assert judge("mere-mare", [1, 0, 1], [1, 0, 1], dtype)
    assert not judge("mere-mare", [1, 0, 0], [1, 0, 1], dtype)


def test_mere_mare_undefined_for_float64() -> None:
    with pytest.raises(SpecError, match=r"'mere-mare' defines no tolerance for float64"):
        judge("mere-mare", [1.0], [1.0], "float64")


# ------------------------------------------------------------------------- allclose
@pytest.mark.parametrize(
    "dtype, rtol, atol",
    [("float16", 1e-3, 1e-5), ("bfloat16", 1.6e-2, 1e-5), ("float32", 1.3e-6, 1e-5),
     ("float64", 1e-7, 1e-7)],
)
def test_allclose_torch_defaults(dtype: str, rtol: float, atol: float) -> None:
    e = 3.0
    tol = atol + rtol * e
    a_ok, a_bad = np.array([e + tol * 0.999]), np.array([e + tol * 1.001])
    std = get_standard("allclose")
    assert std.judge(a_ok, np.array([e]), dtype).passed
    assert not std.judge(a_bad, np.array([e]), dtype).passed


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_allclose_integers_and_bool_are_exact(dtype: str) -> None:
    assert judge("allclose", [1], [1], dtype)
    assert not judge("allclose", [0], [1], dtype)
    if dtype == "int64":  # exact, not through float64 (2^62 + 1 is not a float64)
        assert not judge("allclose", [2**62 + 1], [2**62], dtype)


# ---------------------------------------------------------------------------- exact
def test_exact_requires_equal_values_and_sign_of_zero() -> None:
    assert judge("exact", [1.0, -0.0], [1.0, -0.0], "float32")
    assert not judge("exact", [1.0, 0.0], [1.0, -0.0], "float32")
    assert not judge("exact", [1.0 + 2**-23], [1.0], "float32")
    assert not judge("exact", [True, False], [True, True], "bool")


# -------------------------------------------------------------- opsdk's checks
@pytest.mark.parametrize("name", sorted(STANDARDS))
def test_nonfinite_check_runs_under_every_standard(name: str) -> None:
    std = get_standard(name)
    if not std.supports("float16"):  # quant, requant: integer and 8-bit float rules
        pytest.skip(f"{name} defines no float16 rule")
    e = np.array([np.nan, np.inf, -np.inf, 1.0], np.float16)
    assert compare(e.copy(), e, std).checks[1].passed
    for bad in ([1.0, np.inf, -np.inf, 1.0], [np.nan, -np.inf, -np.inf, 1.0],
                [np.nan, np.inf, -np.inf, np.nan], [np.nan, np.inf, np.inf, 1.0]):
        c = compare(np.array(bad, np.float16), e, std, judge_dtype="float16")
        assert not c.passed and c.nonfinite_mismatches == 1, (name, bad)
        nf = c.checks[1]
        assert nf.name == "nonfinite" and not nf.passed
        assert "nonfinite: 1 " in c.reason and " where the reference has " in c.reason


def test_nonfinite_message_lists_the_first_disagreements() -> None:
    e = F32([1.0, 2.0, np.inf, 4.0, 5.0]).reshape(5, 1)
    a = F32([np.nan, np.nan, 3.0, -np.inf, np.nan]).reshape(5, 1)
    c = compare(a, e, get_standard("exact"))
    assert c.checks[1].detail == (
        "5 NaN/Inf disagreements: NaN where the reference has 1.0 at [0, 0], NaN where the "
        "reference has 2.0 at [1, 0], 3.0 where the reference has +Inf at [2, 0], ...")


def test_every_verdict_is_named_in_the_json() -> None:
    c = compare(F32([np.nan, 1.0]), F32([1.0, 1.5]), get_standard("msopst"))
    d = c.as_dict()
    assert [x["name"] for x in d["checks"]] == ["msopst", "nonfinite", "finite-share"]
    assert [x["passed"] for x in d["checks"]] == [False, False, False]
    assert d["reason"].startswith("msopst: 50.00% of 2 elements exceed rel. error 0.01")


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
    assert tiny("float16") == 2.0**-14
