"""Reports of many cases: JSON for CI; HTML for people (the summary view: pass matrix,
worst case first, filters; then per case matplotlib plots)."""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._paths import make_writable_dir
from ._compare import Comparison
from ._html import STATUS_LABELS, data_row, data_table, esc, filter_form, matrix_table, page
from ._runner import CaseResult
from ._standards import tiny
from ._summary import (
    NO_METHOD,
    SHAPE_CLASSES,
    case_dtype,
    case_methods,
    case_status,
    pass_matrix,
    shape_class,
    worst_first,
)

REPORT_SUFFIXES = (".json", ".html", ".htm")

__all__ = ["Report"]

#: At most this many cases get plots in an HTML report (failing cases first).
MAX_PLOTS = 60
#: Passing elements drawn in a failing-element plot (all failing ones are drawn).
_MAX_POINTS = 4000


@dataclass
class Report:
    """A list of :class:`CaseResult` that writes itself as JSON or HTML.

    Example:
        >>> r = Report()
        >>> r.to_dict()["summary"]
        {'cases': 0, 'passed': 0, 'failed': 0, 'expected_failures': 0}
    """

    cases: list[CaseResult] = field(default_factory=list)
    title: str = "opsdk numerical validation"

    def add(self, result: CaseResult) -> None:
        self.cases.append(result)

    def extend(self, results: Iterable[CaseResult]) -> None:
        self.cases.extend(results)

    @property
    def failed(self) -> list[CaseResult]:
        """The cases that failed, less those the operator deliberately does not follow."""
        return [c for c in self.cases if not c.passed and not c.expected_failure]

    @property
    def expected_failures(self) -> list[CaseResult]:
        """Failing cases the operator does not follow, by its own account (strict xfails)."""
        return [c for c in self.cases if not c.passed and c.expected_failure]

    def to_dict(self) -> dict[str, Any]:
        n_fail, n_expected = len(self.failed), len(self.expected_failures)
        return {
            "title": self.title,
            "summary": {"cases": len(self.cases),
                        "passed": len(self.cases) - n_fail - n_expected,
                        "failed": n_fail, "expected_failures": n_expected},
            "cases": [c.as_dict() for c in self.cases],
        }

    def write(self, path: str | Path) -> Path:
        """Write ``.json`` or ``.html`` (chosen by the suffix); return the path."""
        from .._written import write_output

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix.lower() == ".json":
            text = json.dumps(self.to_dict(), indent=1, default=_jsonable) + "\n"
        elif p.suffix.lower() in (".html", ".htm"):
            text = self.to_html()
        else:
            raise ValueError(f"report {p}: use a .json or .html file name")
        # opsdk's one writer: no symlink, and only a report opsdk wrote is replaced
        return write_output(p, text, flag="--report", replace_own=True)

    @staticmethod
    def check_path(path: str | Path) -> None:
        """Raise ValueError now if a report could not be written to ``path`` at the end.

        Example:
            >>> Report.check_path("r.txt")
            Traceback (most recent call last):
            ...
            ValueError: --report r.txt: use a file name ending in .json or .html
        """
        p = Path(path)
        if p.suffix.lower() not in REPORT_SUFFIXES:
            raise ValueError(f"--report {p}: use a file name ending in .json or .html")
        if p.is_dir():
            raise ValueError(f"--report {p}: it is a folder; pass a file path")
        try:
            make_writable_dir(p.parent)
        except OSError as e:
            raise ValueError(
                f"--report {p}: cannot write in {p.parent} ({e.strerror or e}); pass a path in "
                "a folder you can write"
            ) from None
        from .._written import check_output

        try:  # a symlink, or a file opsdk did not write: refused before the run
            check_output(p, flag="--report", replace_own=True)
        except OSError as e:
            raise ValueError(str(e)) from None

    def to_html(self) -> str:
        """A self-contained HTML page: the summary line; the pass matrix (dtype x shape
        class, one table per comparison method; a click on a cell filters the cases); the
        case table, worst case first, with filters (dtype, shape class, method, status,
        case name); then per case its statistics, mismatches, an error histogram and a
        failing-element plot (embedded PNGs). See :mod:`opsdk.testing._summary` for the
        shape classes and the order."""
        d = self.to_dict()["summary"]
        parts = [
            f"<p>{d['cases']} cases: {d['passed']} passed, "
            f"<b class='{'bad' if d['failed'] else 'ok'}'>{d['failed']} failed</b>"
            + (f", {d['expected_failures']} failed as expected (cases the operator does not "
               "follow)" if d["expected_failures"] else "")
            + "</p>"
        ]
        ordered = worst_first(self.cases)
        parts.append(_matrix_html(self.cases))
        parts.append(_filters_html(self.cases))
        parts.append(_summary_table(ordered))
        for i, case in enumerate(ordered):
            parts.append(_case_html(case, plots=i < MAX_PLOTS))
        if len(ordered) > MAX_PLOTS:
            parts.append(f"<p>plots shown for the first {MAX_PLOTS} cases only</p>")
        return page(self.title, parts, "opsdk numerical validation")


