"""The comparison methods (ulp, cosine, mixed, requant, quant, cross-device) at their boundaries.

Where a method reproduces ops-test-kit's, the vectors are the boundary cases of that tool's
own tests and document (docs/validation.md, "Comparison methods", names them); the others
are opsdk's: just inside and just outside each tolerance, NaN/Inf, zero, sign changes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from opsdk.cli import main
from opsdk.errors import SpecError, ValidationError
from opsdk.spec import Input, OpSpec, Output
from opsdk.testing import STANDARDS, check, compare, get_standard
from opsdk.testing._methods import (
    Cosine,
    CrossDevice,
    Mixed,
    _safe_div,
    ulp_distance,
    ulp_histogram,
)
from opsdk.testing._standards import reads_reference, standard_name

F16, F32, F64 = np.float16, np.float32, np.float64
E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
NAN, INF = float("nan"), float("inf")
ROOT = Path(__file__).resolve().parents[2]


def judge(name: str, actual: Any, expected: Any, dtype: str) -> bool:
    """The standard's own verdict (no opsdk checks)."""
    std = get_standard(name)
    return std.judge(np.asarray(actual).reshape(-1), np.asarray(expected).reshape(-1),
                     dtype).passed


def ulp1(name: str) -> float:
    """The distance from 1.0 to the next value up in ``name``."""
    return {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23}[name]


# ------------------------------------------------------------------------------ ulp
def test_ulp_distance_at_zero_and_sign_change() -> None:
    sub = 2.0**-24  # float16's smallest subnormal
    a = F16([0.0, sub, sub, -sub, 0.0])
    e = F16([-0.0, 0.0, -sub, -0.0, 0.0])
    assert ulp_distance(a, e).tolist() == [0, 1, 2, 1, 0]
    assert ulp_distance(F32([-1.0]), F32([1.0]))[0] == 2 * 0x3F800000


def test_ulp_distance_of_neighbours_inf_and_nan() -> None:
    assert ulp_distance(F16([1.0]), F16([1.0 + ulp1("float16")]))[0] == 1
    assert ulp_distance(F16([65504.0, -65504.0]), F16([INF, -INF])).tolist() == [1, 1]
    assert ulp_distance(F16([NAN, NAN, 1.0]), F16([NAN, 1.0, INF])).tolist()[:2] == [0, INF]
    bf = np.array([1.0, 1.0 + ulp1("bfloat16")], ml_dtypes.bfloat16)
    assert ulp_distance(bf[:1], bf[1:])[0] == 1
    # float64 distances are exact integers, not rounded through float64 bit patterns
    assert ulp_distance(F64([1.0]), F64([np.nextafter(1.0, 2.0)]))[0] == 1
    assert ulp_distance(np.array([448.0], E4M3), np.array([416.0], E4M3))[0] == 1
    assert ulp_distance(np.uint8([0x01]), np.uint8([0x81]), "hifloat8")[0] == 2


def test_ulp_histogram_buckets() -> None:
    assert ulp_histogram(np.array([0.0, 1, 1, 2, 3, 4, 5, 9, 16, INF])) == {
        "0": 1, "1": 2, "2": 1, "3-4": 2, "5-8": 1, "9-16": 2, "inf": 1}
    assert ulp_histogram(np.array([])) == {}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_ulp_just_inside_and_just_outside(dtype: str) -> None:
    t = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    e = np.array([1.0, 2.0], t)
    one = np.array([1.0 + ulp1(dtype), 2.0], t)
    two = np.array([1.0 + 2 * ulp1(dtype), 2.0], t)
    assert judge("ulp", one, e, dtype) and not judge("ulp", two, e, dtype)
    assert judge("ulp:2", two, e, dtype) and not judge("ulp:0", one, e, dtype)
    v = get_standard("ulp").judge(two, e, dtype)
    assert v.failed.tolist() == [True, False]
    assert v.reason == "max 2 ULP (1 elements beyond 1); histogram 0:1 2:1"


def test_ulp_integers_must_be_equal_and_nan_must_agree() -> None:
    assert judge("ulp", np.int8([5]), np.int8([5]), "int8")
    assert not judge("ulp:4", np.int8([5]), np.int8([6]), "int8")
    assert judge("ulp", F32([NAN]), F32([NAN]), "float32")
    assert not judge("ulp:1000", F32([NAN]), F32([1.0]), "float32")


