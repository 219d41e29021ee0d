"""``precision_report.html``: the model report for a person, beside the JSON.

The same summary style as the per-operator report (:mod:`opsdk.testing._html`): the verdict
line; the outputs, worst first; a pass matrix of op type (rows) x output (columns), each
cell the nodes of that type whose lowering alone keeps that output passing, out of the
type's nodes; and the per-node error bar chart: one bar per attributed node, the error it
adds when it alone is lowered (1 - cosine, the worst over the outputs) on a log scale,
largest first, red when it alone fails an output, with filters (op type, status, name).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...testing._html import (
    Counts,
    bar_width,
    data_row,
    data_table,
    esc,
    filter_form,
    matrix_table,
    page,
)
from ._assign import summary
from ._engine import Attribution, OutputResult, ReportFields

__all__ = ["report_html", "bar_order"]

_FORM, _TABLE = "node-filters", "nodes"
_NODE_STATUS = {"fail": "fails an output alone", "pass": "passes alone"}


def bar_order(attribution: Sequence[Attribution]) -> list[Attribution]:
    """The attribution ordered as the chart draws it: largest error first (an infinite one
    first of all), then graph order."""
    return sorted(attribution, key=lambda a: (-_error(a), a.index))


def _error(a: Attribution) -> float:
    return a.error if math.isfinite(a.error) else math.inf


def _js_num(v: float) -> str:
    """``v`` as JavaScript's parseFloat reads it (``Infinity``, not ``inf``)."""
    return "Infinity" if v == math.inf else repr(v)


def _num(v: float) -> str:
    return f"{v:.3g}"


def _outputs_html(outputs: Sequence[OutputResult], after: dict[str, OutputResult]) -> str:
    ordered = sorted(outputs, key=lambda r: (r.passed, -(1 - r.cosine) if math.isfinite(
        r.cosine) else -math.inf, -r.max_rel, r.name))
    headers = ["output", "verdict", "max abs", "max rel", "cosine", "max ulp", "reason",
               *(["after the fix"] if after else [])]
    rows = []
    for r in ordered:
        fixed = after.get(r.name)
        tail = [] if not after else ["&ndash;" if fixed is None else _verdict(fixed.passed)]
        rows.append(data_row({"name": r.name, "status": "pass" if r.passed else "fail"}, [
            esc(r.name), _verdict(r.passed), _num(r.max_abs), _num(r.max_rel),
            f"{r.cosine:.6f}", f"{r.max_ulp:g}", esc(r.reason), *tail]))
    return "<h2>Outputs, worst first</h2>" + data_table("outputs", headers, rows)


def _verdict(passed: bool) -> str:
    return "<span class='ok'>pass</span>" if passed else "<span class='bad'>FAIL</span>"


def _matrix_html(report: ReportFields) -> str:
    cells: dict[tuple[str, str], Counts] = {}
    outputs = [r.name for r in report.outputs]
    for a in report.attribution:
        for o in outputs:
            cells.setdefault((a.cann_type, o), Counts()).add(
                "fail" if o in a.failing else "pass")
    types = sorted({a.cann_type for a in report.attribution})
    return ("<h2 id='matrix'>Pass matrix</h2><p>nodes whose lowering alone keeps the output "
            f"passing ({esc(report.standard)}) / nodes, per op type (rows) and output "
            "(columns); a click on a cell shows that type's nodes</p>"
            + matrix_table(types, outputs, cells, ("op", "output"), _FORM,
                           corner="op type / output"))


def _bars_html(attribution: Sequence[Attribution]) -> str:
    ordered = bar_order(attribution)
    finite = [_error(a) for a in ordered if 0 < _error(a) < math.inf]
    hi = max(finite, default=1.0)
    lo = min(finite, default=hi) / 10
    # an infinite error (an overflow) gets the whole width, the finite ones stay below it
    top = 90.0 if any(_error(a) == math.inf for a in ordered) else 100.0
    types = sorted({a.cann_type for a in ordered})
    intro = ("<h2 id='bars'>Error each node adds when it alone is lowered</h2>"
             "<p>1 - cosine similarity, the worst over the outputs, log scale; largest first; "
             "red: lowering that node alone fails an output</p>"
             + filter_form(_FORM, _TABLE, [("op", "op type", types),
                                           ("status", "status", list(_NODE_STATUS))],
                           ("name", "node name contains"), _NODE_STATUS))
    body = []
    for rank, a in enumerate(ordered, 1):
        width = bar_width(_error(a), lo, hi, top)
        name = a.node or f"#{a.index}"
        bar = (f"<td class='barcell'><div class='bar{' bad' if a.failing else ''}' "
               f"style='width:{width}%' title='{esc(name)}: {_num(a.error)}'></div></td>")
        body.append(data_row(
            {"name": name, "op": a.cann_type, "status": "fail" if a.failing else "pass",
             "error": _js_num(_error(a))},
            [str(rank), esc(name), f"{esc(a.op_type)} &rarr; {esc(a.cann_type)}", bar,
             _num(a.error), _num(a.max_rel), esc(", ".join(a.failing))]))
    headers = ["#", "node", "op type", "error (log scale)", "1 - cos", "max rel", "fails"]
    return intro + "\n" + data_table(_TABLE, headers, body)


def report_html(report: ReportFields) -> str:
    """The report as one self-contained HTML page (no timings: the same run, the same page).

    Example:
        >>> from opsdk.ascend.model_precision import analyze_model
        >>> r = analyze_model("m.onnx", "force_fp16")  # doctest: +SKIP
        >>> report_html(r).startswith("<!DOCTYPE html>")  # doctest: +SKIP
        True
    """
    n_fail = len(report.failing)
    c = summary(report.nodes)
    parts = [
        f"<p>{len(report.outputs)} outputs: {len(report.outputs) - n_fail} passed, "
        f"<b class='{'bad' if n_fail else 'ok'}'>{n_fail} failed</b> under "
        f"{esc(report.mode)} on {esc(report.soc)}, judged by {esc(report.standard)} against "
        f"the float32 model; {c.get('low', 0)} nodes in {esc(report.low)}, "
        f"{c.get('low-in', 0)} with {esc(report.low)} inputs, {c.get('float32', 0)} in "
        f"float32; overflow {esc(report.overflow)}; {report.runs} runs</p>"]
    if report.folded:
        parts.append(f"<p>ATC's Conv+BatchNorm fusion first: {len(report.folded)} "
                     "BatchNormalization nodes folded into their Conv</p>")
    after = {r.name: r for r in report.fix.after} if report.fix else {}
    parts.append(_outputs_html(report.outputs, after))
    if report.fix:
        f = report.fix
        kept = ", ".join(f.kept) if f.kept else "nothing (every output passes)"
        parts.append(f"<p>fix: keep in float32 ({esc(f.by)}): {esc(kept)}; {f.runs} runs "
                     f"(bound {f.bound}); {len(f.failing_after)} output(s) failing after</p>")
    if report.attribution:
        parts += [_matrix_html(report), _bars_html(report.attribution)]
    else:
        parts.append("<p>no per-node attribution (no node the mode lowers, or "
                     "--no-attribution)</p>")
    title = f"opsdk precision: {report.model} under {report.mode}"
    return page(title, parts, "opsdk precision")
