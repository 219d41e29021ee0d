"""The summary view of a report's cases: dtype, shape class, method, status, worst first.

A case's **dtype** is its present inputs' dtypes, each once, joined by ``-`` as case ids
spell them (``float16``, ``float16-int64``). Its **shape class** comes from the largest
present input (most elements), in this order, and is named as the case generator names its
shape suite (``SHAPE_SUITE``), so a generated case lands in the class its id says:

========  ===================================================================
scalar    every input has rank 0
empty     an input has no elements (``(0,)``, ``(2, 0, 3)``)
large     65536 elements or more (the suite's ``(256, 1031)``): the kernel tiles
odd       an odd last dimension (``(1,)``, ``(17,)``, ``(4, 33)``): a tail no pair fills
small     anything else (``(2, 3, 4)``, broadcasting, layouts, edge values)
========  ===================================================================

A case without inputs is classed by its outputs. Its **method** is the comparison method
(standard) each output was judged by; a case that never reached a comparison (a crash, a
wrong output shape) has the method ``none``. Its **status** is ``pass``, ``fail``, or
``xfail`` (a case the operator deliberately does not follow: counted apart).

Example:
    >>> from opsdk.testing._runner import CaseResult
    >>> c = CaseResult("Neg", "float16-odd", "cpu", 0, {}, ["float16[17]"])
    >>> case_dtype(c), shape_class(c), case_methods(c), case_status(c)
    ('float16', 'odd', ['none'], 'pass')
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ._html import Counts
from ._runner import CaseResult, parse_described

__all__ = ["SHAPE_CLASSES", "LARGE_ELEMENTS", "NO_METHOD", "case_dtype", "shape_class",
           "case_methods", "case_status", "severity", "worst_first", "pass_matrix"]

#: The shape classes, in the order a pass matrix shows them.
SHAPE_CLASSES = ("scalar", "empty", "odd", "small", "large")
#: A case whose largest input has this many elements or more is ``large``.
LARGE_ELEMENTS = 1 << 16
#: The method of a case that never reached a comparison.
NO_METHOD = "none"

_Shape = tuple[int, ...]


def _present(c: CaseResult) -> list[tuple[str, _Shape]]:
    found = [parse_described(t) for t in c.inputs]
    return [f for f in found if f is not None]


def case_dtype(c: CaseResult) -> str:
    """The case's input dtypes, each once, joined by ``-`` (its outputs' when it has no
    inputs; ``none`` when neither is known)."""
    dts = [d for d, _ in _present(c)] or [cmp.dtype for cmp in c.comparisons]
    return "-".join(dict.fromkeys(dts)) or "none"


def shape_class(c: CaseResult) -> str:
    """``scalar``, ``empty``, ``odd``, ``small`` or ``large`` (see the module's table)."""
    shapes = [s for _, s in _present(c)] or [cmp.shape for cmp in c.comparisons]
    if not shapes:
        return "scalar"
    if any(math.prod(s) == 0 for s in shapes):
        return "empty"
    big = max(shapes, key=math.prod)
    if not big:
        return "scalar"
    if math.prod(big) >= LARGE_ELEMENTS:
        return "large"
    return "odd" if big[-1] % 2 else "small"


def case_methods(c: CaseResult) -> list[str]:
    """The methods (standards) the case's outputs were judged by, each once."""
    return list(dict.fromkeys(cmp.standard for cmp in c.comparisons)) or [NO_METHOD]


def case_status(c: CaseResult) -> str:
    """``pass``, ``fail``, or ``xfail`` (failed, and the operator says it does not follow
    the case)."""
    if c.passed:
        return "pass"
    return "xfail" if c.expected_failure else "fail"


def _finite_or_inf(v: float) -> float:
    return v if math.isfinite(v) else math.inf


def severity(c: CaseResult) -> tuple[int, float, float, str, str]:
    """Sort key, worst first: failures, then expected failures, then passes; within each,
    the largest failing share (1 for a case that never reached a comparison), then the
    largest relative error, then the case id."""
    rank = {"fail": 0, "xfail": 1, "pass": 2}[case_status(c)]
    share = 1.0 if c.problems else max((k.failing_share for k in c.comparisons), default=0.0)
    err = max((_finite_or_inf(k.max_rel_error) for k in c.comparisons), default=0.0)
    return (rank, -share, -err, c.case, c.device)


def worst_first(cases: Sequence[CaseResult]) -> list[CaseResult]:
    """``cases`` ordered by :func:`severity`."""
    return sorted(cases, key=severity)


def pass_matrix(cases: Sequence[CaseResult]) -> dict[str, dict[tuple[str, str], Counts]]:
    """method -> (dtype, shape class) -> counts of cases by status. A case judged by two
    methods counts under each.

    Example:
        >>> from opsdk.testing._runner import CaseResult
        >>> m = pass_matrix([CaseResult("Neg", "a", "cpu", 0, {}, ["float32[2, 4]"])])
        >>> m["none"][("float32", "small")].text
        '1/1'
    """
    out: dict[str, dict[tuple[str, str], Counts]] = {}
    for c in cases:
        key, status = (case_dtype(c), shape_class(c)), case_status(c)
        for method in case_methods(c):
            out.setdefault(method, {}).setdefault(key, Counts()).add(status)
    return out