# --------------------------------------------------------------------------- cosine
def test_cosine_at_its_tolerance() -> None:
    g = F64([1.0, 0.0])
    inside = F64([1.0, np.tan(np.arccos(1 - 0.0099))])   # 1 - cos = 0.0099
    outside = F64([1.0, np.tan(np.arccos(1 - 0.0101))])  # 1 - cos = 0.0101
    assert judge("cosine", inside, g, "float64")
    assert not judge("cosine", outside, g, "float64")
    assert judge("cosine:0.02", outside, g, "float64")
    # scaled outputs are perfectly similar, whatever their magnitude
    assert judge("cosine:0", F32([2.0, 4.0]), F32([1.0, 2.0]), "float32")


def test_cosine_of_zero_vectors_fails_and_says_why() -> None:
    v = Cosine().judge(F32([0.0, 0.0]), F32([0.0, 0.0]), "float32")
    assert not v.passed and "both outputs are zero vectors" in v.reason
    v = Cosine().judge(F32([0.0, 0.0]), F32([1.0, 0.0]), "float32")
    assert not v.passed and "the actual output is a zero vector" in v.reason
    assert not judge("cosine", F32([NAN, 1.0]), F32([1.0, 1.0]), "float32")
    assert Cosine().judge(F32([]), F32([]), "float32").passed


def test_cosine_of_float16_is_computed_in_float32() -> None:
    # 70000 elements of 1.0: the dot product overflows float16, not float32
    x = np.ones(70000, F16)
    assert Cosine().similarity(x, x) == pytest.approx(1.0)
    assert judge("cosine:0", x, x, "float16")


# ---------------------------------------------------------------------------- mixed
FP32_ATOL, FP32_RTOL = 2.0**-16, 2.0**-10


def test_mixed_table_rows() -> None:
    t = Mixed.TABLE
    assert t["float16"] == (2.0**-9, 2.0**-9, 0.1)
    assert t["bfloat16"] == (2.0**-6, 2.0**-6, 1.0)
    assert t["float32"] == (2.0**-10, 2.0**-16, 0.01)
    assert t["hifloat32"] == (2.0**-9, 2.0**-10, 0.1)
    assert t["float8_e4m3fn"] == (2.0**-2, 2.0**-4, 4.0)
    assert t["float8_e5m2"] == (2.0**-1, 2.0**-3, 8.0)


def test_mixed_atol_and_rtol_boundaries() -> None:
    assert judge("mixed", F32([1.0, 2.0, 3.0]), F32([1.0, 2.0, 3.0]), "float32")
    assert judge("mixed", F32([FP32_ATOL]), F32([0.0]), "float32")
    assert not judge("mixed", F32([2 * FP32_ATOL]), F32([0.0]), "float32")
    assert judge("mixed", F32([100.005]), F32([100.0]), "float32")
    assert not judge("mixed", F32([100.2]), F32([100.0]), "float32")  # beyond atol + rtol*100


def test_mixed_99_percent_and_the_hard_limit() -> None:
    g = np.ones(100, F32)
    one, two, far = g.copy(), g.copy(), g.copy()
    one[0] = 1 + 5e-3
    two[:2] = 1 + 5e-3
    far[0] = 11.0
    assert judge("mixed", one, g, "float32")
    assert not judge("mixed", two, g, "float32")
    v = Mixed().judge(far, g, "float32")
    assert not v.passed and "matched 99.0000%" in v.reason and "max abs error 10" in v.reason


@pytest.mark.parametrize("a, g, ok", [
    (NAN, NAN, True), (INF, INF, True), (INF, -INF, False), (NAN, 1.0, False), (1.0, INF, False),
])
def test_mixed_nan_inf_truth_table(a: float, g: float, ok: bool) -> None:
    assert judge("mixed", F32([a]), F32([g]), "float32") is ok


