"""``torch.library.opcheck`` of an operator on samples generated from its spec.

Example:
    >>> report = opcheck("ThresholdedRelu")  # doctest: +SKIP
    >>> report.ok, report.results[0].tests["test_faketensor"]  # doctest: +SKIP
    (True, 'SUCCESS')
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from ..spec import OpSpec
from ._autograd import gradient_source

__all__ = ["OpcheckResult", "OpcheckReport", "opcheck", "sample_inputs", "GradcheckResult",
           "gradcheck", "FLOAT32_TOLERANCES"]


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

    from ..testing import build_cases, make_inputs, sample_cases
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


@dataclass(frozen=True)
class GradcheckResult:
    """``torch.autograd.gradcheck`` of one operator: passed (None: no backward to check)."""

    op: str
    source: str  # 'backward', 'decomposition' or 'none'
    dtype: str
    passed: bool | None
    detail: str = ""

    def __str__(self) -> str:
        verdict = {True: "passed", False: "FAILED", None: "not run"}[self.passed]
        return (f"{self.op}: gradcheck {verdict} ({self.source} gradient, {self.dtype})"
                + (f": {self.detail}" if self.detail else ""))


#: gradcheck's tolerances when the kernel has no float64: central differences in float32
FLOAT32_TOLERANCES = {"eps": 1e-3, "atol": 1e-2, "rtol": 1e-2}


def gradcheck(name: str, seed: int = 0, *, fast_mode: bool = True) -> GradcheckResult:
    """``torch.autograd.gradcheck`` of the operator's backward against its kernel: in float64
    when the kernel has it, else in float32 with :data:`FLOAT32_TOLERANCES`; ``fast_mode``
    (torch's) compares random projections of the Jacobians instead of every entry.

    Example:
        >>> print(gradcheck("Softmax"))  # doctest: +SKIP
        Softmax: gradcheck passed (decomposition gradient, float32)
    """
    import torch

    from ._register import register

    reg = register(name)
    spec = reg.spec
    source = gradient_source(spec)
    samples = sample_inputs(spec, seed)
    for wanted in (torch.float64, torch.float32):
        picked = [s for s in samples if s[1][0].dtype == wanted]
        if picked:
            break
    if source == "none" or not picked:
        why = "the operator has no backward" if source == "none" else "no float32/64 sample"
        return GradcheckResult(spec.name, source, "-", None, why)
    _, args, attrs = picked[0]
    tol: dict[str, Any] = {} if wanted == torch.float64 else FLOAT32_TOLERANCES
    try:
        with warnings.catch_warnings():  # float32 on purpose: the kernel has no float64
            warnings.filterwarnings("ignore", "Input #", UserWarning)
            ok = torch.autograd.gradcheck(lambda *xs: reg.packet(*xs, **attrs), tuple(args),
                                          fast_mode=fast_mode, **tol)
        return GradcheckResult(spec.name, source, str(wanted).removeprefix("torch."), ok)
    except Exception as e:  # gradcheck raises GradcheckError naming the mismatch
        return GradcheckResult(spec.name, source, str(wanted).removeprefix("torch."), False,
                               f"{type(e).__name__}: {str(e).splitlines()[0]}")
