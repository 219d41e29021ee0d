"""The HTML reports in a real headless Chromium: what a person sees.

The case report is written from real runs of the shipped Gelu operator (passing cases,
cases failing a too-strict standard, one the operator does not follow); the model report by
a real ``opsdk precision`` run. In the browser: the pass matrix's numbers equal the report's
counts (computed here from the JSON report and the generator's case names), the first case
row is the worst, a filter hides the rows it should (counted before and after, typed and
clicked as a person would), the bar chart has one bar per attributed node, longest first,
no request leaves the page (no CDN, no network) and no JavaScript error is logged.

Chromium comes from scripts/setup.d/45-browser.sh (Debian's chromium) and is driven over the
DevTools protocol on a pipe (tests/_helpers/browser.py); without it this module skips.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from opsdk.ascend.model_precision import HTML_REPORT_FILE, REPORT_FILE
from opsdk.cli import main
from opsdk.testing import Report
from tests._helpers.browser import Browser, Page, find_browser
from tests._helpers.reports import KIND_CLASS, attribution_model, gelu_results

EXE = find_browser()
pytestmark = pytest.mark.skipif(
    EXE is None, reason="no Chromium (chromium, chromium-browser or google-chrome on PATH, or "
    "$OPSDK_CHROMIUM): scripts/setup.d/45-browser.sh installs Debian's chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert EXE is not None
    with tempfile.TemporaryDirectory(prefix="opsdk-chromium-") as profile:
        b = Browser(EXE, Path(profile))
        try:
            yield b
        finally:
            b.close()  # by the id of the process it started, also when a test failed


def _open(browser: Browser, path: Path) -> Page:
    page = browser.open(path.resolve().as_uri())
    assert page.js("document.readyState") == "complete"
    return page


def _visible(page: Page, table: str) -> list[dict[str, str]]:
    """The data attributes of the rows of ``table`` a person sees (laid out boxes)."""
    return page.js(f"""Array.from(document.querySelectorAll('#{table} tbody tr'))
        .filter(function (r) {{ return r.getClientRects().length > 0; }})
        .map(function (r) {{ return Object.assign({{}}, r.dataset); }})""")


def _cells(page: Page) -> list[dict[str, Any]]:
    return page.js("""Array.from(document.querySelectorAll('td.cell[data-total]')).map(
        function (c) { return {set: JSON.parse(c.dataset.filterSet), text: c.innerText,
                               passed: +c.dataset.passed, failed: +c.dataset.failed,
                               expected: +c.dataset.expected, total: +c.dataset.total}; })""")


def _clean(page: Page) -> None:
    assert page.errors() == []
    assert {u.split(":", 1)[0] for u in page.requests()} <= {"file", "data"}


def _status(case: dict[str, Any]) -> str:
    return "pass" if case["passed"] else "xfail" if case["expected_failure"] else "fail"


def test_the_case_report_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    report = Report(gelu_results(), title="Gelu on cpu")
    data = json.loads(report.write(tmp_path / "r.json").read_text())
    page = _open(browser, report.write(tmp_path / "r.html"))
    cases = data["cases"]
    # the matrix: one cell per (method, dtype, shape class) with the report's counts; the
    # class is the generator's kind in the case id (float16-odd-defaults: odd)
    want: dict[tuple[str, str, str], Counter[str]] = {}
    for c in cases:
        dtype, kind = c["case"].split("-")[:2]
        key = (c["outputs"][0]["standard"], dtype, KIND_CLASS[kind])
        want.setdefault(key, Counter())[_status(c)] += 1
    seen = {(c["set"]["method"], c["set"]["dtype"], c["set"]["shape"]): c for c in _cells(page)}
    assert set(seen) == set(want)
    for key, n in want.items():
        cell = seen[key]
        assert (cell["passed"], cell["failed"], cell["expected"]) == (
            n["pass"], n["fail"], n["xfail"]), key
        shown = f"{n['pass']}/{n.total()}" + (f" ({n['xfail']} expected)" if n["xfail"] else "")
        assert cell["text"] == shown, key
    assert data["summary"]["failed"] == 2 and data["summary"]["expected_failures"] == 1
    # the first row is the worst case: the failure with the largest failing share
    rows = _visible(page, "cases")
    assert len(rows) == len(cases)  # one output each
    worst = max((c for c in cases if _status(c) == "fail"),
                key=lambda c: c["outputs"][0]["failing_share"])
    assert (rows[0]["name"], rows[0]["status"], rows[0]["method"]) == (
        worst["case"], "fail", worst["outputs"][0]["standard"])
    assert page.js("document.querySelector('#cases tbody tr td:nth-child(3)').innerText") \
        == "FAIL"
    # filters: status by the keyboard, the name by typing, a matrix cell by a click
    page.choose("select[data-filter=status]", "fail")
    rows = _visible(page, "cases")
    assert len(rows) == data["summary"]["failed"] and {r["status"] for r in rows} == {"fail"}
    assert page.js("document.querySelector('#case-filters .shown').innerText") == \
        f"{len(rows)} of {len(cases)} rows shown"
    page.click("#case-filters button.clear")
    assert len(_visible(page, "cases")) == len(cases)
    page.type("#case-filters input[data-filter=name]", "odd")
    assert sorted(r["name"] for r in _visible(page, "cases")) == sorted(
        c["case"] for c in cases if "odd" in c["case"])
    page.click("#case-filters button.clear")
    page.click("td.cell.some-fail")
    cell = next(c for c in _cells(page) if c["failed"])
    rows = _visible(page, "cases")
    assert len(rows) == cell["total"] and all(
        (r["method"], r["dtype"], r["shape"]) == (cell["set"]["method"], cell["set"]["dtype"],
                                                  cell["set"]["shape"]) for r in rows)
    _clean(page)


def test_the_model_report_in_a_browser(browser: Browser, tmp_path: Path) -> None:
    model = attribution_model(tmp_path / "m.onnx")
    out = tmp_path / "out"
    # a real run; the float16 ReduceSumSquare overflows, so an output fails (exit 1)
    assert main(["precision", str(model), "--precision-mode", "force_fp16", "--soc-version",
                 "Ascend910B3", "-o", str(out)]) == 1
    data = json.loads((out / REPORT_FILE).read_text())
    page = _open(browser, out / HTML_REPORT_FILE)
    attribution = data["attribution"]
    bars = page.js("""Array.from(document.querySelectorAll('#nodes tbody tr')).map(function (r) {
        var bar = r.querySelector('div.bar');
        return {name: r.dataset.name, op: r.dataset.op, width: bar.getBoundingClientRect().width,
                colour: getComputedStyle(bar).backgroundColor}; })""")
    # one bar per attributed node, in descending order of the error the JSON gives
    by_error = sorted(attribution, key=lambda a: (-float(a["error"]), a["index"]))
    assert [b["name"] for b in bars] == [a["node"] for a in by_error]
    widths = [b["width"] for b in bars]
    assert all(w1 >= w2 for w1, w2 in zip(widths, widths[1:], strict=False)), widths
    assert widths[-1] > 0 and widths[0] > widths[1]  # the overflow's inf is the longest
    assert math.isinf(float(by_error[0]["error"])) and by_error[0]["failing"] == ["total"]
    colours = [b["colour"] for b in bars]
    assert colours[0] != colours[1] and len(set(colours[1:])) == 1  # the failing one is red
    # the matrix: per op type and output, the nodes whose lowering alone passes
    for cell in _cells(page):
        mine = [a for a in attribution if a["cann_type"] == cell["set"]["op"]]
        passing = [a for a in mine if cell["set"]["output"] not in a["failing"]]
        assert (cell["passed"], cell["total"]) == (len(passing), len(mine)), cell
    assert len(_cells(page)) == len({a["cann_type"] for a in attribution}) * len(data["outputs"])
    # the op-type filter keeps that type's bars
    page.choose("select[data-filter=op]", "Mul")
    assert sorted(r["name"] for r in _visible(page, "nodes")) == sorted(
        a["node"] for a in attribution if a["cann_type"] == "Mul")
    page.click("#node-filters button.clear")
    page.choose("select[data-filter=status]", "fail")
    assert [r["name"] for r in _visible(page, "nodes")] == ["energy"]
    # the outputs, worst first
    assert page.js("Array.from(document.querySelectorAll('#outputs tbody tr'))"
                   ".map(function (r) { return r.dataset.name; })") == ["total", "p"]
    _clean(page)
