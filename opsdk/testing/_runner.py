"""Running one case: inputs, kernel, upcast reference, comparison, one result."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..ascend.precision import PrecisionMode, emulate
from ..dtypes import dtype_name, is_float, to_numpy
from ..errors import KernelError, SpecError
from ..spec import OpSpec, TensorType
from ._cases import OpCase, case_seed, make_inputs
from ._compare import Comparison, compare
from ._standards import reads_reference, standard_for

__all__ = ["Executor", "CaseResult", "run_case", "reference_outputs", "run_arrays"]


class Executor(Protocol):
    """Anything that runs the operator: ``run(inputs, attrs) -> list of arrays``."""

    def run(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        ...


@dataclass
class CaseResult:
    """The outcome of one case: per-output comparisons and any structural problems."""

    op: str
    case: str
    device: str
    seed: int
    attrs: dict[str, Any]
    inputs: list[str]
    comparisons: list[Comparison] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    repro: str = ""
    note: str = ""
    #: why the operator deliberately does not follow this case (it runs as a strict xfail);
    #: a report counts such a case apart from the failures
    expected_failure: str = ""
    #: the kernel's outputs as it produced them (``float32[2, 3]``), described like inputs
    outputs: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems and all(c.passed for c in self.comparisons)

    def summary(self) -> str:
        """Several lines a person can act on, ending with the repro command."""
        head = "passed" if self.passed else "FAILED"
        lines = [f"{self.op} [{self.case}] on {self.device} {head} (seed {self.seed})"]
        lines.append(f"  inputs: {', '.join(self.inputs)}; attrs: {self.attrs}")
        if self.note:
            lines.append(f"  note: {self.note}")
        lines += [f"  problem: {p}" for p in self.problems]
        for c in self.comparisons:
            lines.append("  " + c.summary())
            for m in c.mismatches:
                ins = ", ".join(f"{k}={v!r}" for k, v in m.inputs.items())
                lines.append(
                    f"    at {list(m.index)}: expected {m.expected!r}, actual {m.actual!r}, "
                    f"abs err {m.abs_error:.3g}, rel err {m.rel_error:.3g}"
                    + (f"; inputs {ins}" if ins else "")
                )
        if self.repro:
            lines.append(f"  reproduce: {self.repro}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "case": self.case,
            "device": self.device,
            "seed": self.seed,
            "passed": self.passed,
            "attrs": {k: v for k, v in self.attrs.items()},
            "inputs": self.inputs,
            "problems": self.problems,
            "note": self.note,
            "expected_failure": self.expected_failure,
            "repro": self.repro,
            "outputs": [c.as_dict() for c in self.comparisons],
        }


def _describe(a: np.ndarray | None) -> str:
    if a is None:
        return "absent"
    layout = "" if a.flags.c_contiguous or a.size <= 1 else " non-contiguous"
    return f"{a.dtype.name}{list(a.shape)}{layout}"


def parse_described(text: str) -> tuple[str, tuple[int, ...]] | None:
    """(dtype, shape) of an input as :class:`CaseResult` describes it (``float16[2, 3]``,
    ``float32[4, 5] non-contiguous``); None for ``absent`` or any other text.

    Example:
        >>> parse_described("float16[2, 3] non-contiguous"), parse_described("absent")
        (('float16', (2, 3)), None)
    """
    m = _DESCRIBED.match(text)
    if m is None:
        return None
    dims = m.group(2).replace(",", " ").split()
    return m.group(1), tuple(int(d) for d in dims)


_DESCRIBED = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\[([0-9, ]*)\]")


def _upcast(a: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return None
    return a.astype(np.float64) if is_float(dtype_name(a.dtype)) else a


def reference_outputs(
    spec: OpSpec, inputs: Sequence[np.ndarray | None], attrs: Mapping[str, Any]
) -> list[np.ndarray]:
    """Run the NumPy reference on upcast inputs (float64 for float dtypes).

    The result is returned at full precision; callers round it to the output dtype.
    NumPy floating-point warnings (overflow, invalid) are silenced: edge-value inputs
    produce Inf and NaN on purpose.
    """
    ref = spec.reference
    if ref is None:
        raise SpecError(
            f"{spec.name}: no NumPy reference; define reference(...) in reference.py "
            "or use @SPEC.register_reference"
        )
    args = [_upcast(a) for a in inputs]
    with np.errstate(all="ignore"):
        try:
            out = ref(*args, **attrs)
        except SpecError:
            raise
        except ValueError as e:  # the reference refuses the call: a SpecError naming it
            raise SpecError(f"{spec.name}: the NumPy reference (reference.py) refused the call: "
                            f"{e}; pass values it accepts, or fix reference.py") from e
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [np.asarray(o) for o in outs]


_INFER_CACHE: dict[tuple[Any, ...], tuple[OpSpec, list[TensorType]]] = {}


def _infer(
    spec: OpSpec, inputs: Sequence[np.ndarray | None], resolved: Mapping[str, Any]
) -> list[TensorType]:
    """``spec.infer`` memoised on (spec, input shapes and dtypes, attributes)."""
    types = [None if a is None else TensorType(a.shape, dtype_name(a.dtype)) for a in inputs]
    try:
        key = (id(spec), tuple(types), repr(sorted(resolved.items())))
    except TypeError:  # pragma: no cover - unhashable attribute values
        return spec.infer(types, resolved)
    hit = _INFER_CACHE.get(key)
    if hit is None or hit[0] is not spec:
        if len(_INFER_CACHE) > 4096:
            _INFER_CACHE.clear()
        hit = (spec, spec.infer(types, resolved))
        _INFER_CACHE[key] = hit
    return hit[1]


def _round_to(a: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return a.astype(to_numpy(dtype))


def run_arrays(
    spec: OpSpec,
    executor: Executor,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any],
    *,
    standard: str | None = None,
    kernel_inputs: list[np.ndarray | None] | None = None,
    judge_dtype: Mapping[str, str] | None = None,
    keep_arrays: bool = True,
    strict: bool = True,
    reference: Executor | None = None,
    rounding: bool = True,
    seen: list[str] | None = None,
) -> tuple[list[Comparison], list[str]]:
    """Run the kernel on ``kernel_inputs`` (default ``inputs``) and judge its outputs
    against the reference on ``inputs``; returns (comparisons, problems). ``strict``:
    opsdk's own checks run beside the standard (see :func:`compare`). ``reference``: a
    trusted device, run on the same kernel inputs for standards that compare against one
    (``cross-device``). ``seen`` gets the kernel's outputs described (``float32[2, 3]``)."""
    problems: list[str] = []
    resolved = spec.resolve_attrs(attrs)
    kin = inputs if kernel_inputs is None else kernel_inputs
    snapshot = [None if a is None else a.copy() for a in kin]
    actual = executor.run(kin, dict(attrs))
    if seen is not None:
        seen.extend(_describe(np.asarray(a)) for a in actual)
    for i, (a, s) in enumerate(zip(kin, snapshot, strict=False)):
        if a is not None and s is not None and a.tobytes() != s.tobytes():
            problems.append(f"the kernel modified input {spec.inputs[i].name!r} in place")
    inferred = _infer(spec, inputs, resolved)
    expected = reference_outputs(spec, inputs, resolved)
    if len(actual) != len(spec.outputs) or len(expected) != len(spec.outputs):
        problems.append(
            f"spec declares {len(spec.outputs)} outputs; kernel returned {len(actual)}, "
            f"reference returned {len(expected)}"
        )
        return [], problems
    comps: list[Comparison] = []
    named = [(i.name, a) for i, a in zip(spec.inputs, inputs, strict=False)]
    trusted = _reference_run(spec, reference, kin, attrs, standard)
    # Under precision-mode emulation the kernel runs in other dtypes than the model's.
    kernel_types = inferred if kernel_inputs is None else _infer(spec, kin, resolved)
    for k, (out, tt, kt, act, exp) in enumerate(zip(
        spec.outputs, inferred, kernel_types, actual, expected, strict=False
    )):
        if dtype_name(act.dtype) != kt.dtype or tuple(act.shape) != tuple(tt.shape):
            problems.append(
                f"output {out.name!r}: kernel produced {act.dtype}{list(act.shape)}, spec "
                f"inference says {kt.dtype}{list(tt.shape)}"
            )
            continue
        kernel_dt = (judge_dtype or {}).get(out.name, tt.dtype)
        act_cast = act if kt.dtype == tt.dtype else _round_to(act, tt.dtype)
        if tuple(exp.shape) != tuple(tt.shape):
            problems.append(
                f"output {out.name!r}: reference produced shape {list(exp.shape)}, spec "
                f"inference says {list(tt.shape)}; fix reference.py or the shape function"
            )
            continue
        std = standard_for(kernel_dt, spec.standard, standard)
        ref_out = None
        if std.needs_reference and trusted is not None and k < len(trusted):
            ref_out = _round_to(np.asarray(trusted[k]), tt.dtype)
        comps.append(
            compare(act_cast, _round_to(exp, tt.dtype), std, output=out.name, inputs=named,
                    judge_dtype=kernel_dt, keep_arrays=keep_arrays, strict=strict,
                    rounding=rounding,
                    golden=exp, reference=ref_out)
        )
    return comps, problems