def test_mixed_float16_float64_fp8_and_integers() -> None:
    assert judge("mixed", F16([1.0 + 2.0**-9 * 2]), F16([1.0]), "float16")  # atol + rtol
    assert not judge("mixed", F16([1.0 + 2.0**-9 * 3]), F16([1.0]), "float16")
    assert judge("mixed", F64([1.0 + 2.0**-10]), F64([1.0]), "float64")  # the float32 row
    assert not judge("mixed", F64([1.0 + 2.0**-9]), F64([1.0]), "float64")
    a = np.array([1.0, 2.0, 4.0], E5M2)
    v = Mixed().judge(a, F32([1.0, 2.1, 4.0]), "float8_e5m2")
    assert v.passed and "max abs error 0.1" in v.reason
    assert not judge("mixed", np.int32([1]), np.int32([2]), "int32")
    with pytest.raises(SpecError, match="hifloat8.*requant"):
        judge("mixed", np.uint8([1]), np.uint8([1]), "hifloat8")


def test_mixed_all_nan_agreeing_and_empty_pass() -> None:
    assert judge("mixed", F32([NAN, NAN]), F32([NAN, NAN]), "float32")
    assert judge("mixed", F32([]), F32([]), "float32")


def test_mixed_share_over_the_finite_elements_is_checked_too() -> None:
    g = np.concatenate([np.full(50, np.nan), np.ones(50)]).astype(F32)
    a = g.copy()
    a[50] = 1 + 5e-3  # 99 of 100 match (the agreeing NaN included), 49 of the 50 finite
    c = compare(a, g, get_standard("mixed"))
    assert [(k.name, k.passed) for k in c.checks] == [
        ("mixed", True), ("nonfinite", True), ("finite-share", False)]
    assert compare(a, g, get_standard("mixed"), strict=False).passed


# ------------------------------------------------------------------ requant and quant
def test_requant_one_ulp_and_the_share() -> None:
    g = np.array([1.0] * 1000, E4M3)
    up1, up2 = np.array([1.125], E4M3), np.array([1.25], E4M3)  # 1 and 2 ULP above 1
    assert ulp_distance(up2, g[:1])[0] == 2
    a = g.copy()
    a[:500] = up1
    assert judge("requant", a, g, "float8_e4m3fn")
    a[0] = up2[0]  # 1 of 1000 beyond 1 ULP: 1 - 0.999 > 0.001, as the tool computes it
    assert not judge("requant", a, g, "float8_e4m3fn")
    big = np.concatenate([np.array([1.0] * 1999, E4M3), up2])  # 1 of 2000: 0.05%
    assert judge("requant", big, np.array([1.0] * 2000, E4M3), "float8_e4m3fn")
    assert judge("requant", np.array([NAN], E5M2), np.array([NAN], E5M2), "float8_e5m2")
    assert not judge("requant", np.array([NAN], E4M3), np.array([448.0], E4M3),
                     "float8_e4m3fn")


def test_requant_on_integers_and_refused_floats() -> None:
    assert judge("requant", np.int32([5, 7]), np.int32([6, 7]), "int32")
    assert not judge("requant", np.int32([5, 7]), np.int32([7, 7]), "int32")
    with pytest.raises(SpecError, match="requant is the 8-bit float rule.*float16"):
        judge("requant", F16([1.0]), F16([1.0]), "float16")


def test_quant_one_lsb() -> None:
    assert judge("quant", np.int8([5, -128, 127]), np.int8([6, -127, 126]), "int8")
    assert not judge("quant", np.int8([5]), np.int8([7]), "int8")
    assert judge("quant", np.uint8([0, 255]), np.uint8([1, 254]), "uint8")
    assert not judge("quant", np.uint8([0]), np.uint8([255]), "uint8")  # no wrap-around
    g = np.zeros(1000, np.int8)
    a = g.copy()
    a[0] = 2
    assert not judge("quant", a, g, "int8")
    assert not judge("quant:0.001", a, g, "int8")  # 1 - 0.999 = 0.0010000000000000009
    assert judge("quant:0.0011", a, g, "int8")
    with pytest.raises(SpecError, match="quant judges quantised int8/uint8 outputs, not int32"):
        judge("quant", np.int32([1]), np.int32([1]), "int32")


# ------------------------------------------------------------------------- cross-device
def cross(t: Any, g: Any, b: Any, dtype: str = "float32", level: str = "L1") -> Any:
    t, g, b = np.asarray(t), np.asarray(g), np.asarray(b)
    return CrossDevice(level).judge_against(t, g, dtype, golden=g.astype(F64), reference=b)