def _jsonable(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


_FORM, _TABLE = "case-filters", "cases"


def _matrix_html(cases: list[CaseResult]) -> str:
    """The pass matrix: per method, dtype rows x shape-class columns of passed/total."""
    if not cases:
        return ""
    out = ["<h2 id='matrix'>Pass matrix</h2><p>cases passed / cases, per dtype (rows), "
           "shape class (columns) and comparison method; expected failures apart; a click on "
           "a cell shows its cases</p>"]
    for method, cells in sorted(pass_matrix(cases).items()):
        dtypes = sorted({k[0] for k in cells})
        shapes = [s for s in SHAPE_CLASSES if any(k[1] == s for k in cells)]
        out.append(f"<h3>method {esc(method)}</h3>")
        out.append(matrix_table(dtypes, shapes, cells, ("dtype", "shape"), _FORM,
                                {"method": method}, corner="dtype / shape"))
    return "\n".join(out)


def _filters_html(cases: list[CaseResult]) -> str:
    dtypes = sorted({case_dtype(c) for c in cases})
    shapes = [s for s in SHAPE_CLASSES if any(shape_class(c) == s for c in cases)]
    methods = sorted({m for c in cases for m in case_methods(c)})
    statuses = [s for s in STATUS_LABELS if any(case_status(c) == s for c in cases)]
    return "<h2 id='case-list'>Cases, worst first</h2>" + filter_form(
        _FORM, _TABLE, [("dtype", "dtype", dtypes), ("shape", "shape class", shapes),
                        ("method", "method", methods), ("status", "status", statuses)],
        ("name", "case name contains"), STATUS_LABELS)


_HEADERS = ("case", "device", "result", "output", "standard", "checks", "max abs", "max rel",
            "MERE", "MARE", "failing")


def _summary_table(cases: list[CaseResult]) -> str:
    """One row per case and output, carrying what the filters read."""
    rows = []
    for c in cases:
        res = ("<span class='ok'>pass</span>" if c.passed else
               f"<span class='xf' title='{esc(c.expected_failure)}'>expected fail</span>"
               if c.expected_failure else "<span class='bad'>FAIL</span>")
        where = {"case": f"{c.device}:{c.case}", "name": c.case, "dtype": case_dtype(c),
                 "shape": shape_class(c), "status": case_status(c)}
        head = [f"<a href='#{_anchor(c)}'>{html.escape(c.case)}</a>", c.device, res]
        if not c.comparisons:
            problems = "<td colspan=8>" + html.escape("; ".join(c.problems)) + "</td>"
            rows.append(data_row({**where, "method": NO_METHOD}, [*head, problems]))
        for cmp in c.comparisons:
            rows.append(data_row({**where, "method": cmp.standard}, [
                *head, cmp.output, cmp.standard, _checks_cell(cmp), f"{cmp.max_abs_error:.3g}",
                f"{cmp.max_rel_error:.3g}", f"{cmp.mere:.3g}", f"{cmp.mare:.3g}",
                f"{cmp.failing_share:.2%}"]))
    return data_table(_TABLE, _HEADERS, rows)


def _checks_cell(cmp: Comparison) -> str:
    """Each rule's name, green when it passed, red with its reason as a tooltip when not."""
    return " ".join(
        f"<span class='ok'>{html.escape(k.name)}</span>" if k.passed else
        f"<span class='bad' title='{html.escape(k.detail, quote=True)}'>"
        f"{html.escape(k.name)}</span>"
        for k in cmp.checks
    )


def _anchor(c: CaseResult) -> str:
    return "case-" + "".join(ch if ch.isalnum() else "-" for ch in f"{c.device}-{c.case}")


def _case_html(c: CaseResult, plots: bool) -> str:
    out = [f"<h2 id='{_anchor(c)}'>{html.escape(c.op)} [{html.escape(c.case)}] on {c.device}: "
           f"{'passed' if c.passed else '<span class=bad>FAILED</span>'}</h2>"]
    out.append(f"<pre>{html.escape(c.summary())}</pre>")
    for cmp in c.comparisons:
        if plots and cmp.actual is not None and cmp.size:
            out.append(f"<img alt='error plots of {html.escape(cmp.output)}' "
                       f"src='data:image/png;base64,{_plot(cmp)}'>")
    return "\n".join(out)


def _plot(cmp: Comparison) -> str:
    """PNG (base64) with the relative-error histogram and the failing-element plot."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    assert cmp.actual is not None and cmp.expected is not None and cmp.failed_mask is not None
    a = cmp.actual.astype(np.float64).reshape(-1)
    e = cmp.expected.astype(np.float64).reshape(-1)
    failed = cmp.failed_mask.reshape(-1)
    with np.errstate(all="ignore"):
        rel = np.abs(a - e) / np.maximum(np.abs(e), tiny(cmp.dtype))
    finite = np.isfinite(rel)
    fig = Figure(figsize=(10, 3.2))
    ax1, ax2 = fig.subplots(1, 2)
    logs = np.log10(np.maximum(rel[finite], 1e-12))
    ax1.hist(logs, bins=40, color="#4477aa")
    ax1.set_xlabel("log10(relative error)  (1e-12 = exact)")
    ax1.set_ylabel("elements")
    ax1.set_title(f"{cmp.output}: error histogram ({cmp.standard})")
    idx = np.arange(a.size)
    ok = finite & ~failed
    if ok.sum() > _MAX_POINTS:  # plot every failing element, a sample of passing ones
        keep = np.zeros_like(ok)
        keep[np.linspace(0, a.size - 1, _MAX_POINTS).astype(np.int64)] = True
        ok &= keep
    lg = np.log10(np.maximum(np.where(finite, rel, 1.0), 1e-12))
    ax2.scatter(idx[ok], lg[ok], s=2, color="#999999", label="pass")
    bad = finite & failed
    ax2.scatter(idx[bad], lg[bad], s=6, color="#cc3311", label="fail")
    nf = failed & ~finite
    if nf.any():
        ax2.scatter(idx[nf], np.zeros(int(nf.sum())), s=12, marker="x", color="black",
                    label="NaN/Inf mismatch (drawn at 0)")
    ax2.set_xlabel("flat element index")
    ax2.set_ylabel("log10(relative error)")
    ax2.set_title(f"failing elements: {cmp.n_failed}/{cmp.size}")
    ax2.legend(loc="upper right", fontsize=7)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.17, top=0.9, wspace=0.25)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72)
    return base64.b64encode(buf.getvalue()).decode()
