"""run_case and opsdk.check catch real kernel defects; precision-mode emulation.

The deliberately defective kernels here are small NumPy callables with the executor
interface (``run(inputs, attrs)``); they test the harness, not a device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import opsdk
from opsdk.errors import SpecError, ValidationError
from opsdk.spec import Attr, Input, OpSpec, Output
from opsdk.testing import build_cases, check, kernel_dtypes, run_case


def _spec(types: tuple[str, ...] = ("float16", "float32"), batch_axis: int | None = None) -> OpSpec:
    spec = OpSpec(
        "Scale", domain="com.test", inputs=[Input("x")], outputs=[Output("y")],
        attrs=[Attr("k", "float", 2.0)], types={"T": types}, batch_axis=batch_axis,
    )
    spec.register_reference(lambda x, *, k: x * k)
    return spec


class Kernel:
    """A NumPy stand-in kernel computing ``fn`` in the input dtype."""

    def __init__(self, spec: OpSpec, fn: Callable[..., Any]) -> None:
        self.spec = spec
        self.fn = fn
        self.calls = 0

    def run(self, inputs: list[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        self.calls += 1
        r = self.spec.resolve_attrs(attrs or {})
        x = inputs[0]
        with np.errstate(all="ignore"):
            return [np.asarray(self.fn(x, r["k"], self)).astype(x.dtype)]


def good(x: np.ndarray, k: float, _: Kernel) -> np.ndarray:
    return x * x.dtype.type(k)


def case(spec: OpSpec, cid: str) -> Any:
    return next(c for c in build_cases(spec) if c.id == cid)


@pytest.mark.parametrize(
    "types", [("float16", "float32"), ("bfloat16",), ("float64",), ("int32",)], ids="-".join
)
def test_a_correct_kernel_passes_every_generated_case(types: tuple[str, ...]) -> None:
    spec = _spec(types)
    k = Kernel(spec, good)
    results = [run_case(spec, k, c) for c in build_cases(spec)]
    assert len(results) >= 9
    assert all(r.passed for r in results), [r.summary() for r in results if not r.passed][:1]


def test_an_off_by_one_ulp_kernel_fails_exact_but_passes_mere_mare() -> None:
    spec = _spec()

    def ulp(x: np.ndarray, k: float, _: Kernel) -> np.ndarray:
        y = x * x.dtype.type(k)
        return np.nextafter(y, x.dtype.type(np.inf))

    k = Kernel(spec, ulp)
    c = case(spec, "float32-small")
    assert run_case(spec, k, c).passed
    r = run_case(spec, k, c, standard="exact")
    assert not r.passed and "under exact" in r.summary()


def test_the_standard_of_spec_py_applies_per_dtype() -> None:
    spec = _spec()
    spec.standard = {"float32": "exact"}

    def ulp(x: np.ndarray, k: float, _: Kernel) -> np.ndarray:
        return np.nextafter(x * x.dtype.type(k), x.dtype.type(np.inf))

    k = Kernel(spec, ulp)
    r32 = run_case(spec, k, case(spec, "float32-small"))
    assert not r32.passed and r32.comparisons[0].standard == "exact"
    r16 = run_case(spec, k, case(spec, "float16-small"))
    assert r16.passed and r16.comparisons[0].standard == "mere-mare"


def test_a_wrong_kernel_fails_with_seed_inputs_and_repro() -> None:
    spec = _spec()
    k = Kernel(spec, lambda x, kk, _: np.where(x > 1, x * kk + 0.5, x * kk))
    r = run_case(spec, k, case(spec, "float16-odd"), seed=5, repro=lambda c: f"repro {c.id}")
    assert not r.passed
    text = r.summary()
    assert "seed 5" in text and "reproduce: repro float16-odd" in text
    m = r.comparisons[0].mismatches[0]
    assert m.inputs["x"] is not None and m.inputs["x"] > 1
    assert m.actual - m.expected == pytest.approx(0.5, abs=2e-2)


def test_edge_cases_catch_a_kernel_that_flushes_nan() -> None:
    spec = _spec()
    k = Kernel(spec, lambda x, kk, _: np.nan_to_num(x * kk, nan=0.0))
    assert run_case(spec, k, case(spec, "float32-small")).passed
    r = run_case(spec, k, case(spec, "float32-edge"))
    assert not r.passed and r.comparisons[0].nonfinite_mismatches > 0


def test_wrong_output_dtype_is_a_problem() -> None:
    spec = _spec()

    class Widening(Kernel):
        def run(self, inputs: list[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
            return [inputs[0].astype(np.float64) * 2]

    r = run_case(spec, Widening(spec, good), case(spec, "float32-small"))
    assert not r.passed
    assert "kernel produced float64[2, 3, 4], spec inference says float32[2, 3, 4]" in r.problems[0]


def test_check_passes_a_good_kernel_and_lists_what_it_checked() -> None:
    spec = _spec(batch_axis=0)
    rep = check(Kernel(spec, good))
    assert rep.passed and any("determinism" in c and "batch" in c for c in rep.checked)


def test_check_catches_input_mutation() -> None:
    spec = _spec()

    def mutating(x: np.ndarray, k: float, _: Kernel) -> np.ndarray:
        y = x * x.dtype.type(k)
        x *= 0
        return y

    with pytest.raises(ValidationError, match=r"modified input 'x' in place") as ei:
        check(Kernel(spec, mutating), seed=4)
    assert not ei.value.report.passed  # type: ignore[attr-defined]
    assert str(ei.value).endswith("reproduce: opsdk check Scale --seed 4")


def test_check_catches_nondeterminism() -> None:
    spec = _spec()

    def flaky(x: np.ndarray, k: float, kern: Kernel) -> np.ndarray:
        return x * x.dtype.type(k) + x.dtype.type(kern.calls % 2) * x.dtype.type(1e-3)

    with pytest.raises(ValidationError, match=r"differs between two identical runs"):
        check(Kernel(spec, flaky), standard="msopst")


def test_check_catches_batch_inconsistency() -> None:
    spec = _spec(batch_axis=0)

    def batch_dependent(x: np.ndarray, k: float, _: Kernel) -> np.ndarray:
        return x * x.dtype.type(k) + (x.shape[0] > 1) * x.dtype.type(0.25)

    with pytest.raises(ValidationError, match=r"batch: 'y' of the whole batch differs"):
        check(Kernel(spec, batch_dependent), standard="msopst")


def test_check_accepts_explicit_samples() -> None:
    spec = _spec()
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    rep = check(Kernel(spec, good), [([x], {"k": 3.0}), {"inputs": [x]}, [x]])
    assert len(rep.checked) == 3
    with pytest.raises(SpecError, match="pass a list of"):
        check(Kernel(spec, good), [42])


def test_check_reports_reference_mismatch_with_values() -> None:
    spec = _spec()
    with pytest.raises(ValidationError, match=r"(?s)reference mismatch.*at \[0\] expected"):
        check(Kernel(spec, lambda x, kk, _: x * x.dtype.type(kk + 1)))


# ----------------------------------------------------------------- precision modes
def test_kernel_dtype_choice_per_precision_mode() -> None:
    both, only16, only32 = _spec(), _spec(("float16",)), _spec(("float32",))
    f32 = ("float32",)
    assert kernel_dtypes(both, f32, "force_fp16") == ("float16",)
    assert kernel_dtypes(both, f32, "allow_fp32_to_fp16") == f32
    assert kernel_dtypes(only16, f32, "allow_fp32_to_fp16") == ("float16",)
    assert kernel_dtypes(only32, f32, "force_fp16") == f32
    assert kernel_dtypes(both, f32, "must_keep_origin_dtype") == f32
    assert kernel_dtypes(both, f32, "allow_mix_precision") == f32  # graylisted: follows input
    assert kernel_dtypes(only16, f32, "allow_mix_precision") == ("float16",)
    with pytest.raises(SpecError, match=r"must_keep_origin_dtype ATC finds no AI Core kernel"):
        kernel_dtypes(only16, f32, "must_keep_origin_dtype")
    with pytest.raises(SpecError, match="unknown precision mode"):
        kernel_dtypes(both, f32, "fp8")


def test_force_fp16_runs_the_float16_kernel_and_predicts_its_accuracy() -> None:
    spec = _spec()
    k = Kernel(spec, good)
    c = case(spec, "float32-small")
    plain = run_case(spec, k, c)
    emulated = run_case(spec, k, c, precision_mode="force_fp16")
    assert plain.passed and emulated.passed
    assert "cast to float16" in emulated.note
    cmp = emulated.comparisons[0]
    assert cmp.dtype == "float32" and 1e-5 < cmp.max_rel_error < 2**-10
    assert plain.comparisons[0].max_rel_error < 1e-6


def test_force_fp16_exposes_float16_overflow_of_float32_inputs() -> None:
    spec = _spec()
    r = run_case(spec, Kernel(spec, good), case(spec, "float32-edge"), precision_mode="force_fp16")
    assert not r.passed and r.comparisons[0].nonfinite_mismatches > 0


def test_real_operator_passes_generated_cases_and_check() -> None:
    op = opsdk.load("ThresholdedRelu")
    for c in build_cases(op.spec)[:18]:
        r = run_case(op.spec, op, c)
        assert r.passed, r.summary()
    assert check(op).passed