def test_cross_device_agreeing_and_exceeding() -> None:
    g = F32([1.0, 2.0, 3.0])
    assert cross(g.copy(), g, g.copy()).passed
    v = cross(g + 1, g, g + 0.001)
    assert not v.passed and "mare ratio" in v.reason and "mere ratio" in v.reason


def test_cross_device_floored_division() -> None:
    err = 2.0**-14
    assert _safe_div(0, 0, err) == 1.0
    assert _safe_div(1.0, 0, err) == 1.0 / err
    assert _safe_div(6, 3, err) == 2.0
    assert _safe_div(0.1, NAN, err) == INF
    assert _safe_div(INF, INF, err) == 1.0 and _safe_div(INF, 1.0, err) == INF


def test_cross_device_when_the_reference_device_is_exact() -> None:
    g = F32([1.0])
    assert cross(F32([1.0 + 1.4 * 2.0**-14]), g, g.copy()).passed
    v = cross(F32([1.0 + 1.6 * 2.0**-14]), g, g.copy())
    assert not v.passed and "mere ratio 1.6 > 1.5" in v.reason
    assert cross(F32([1.0 + 1.6 * 2.0**-14]), g, g.copy(), level="L0").passed
    assert not cross(F32([1.0 + 1.3 * 2.0**-14]), g, g.copy(), level="L2").passed


def test_cross_device_small_values() -> None:
    g = np.full(100, 1e-15, F32)
    v = cross(g.copy(), g, g + F32(1e-8))
    assert v.passed and "small-value errors 0 vs 100" in v.reason
    # the candidate off where the reference is exact: 100 errors against max(0, 1)
    v = cross(g + F32(1e-8), g, g.copy())
    assert not v.passed and "small-value error count ratio 100 > 2" in v.reason
    two = g.copy()
    two[:2] += F32(1e-8)
    assert cross(two, g, g.copy()).passed  # 2 errors against max(0, 1): ratio 2


def test_cross_device_nan_inf_positions() -> None:
    g, b = F32([1.0, NAN]), F32([1.0, NAN])
    v = cross(F32([1.0, 1.0]), g, b)
    assert not v.passed and "1 NaN/Inf positions match neither" in v.reason
    assert cross(F32([1.0, NAN]), g, F32([1.0, 2.0])).passed  # equals the golden's NaN
    assert cross(F32([1.0, INF]), F32([1.0, 2.0]), F32([1.0, INF])).passed  # as the reference
    # Inf where all three have it (an edge-value case): judged without an inf - inf warning
    assert cross(F32([1.0, INF, -INF]), F32([1.0, INF, -INF]), F32([1.0, INF, -INF])).passed


def test_cross_device_needs_a_reference_and_a_known_dtype() -> None:
    v = get_standard("cross-device").judge(F32([1.0]), F32([1.0]), "float32")
    assert not v.passed and "--reference-device DEVICE" in v.reason
    with pytest.raises(SpecError, match="cross-device.*float64"):
        cross(F64([1.0]), F64([1.0]), F64([1.0]), "float64")


# ------------------------------------------------------------------------ names, compare
def test_every_method_is_registered_and_parametrised_by_name() -> None:
    for name in ("ulp", "cosine", "mixed", "requant", "quant", "cross-device"):
        assert name in STANDARDS and type(STANDARDS[name]).__doc__
    assert get_standard("cosine:0.001").tol == 0.001  # type: ignore[attr-defined]
    assert get_standard("cross-device:L2").level == "L2"  # type: ignore[attr-defined]
    assert reads_reference(None, "cross-device") and not reads_reference("mixed")
    assert reads_reference({"float16": "cross-device:L0"})
    for bad, why in (("ulp:-1", ">= 0"), ("ulp:x", "not a number"), ("cross-device:L3", "L0"),
                     ("quant:2", "within \\[0, 1\\]"), ("cosine:3", "within \\[0, 2\\]")):
        with pytest.raises(SpecError, match=why):
            get_standard(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="unknown precision standard"):
        standard_name("ulps")


