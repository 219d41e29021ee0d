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
    """The full gradient check of one operator: passed (None: no backward to check).

    ``checked`` names, per sample, the outputs and inputs whose Jacobian was compared in
    full; ``no_gradient`` the inputs without a gradient (stated, never skipped silently).
    """

    op: str
    source: str  # 'backward', 'decomposition' or 'none'
    dtype: str
    passed: bool | None
    detail: str = ""
    checked: tuple[str, ...] = ()
    no_gradient: tuple[str, ...] = ()
    method: str = ""

    def __str__(self) -> str:
        verdict = {True: "passed", False: "FAILED", None: "not run"}[self.passed]
        lines = [f"{self.op}: gradcheck {verdict} ({self.source} gradient, {self.dtype}"
                 + (f", {self.method}" if self.method else "") + ")"
                 + (f": {self.detail}" if self.detail else "")]
        lines += [f"  checked  {c}" for c in self.checked]
        if self.no_gradient:
            lines.append(f"  no gradient: {', '.join(self.no_gradient)}")
        return "\n".join(lines)


#: gradcheck's tolerances of a float32 comparison (kept for callers that run
#: ``torch.autograd.gradcheck`` on float32 themselves; :func:`gradcheck` runs in float64)
FLOAT32_TOLERANCES = {"eps": 1e-3, "atol": 1e-2, "rtol": 1e-2}


def gradcheck(name: str, seed: int = 0) -> GradcheckResult:
    """The operator's gradient checked in full (every Jacobian entry) in float64.

    Where the kernel has float64: ``torch.autograd.gradcheck(fast_mode=False)`` of the
    kernel's forward and the registered backward, with torch's float64 tolerances. Else the
    backward (its own, or the decomposition's derivative) in float64 against float64
    central finite differences of the NumPy reference, on small generated samples
    (:mod:`opsdk.torch._gradcheck`; a Jacobian entry fails beyond rtol 1e-4, atol 1e-6).

    Example:
        >>> print(gradcheck("Softmax"))  # doctest: +SKIP
        Softmax: gradcheck passed (decomposition gradient, float64, ...)
    """
    from ._gradcheck import full_gradcheck
    from ._register import register

    reg = register(name)
    spec = reg.spec
    source = gradient_source(spec)
    if source == "none":
        return GradcheckResult(spec.name, source, "-", None, "the operator has no backward")
    f64 = [s for s in sample_inputs(spec, seed) if s[1][0] is not None
           and str(s[1][0].dtype) == "torch.float64"]
    if f64:
        return _torch_gradcheck(reg, source, f64[0])
    full = full_gradcheck(spec, seed)
    if not full.samples:
        return GradcheckResult(spec.name, source, "-", None,
                               "no small sample with a float input (spec.py's cases)")
    method = "full Jacobian against float64 finite differences of the reference"
    return GradcheckResult(spec.name, source, "float64", full.passed,
                           "; ".join(full.problems), tuple(full.checked),
                           tuple(full.no_gradient), method)


def _torch_gradcheck(reg: Any, source: str, sample: tuple[str, list[Any], dict[str, Any]]
                     ) -> GradcheckResult:
    import torch

    case, args, attrs = sample
    spec = reg.spec
    diff = [i.name for i, a in zip(spec.inputs, args, strict=False)
            if a is not None and a.requires_grad]
    none = tuple(f"{i.name!r} (not differentiable)" for i, a in zip(spec.inputs, args,
                                                                     strict=False)
                 if a is not None and not a.requires_grad)
    outs = ", ".join(o.name for o in spec.outputs)
    checked = (f"{case}: d({outs})/d({', '.join(diff)}), every entry",)
    method = "torch.autograd.gradcheck full mode through the kernel"
    try:
        ok = torch.autograd.gradcheck(lambda *xs: reg.packet(*xs, **attrs), tuple(args),
                                      fast_mode=False)
        return GradcheckResult(spec.name, source, "float64", ok, "", checked, none, method)
    except Exception as e:  # gradcheck raises GradcheckError naming the mismatch
        return GradcheckResult(spec.name, source, "float64", False,
                               f"{type(e).__name__}: {str(e).splitlines()[0]}", (), none,
                               method)
