"""The HTML reports' summary view without a browser: shape classes, the worst-first order,
the pass matrix's counts, the filters' options, the model report's bar chart, and a golden
of a small page (tests/testing/test_report_browser.py opens real reports in headless Chromium)."""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.model_precision import HTML_REPORT_FILE, REPORT_FILE, analyze_model
from opsdk.testing import CaseResult, Report, compare, get_standard
from opsdk.testing._cases import SHAPE_SUITE
from opsdk.testing._summary import case_dtype, pass_matrix, shape_class, worst_first
from tests._helpers.golden import check_golden
from tests._helpers.reports import attribution_model


class _Tags(HTMLParser):
    """Every start tag as (tag, attributes), in document order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def find(self, tag: str, **want: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in want.items())]


def _case(name: str, inputs: list[str], shift: float = 0.0, standard: str = "allclose",
          expected_failure: str = "") -> CaseResult:
    """A case whose output is compared for real: ``shift`` added to 1 in 4 elements."""
    e = np.linspace(1, 2, 8).astype(np.float32)
    a = e.copy()
    a[::4] += np.float32(shift)
    c = compare(a, e, get_standard(standard), keep_arrays=False)
    return CaseResult("MyOp", name, "cpu", 0, {}, inputs, [c], expected_failure=expected_failure)


SUITE_CLASS = {"scalar": "scalar", "empty": "empty", "empty3d": "empty", "one": "odd",
               "odd": "odd", "small": "small", "large": "large"}


@pytest.mark.parametrize("kind", sorted(SHAPE_SUITE))
def test_a_generated_shape_lands_in_the_class_its_name_says(kind: str) -> None:
    c = CaseResult("MyOp", f"float32-{kind}", "cpu", 0, {}, [f"float32{list(SHAPE_SUITE[kind])}"])
    assert shape_class(c) == SUITE_CLASS[kind]


def test_shape_class_and_dtype_of_mixed_inputs() -> None:
    # the largest input decides; a non-contiguous or absent input is read as it is described
    c = CaseResult("MyOp", "x", "cpu", 0, {}, ["float16[4, 33] non-contiguous", "absent",
                                              "int64[3]", "float16[2]"])
    assert (case_dtype(c), shape_class(c)) == ("float16-int64", "odd")
    assert shape_class(CaseResult("MyOp", "y", "cpu", 0, {}, ["float32[5, 6]", "float32[]"])) \
        == "small"
    # an empty input makes the case empty whatever the others are
    assert shape_class(CaseResult("MyOp", "z", "cpu", 0, {}, ["float32[256, 1031]",
                                                              "float32[0]"])) == "empty"


def test_worst_first_orders_by_status_then_failing_share() -> None:
    half = _case("half", ["float32[8]"], 1.0)  # 2 of 8 beyond
    crash = CaseResult("MyOp", "crash", "cpu", 0, {}, ["float32[8]"], problems=["KernelCrash"])
    known = _case("known", ["float32[8]"], 1.0, expected_failure="not followed")
    close = _case("close", ["float32[8]"], 1e-6)  # passes, but closer to failing than exact
    exact = _case("exact", ["float32[8]"])
    assert [c.case for c in worst_first([exact, close, known, half, crash])] == [
        "crash", "half", "known", "close", "exact"]


def test_the_pass_matrix_counts_expected_failures_apart() -> None:
    cases = [_case("a", ["float16[2, 4]"]), _case("b", ["float16[2, 4]"], 1.0),
             _case("c", ["float16[2, 4]"], 1.0, expected_failure="x"),
             _case("d", ["float16[17]"], 1.0, standard="exact")]
    m = pass_matrix(cases)
    cell = m["allclose"][("float16", "small")]
    assert (cell.passed, cell.failed, cell.expected, cell.text) == (1, 1, 1, "1/3 (1 expected)")
    assert m["exact"][("float16", "odd")].text == "0/1" and set(m) == {"allclose", "exact"}


def _summary_report() -> Report:
    return Report([_case("float32-small", ["float32[2, 4]"]),
                   _case("float32-odd", ["float32[17]"], 1.0),
                   _case("float16-small", ["float16[2, 4]"], 1.0, expected_failure="known"),
                   _case("float16-scalar", ["float16[]"], standard="ulp:2")],
                  title="summary view")


def test_the_case_page_holds_the_matrix_the_order_and_the_filters() -> None:
    text = _summary_report().to_html()
    page = _Tags(text)
    cells = {(json.loads(a["data-filter-set"])["method"], a["data-dtype"], a["data-shape"]):
             (a["data-passed"], a["data-failed"], a["data-expected"], a["data-total"])
             for a in page.find("td") if "data-filter-set" in a}
    assert cells == {("allclose", "float32", "small"): ("1", "0", "0", "1"),
                     ("allclose", "float32", "odd"): ("0", "1", "0", "1"),
                     ("allclose", "float16", "small"): ("0", "0", "1", "1"),
                     ("ulp", "float16", "scalar"): ("1", "0", "0", "1")}
    rows = [a for a in page.find("tr") if "data-status" in a]
    assert [(r["data-name"], r["data-status"]) for r in rows] == [
        ("float32-odd", "fail"), ("float16-small", "xfail"), ("float16-scalar", "pass"),
        ("float32-small", "pass")]  # equal errors: by case id
    options = {s["data-filter"]: [o["value"] for o in page.find("option")] for s in
               page.find("select")}
    assert set(options) == {"dtype", "shape", "method", "status"}
    assert page.find("input", type="search")[0]["data-filter"] == "name"
    # self-contained: no script, style or image from anywhere else
    assert not [a for _t, a in page.tags if any(a.get(k, "").startswith(("http:", "https:", "//"))
                                                for k in ("src", "href"))]


def test_the_case_page_against_its_golden() -> None:
    """The markup of a plot-free report's page; its style sheet and script (opsdk/testing/
    _html.py) are left out here and checked at work in tests/testing/test_report_browser.py."""
    text = _summary_report().to_html()
    text = re.sub(r"<style>.*?</style>", "<style>(_CSS)</style>", text, count=1, flags=re.S)
    text = re.sub(r"<script>.*?</script>", "<script>(_JS)</script>", text, count=1, flags=re.S)
    check_golden("report/summary.html", text)


def test_the_model_page_has_one_bar_per_node_largest_first(tmp_path: Path) -> None:
    model = attribution_model(tmp_path / "m.onnx")
    r = analyze_model(model, "force_fp16", soc="Ascend910B3", output_dir=tmp_path / "out")
    text = (tmp_path / "out" / HTML_REPORT_FILE).read_text()
    assert text == r.to_html() and (tmp_path / "out" / REPORT_FILE).is_file()
    page = _Tags(text)
    rows = [a for a in page.find("tr") if "data-error" in a]
    assert sorted(a["data-name"] for a in rows) == sorted(a.node for a in r.attribution)
    errors = [float(a["data-error"]) for a in rows]
    assert errors == sorted(errors, reverse=True) and errors[0] == math.inf
    assert rows[0]["data-name"] == "energy" and rows[0]["data-status"] == "fail"
    widths = [float(a["style"].removeprefix("width:").removesuffix("%"))
              for a in page.find("div") if "bar" in a.get("class", "").split()]
    assert len(widths) == len(rows) and widths == sorted(widths, reverse=True)
    assert widths[0] == 100.0 and widths[1] < 100.0  # the overflow stands out
    fails = page.find("td", **{"data-op": "ReduceSumSquare", "data-output": "total"})
    assert fails[0]["data-failed"] == "1" and fails[0]["data-total"] == "1"
    # the same run gives the same page
    again = analyze_model(model, "force_fp16", soc="Ascend910B3")
    assert again.to_html() == text