def test_compare_passes_the_golden_and_the_reference_device() -> None:
    g64 = F64([1.0, 2.0, 3.0])
    exp = g64.astype(F32)
    std = get_standard("cross-device")
    c = compare(exp + F32(1.0), exp, std, golden=g64, reference=exp + F32(0.001))
    assert not c.passed and c.reason.startswith("cross-device: L1: MARE/MERE/RMSE ratios")
    assert compare(exp.copy(), exp, std, golden=g64, reference=exp.copy()).passed
    # an 8-bit float output is judged under its own name
    a = np.array([1.0, 2.0], E4M3)
    assert compare(a, a.copy(), get_standard("requant")).dtype == "float8_e4m3fn"


# ------------------------------------------------------------------- end to end, check()
def _scale_spec() -> OpSpec:
    spec = OpSpec("Twice", domain="com.test", inputs=[Input("x")], outputs=[Output("y")],
                  types={"T": ("float32",)})
    spec.register_reference(lambda x: x * 2)
    return spec


class Kernel:
    """A NumPy stand-in kernel: ``fn`` of the input, in the input dtype."""

    def __init__(self, spec: OpSpec, fn: Callable[[np.ndarray], np.ndarray]) -> None:
        self.spec, self.fn, self.calls = spec, fn, 0

    def run(self, inputs: list[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        self.calls += 1
        with np.errstate(all="ignore"):
            return [np.asarray(self.fn(inputs[0])).astype(inputs[0].dtype)]


def test_check_divides_by_the_reference_device() -> None:
    spec = _scale_spec()
    exact = Kernel(spec, lambda x: x * 2)
    sloppy = Kernel(spec, lambda x: x * F32(2 + 2.0**-10))  # 2^-11 relative error
    trusted = Kernel(spec, lambda x: x * 2)
    rep = check(exact, standard="cross-device", reference=trusted)
    assert trusted.calls > 0 and any("reference (cross-device)" in c for c in rep.checked)
    with pytest.raises(ValidationError, match="cross-device: L1"):
        check(sloppy, standard="cross-device", reference=trusted)
    # as sloppy as the reference device: every ratio 1
    check(sloppy, standard="cross-device:L2",
          reference=Kernel(spec, lambda x: x * F32(2 + 2.0**-10)))
    with pytest.raises(ValidationError, match="no reference device's output"):
        check(exact, standard="cross-device")
    idle = Kernel(spec, lambda x: x * 2)
    check(exact, standard="ulp:0", reference=idle)
    assert idle.calls == 0  # opened only for a standard that reads it


def test_opsdk_check_takes_a_method_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "ThresholdedRelu", "--standard", "ulp:0", "--no-torch",
                 "--no-isolate"]) == 0
    out = capsys.readouterr().out
    assert "opsdk.check(ThresholdedRelu): passed" in out and "reference (ulp)" in out
    assert main(["check", "ThresholdedRelu", "--standard", "cross-device:L2", "--no-torch",
                 "--no-isolate"]) == 0
    assert "reference (cross-device)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["check", "ThresholdedRelu", "--standard", "ulp:-1"])
    assert "ulp: the largest ULP distance must be >= 0" in capsys.readouterr().err


def test_opsdk_test_runs_cross_device_against_another_device(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    p = subprocess.run(
        [sys.executable, "-m", "opsdk", "test", "ThresholdedRelu", "--standard", "cross-device",
         "--reference-device", "onnxruntime", "--report", str(report), "-k", "float32-small",
         "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(report.read_text())["cases"][0]["outputs"][0]
    assert out["standard"] == "cross-device" and out["passed"]
    assert out["checks"][0]["detail"].startswith("L1: MARE/MERE/RMSE ratios")
    p = subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "operators" / "thresholded_relu"), "-q", "-p",
         "no:cacheprovider", "--opsdk-standard=cosine:-1", "-k", "float32-small"],
        capture_output=True, text=True, timeout=600)
    assert p.returncode == 4 and "cosine: the tolerance of 1 - cos" in p.stderr


def test_an_absent_reference_device_skips_with_its_reason() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "operators" / "thresholded_relu"), "-q",
         "-rs", "-p", "no:cacheprovider", "--opsdk-standard=cross-device:L0",
         "--opsdk-reference-device=npu", "-k", "float32-small"],
        capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 skipped" in p.stdout
    assert "reference device npu (--opsdk-reference-device): npu unavailable" in p.stdout
