"""compare(): statistics, mismatches with inputs, NaN/Inf handling; Report: JSON and HTML."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from opsdk.testing import CaseResult, Report, compare, get_standard


def test_statistics_of_a_comparison() -> None:
    e = np.array([1.0, 2.0, 4.0, 8.0], np.float32)
    a = np.array([1.0, 2.0, 4.5, 8.0], np.float32)
    c = compare(a, e, get_standard("allclose"))
    assert not c.passed
    assert c.max_abs_error == pytest.approx(0.5)
    assert c.max_rel_error == pytest.approx(0.125)
    assert c.mare == pytest.approx(0.125)
    assert c.mere == pytest.approx(0.125 / 4)
    assert c.n_failed == 1 and c.failing_share == pytest.approx(0.25)
    assert "FAILED under allclose" in c.summary()


def test_mismatches_give_index_inputs_expected_actual() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    bias = np.float32([10, 20, 30])
    e = x + bias
    a = e.copy()
    a[1, 2] += 1
    c = compare(a, e, get_standard("exact"), output="y", inputs=[("x", x), ("bias", bias)])
    [m] = c.mismatches
    assert m.index == (1, 2)
    assert m.inputs == {"x": 5.0, "bias": 30.0}
    assert (m.expected, m.actual, m.abs_error) == (35.0, 36.0, 1.0)


def test_mismatch_list_is_bounded_and_inputs_that_do_not_broadcast_are_omitted() -> None:
    e = np.zeros(100, np.float32)
    c = compare(e + 1, e, get_standard("exact"), inputs=[("w", np.zeros(7))])
    assert c.n_failed == 100 and len(c.mismatches) == 10
    assert c.mismatches[0].inputs == {"w": None}


def test_overflow_to_inf_matches_a_reference_that_rounds_to_inf() -> None:
    with np.errstate(over="ignore"):
        expected = np.array([70000.0, 1.0]).astype(np.float16)  # rounds to inf
    actual = np.array([np.inf, 1.0], np.float16)
    assert compare(actual, expected, get_standard("mere-mare")).passed
    finite = np.array([65504.0, 1.0], np.float16)
    c = compare(finite, expected, get_standard("mere-mare"))
    assert not c.passed and c.mismatches[0].index == (0,)


def test_empty_and_scalar_outputs() -> None:
    std = get_standard("mere-mare")
    assert compare(np.zeros((2, 0), np.float16), np.zeros((2, 0), np.float16), std).passed
    c = compare(np.float32(2.0).reshape(()), np.float32(1.0).reshape(()), std)
    assert not c.passed and c.mismatches[0].index == ()


def test_judge_dtype_selects_tolerances() -> None:
    e = np.array([1.0] * 100, np.float32)
    a = e * np.float32(1 + 2**-12)  # fine for float16's T, not for float32's
    assert not compare(a, e, get_standard("mere-mare")).passed
    assert compare(a, e, get_standard("mere-mare"), judge_dtype="float16").passed


def _result(passed: bool) -> CaseResult:
    e = np.linspace(1, 2, 50).astype(np.float32)
    a = e.copy()
    if not passed:
        a[3] = np.nan
        a[7] += 0.5
    c = compare(a, e, get_standard("allclose"), inputs=[("x", e)])
    return CaseResult("MyOp", "float32-small", "cpu", 0, {"alpha": 1.0}, ["float32[50]"],
                      [c], repro="pytest 'x.py::t[float32-small]' --opsdk-seed=0")


def test_report_json_holds_statistics_and_mismatches(tmp_path: Path) -> None:
    rep = Report([_result(True), _result(False)])
    path = rep.write(tmp_path / "r.json")
    d = json.loads(path.read_text())
    assert d["summary"] == {"cases": 2, "passed": 1, "failed": 1, "expected_failures": 0}
    bad = d["cases"][1]["outputs"][0]
    assert bad["nonfinite_mismatches"] == 1 and bad["n_failed"] == 2
    assert bad["mismatches"][0]["index"] == [3] and bad["mismatches"][0]["actual"] == "nan"
    assert bad["mismatches"][0]["inputs"]["x"] == pytest.approx(float(np.float32(1 + 3 / 49)))
    assert d["cases"][1]["repro"].startswith("pytest ")
    assert bad["checks"] == [
        {"name": "allclose", "passed": False,
         "detail": "1 elements beyond atol=1e-05 + rtol=1.3e-06*|e|"},
        {"name": "nonfinite", "passed": False,
         "detail": f"1 NaN where the reference has {float(np.float32(1 + 3 / 49))!r}"},
    ]
    assert bad["reason"] == "; ".join(f"{c['name']}: {c['detail']}" for c in bad["checks"])
    for k in ("max_abs_error", "max_rel_error", "mere", "mare", "failing_share"):
        assert k in bad


def test_report_html_embeds_plots(tmp_path: Path) -> None:
    rep = Report([_result(False), _result(True)])
    text = rep.write(tmp_path / "r.html").read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("data:image/png;base64,") == 2
    assert "FAILED" in text and "reproduce:" in text and "MERE" in text
    # The summary table names each rule; a failed one carries its reason as a tooltip.
    assert "<th>checks</th>" in text
    assert "<span class='bad' title='1 NaN where the reference has" in text
    assert "<span class='ok'>nonfinite</span>" in text


def test_report_counts_cases_the_operator_does_not_follow_apart(tmp_path: Path) -> None:
    """A failing case marked as not followed (a strict xfail of the harness) is an expected
    failure: not among ``failed``, shown as such in the JSON summary and the HTML table."""
    known = _result(False)
    known.expected_failure = "WebGPU-only expectation"
    rep = Report([_result(True), _result(False), known])
    assert rep.failed == [rep.cases[1]] and rep.expected_failures == [known]
    d = json.loads(rep.write(tmp_path / "r.json").read_text())
    assert d["summary"] == {"cases": 3, "passed": 1, "failed": 1, "expected_failures": 1}
    assert d["cases"][2]["expected_failure"] == "WebGPU-only expectation"
    text = rep.write(tmp_path / "r.html").read_text()
    assert "1 failed</b>, 1 failed as expected" in text
    assert "<span class='xf' title='WebGPU-only expectation'>expected fail</span>" in text


def test_report_rejects_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.json or \.html"):
        Report().write(tmp_path / "r.txt")