def _reference_run(
    spec: OpSpec, reference: Executor | None, kin: Sequence[np.ndarray | None],
    attrs: Mapping[str, Any], standard: str | None,
) -> list[np.ndarray] | None:
    """The trusted device's outputs on the kernel's inputs, when a standard of the case
    reads them (else None, and the device does not run)."""
    if reference is None or not reads_reference(spec.standard, standard):
        return None
    return list(reference.run(list(kin), dict(attrs)))


#: the devices whose float16/bfloat16 outputs get opsdk's ``rounding`` check: those running
#: kernel.cpp. An AI Core kernel (ascendc-model, npu) computes with scalars rounded to the
#: dtype, a bias of up to half an ulp toward zero that the standards allow and that looks
#: like truncation (docs/validation.md).
ROUNDING_DEVICES = ("cpu", "aarch64")


def run_case(
    spec: OpSpec,
    executor: Executor,
    case: OpCase,
    *,
    seed: int = 0,
    device: str = "cpu",
    standard: str | None = None,
    precision_mode: str | PrecisionMode | None = None,
    repro: Callable[[OpCase], str] | None = None,
    keep_arrays: bool = True,
    strict: bool = True,
    reference: Executor | None = None,
) -> CaseResult:
    """Generate ``case``'s inputs from ``seed``, run them and judge the outputs.

    Example:
        >>> # see tests/test_testing_runner.py; needs an executor such as opsdk.load(...)
    """
    inputs = make_inputs(spec, case, seed)
    res = CaseResult(
        spec.name, case.id, device, seed, dict(case.attrs), [_describe(a) for a in inputs],
        repro=repro(case) if repro else "",
    )
    kernel_inputs, judge = None, None
    try:
        if precision_mode is not None:
            kernel_inputs, judge, res.note = emulate(spec, case.dtypes, inputs, precision_mode)
        res.comparisons, res.problems = run_arrays(
            spec, executor, inputs, dict(case.attrs), standard=standard,
            kernel_inputs=kernel_inputs, judge_dtype=judge, keep_arrays=keep_arrays,
            strict=strict, reference=reference, seen=res.outputs,
            rounding=device in ROUNDING_DEVICES and precision_mode is None,
        )
    except (SpecError, KernelError) as e:
        # a crash in a worker, or a race or broken limit the Ascend C model found, fails this
        # case only, shown as its problem with the command that reproduces it
        res.problems.append(str(e))
    return res


def seed_of(seed: int, case: OpCase) -> int:
    """The per-case seed actually used (for reports)."""
    return case_seed(seed, case.id)
