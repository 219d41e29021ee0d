"""``torch.library.opcheck`` of an operator on samples generated from its spec.

Example:
    >>> report = opcheck("ThresholdedRelu")  # doctest: +SKIP
    >>> report.ok, report.results[0].tests["test_faketensor"]  # doctest: +SKIP
    (True, 'SUCCESS')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..spec import OpSpec
from ._autograd import gradient_source

__all__ = ["OpcheckResult", "OpcheckReport", "opcheck", "sample_inputs"]


@dataclass(frozen=True)
class OpcheckResult:
    """opcheck's verdict on one sample: test name -> 'SUCCESS' or the error."""

    case: str
    tests: dict[str, str]

    @property
    def ok(self) -> bool:
        return all(v == "SUCCESS" for v in self.tests.values())


@dataclass
class OpcheckReport:
    """Every sample's opcheck results for one operator."""

    op: str
    results: list[OpcheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def __str__(self) -> str:
        lines = [f"{self.op}: torch.library.opcheck "
                 f"{'passed' if self.ok else 'FAILED'} on {len(self.results)} sample(s)"]
        for r in self.results:
            bad = {k: v for k, v in r.tests.items() if v != "SUCCESS"}
            lines.append(f"  {r.case}: " + ("ok" if not bad else
                                            "; ".join(f"{k}: {v}" for k, v in bad.items())))
        return "\n".join(lines)


def sample_inputs(spec: OpSpec, seed: int = 0) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """(case id, torch inputs, attributes): one sample per dtype combination of the spec."""
    import torch

    from ..testing._cases import build_cases, make_inputs, sample_cases
    from ._convert import from_numpy

    grad = gradient_source(spec) != "none"
    out = []
    for case in sample_cases(build_cases(spec)):
        tensors = []
        for a in make_inputs(spec, case, seed):
            t = None if a is None else from_numpy(a.copy())
            if t is not None and grad and t.dtype in (torch.float32, torch.float64):
                t.requires_grad_(True)
            tensors.append(t)
        out.append((case.id, tensors, dict(case.attrs)))
    return out


def opcheck(name: str, seed: int = 0) -> OpcheckReport:
    """Run ``torch.library.opcheck`` (schema, fake, autograd registration, AOT dispatch with
    static and dynamic shapes) on one sample per dtype combination; never raises on a
    failed test, the report holds it."""
    import torch

    from ._register import register

    reg = register(name)
    report = OpcheckReport(reg.spec.name)
    for case, args, attrs in sample_inputs(reg.spec, seed):
        try:
            tests = torch.library.opcheck(reg.overload, tuple(args), attrs,
                                          raise_exception=False)
        except Exception as e:  # opcheck itself failed (e.g. the sample was rejected)
            tests = {"opcheck": f"{type(e).__name__}: {e}"}
        report.results.append(OpcheckResult(case, {k: _verdict(v) for k, v in tests.items()}))
    return report


def _verdict(value: Any) -> str:
    if value == "SUCCESS":
        return "SUCCESS"
    return f"{type(value).__name__}: {str(value).splitlines()[0] if str(value) else ''}"
