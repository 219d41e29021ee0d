"""``opsdk.check(op, samples)``: the operator author's one-call check."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import dtype_name
from ..errors import DeviceUnavailable, KernelCrash, SpecError, ValidationError
from ..spec import OpSpec
from ._cases import OpCase, build_cases, coverage_notes, make_inputs, sample_cases
from ._compare import compare
from ._runner import run_arrays
from ._shape_cpp import ShapeCase, ShapeCheck, shape_cases
from ._standards import standard_for

__all__ = ["check", "CheckReport", "Sample"]


@dataclass
class Sample:
    """One call of the operator: its inputs and attributes."""

    inputs: list[np.ndarray | None]
    attrs: dict[str, Any] = field(default_factory=dict)
    label: str = ""


@dataclass
class CheckReport:
    """What :func:`check` verified, per sample and property; ``problems`` lists failures."""

    op: str
    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    comparisons: list[Any] = field(default_factory=list)
    repro: str = ""
    #: what was not checked and why (e.g. an operator without a C++ shape function, or
    #: what the generator could not do for it: :func:`._cases.coverage_notes`)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        head = f"opsdk.check({self.op}): {'passed' if self.passed else 'FAILED'}"
        lines = [head] + [f"  ok      {c}" for c in self.checked]
        lines += [f"  note    {n}" for n in self.notes]
        lines += [f"  FAILED  {p}" for p in self.problems]
        if self.problems and self.repro:
            lines.append(f"  reproduce: {self.repro}")
        return "\n".join(lines)


def _as_samples(spec: OpSpec, samples: Any, seed: int) -> list[Sample]:
    if samples is None:
        cases: list[OpCase] = sample_cases(build_cases(spec))
        strided = [c for c in build_cases(spec) if c.layout == "strided"][:1]
        return [
            Sample(make_inputs(spec, c, seed), dict(c.attrs), c.id) for c in cases + strided
        ]
    out = []
    for i, s in enumerate(samples if isinstance(samples, Iterable) else [samples]):
        if isinstance(s, Sample):
            out.append(s)
        elif isinstance(s, Mapping):
            out.append(Sample(list(s["inputs"]), dict(s.get("attrs", {})), f"sample{i}"))
        elif isinstance(s, tuple) and len(s) == 2 and isinstance(s[1], Mapping):
            out.append(Sample(list(s[0]), dict(s[1]), f"sample{i}"))
        elif isinstance(s, np.ndarray):
            out.append(Sample([s], {}, f"sample{i}"))
        elif isinstance(s, Sequence):
            out.append(Sample(list(s), {}, f"sample{i}"))
        else:
            raise SpecError(
                f"{spec.name}: check() sample {i} is a {type(s).__name__}; pass a list of "
                "(inputs, attrs) pairs, {'inputs': [...], 'attrs': {...}} or input lists"
            )
    return out


def check(
    op: Any,
    samples: Any = None,
    *,
    standard: str | None = None,
    seed: int = 0,
    reference: Any = None,
) -> CheckReport:
    """Check an operator end to end and raise :class:`ValidationError` on any failure.

    For every sample (default: one generated per declared dtype combination, plus a
    non-contiguous one): the kernel's output shapes and dtypes match ``spec.infer``; the
    kernel matches the reference (run on float64-upcast inputs) under the op's precision
    standard; two runs are bit-identical; the inputs are not modified; and where the spec
    sets ``batch_axis``, the batch equals the concatenation of per-item results. Where the
    executor has an operator folder, the C++ shape function CANN's InferShape runs
    (``shape.h``, or broadcasting) agrees with spec.py on every generated case (shapes, and the
    generated InferDataType's dtypes) and with the kernel's outputs on every sample; an
    operator without one gets a note naming the file to write.

    Args:
        op: an executor with ``.spec`` and ``.run(inputs, attrs)``, e.g. ``opsdk.load(...)``.
        samples: ``[(inputs, attrs), ...]``, ``[{"inputs": ..., "attrs": ...}]`` or input
            lists; None generates them from the spec.
        standard: a standard name overriding the spec's choice.
        seed: seed of the generated samples.
        reference: the trusted device (an executor, e.g. ``opsdk.load(...)`` on the host) a
            ``cross-device`` standard divides by; it runs the same samples. The batch check
            (the kernel against itself) uses the dtype's default standard instead.

    Returns:
        The :class:`CheckReport` (all passed).

    Raises:
        ValidationError: with ``.report`` (the CheckReport) listing every failure.

    Example:
        >>> import opsdk
        >>> print(opsdk.check(opsdk.load("ThresholdedRelu")))  # doctest: +SKIP
        opsdk.check(ThresholdedRelu): passed
          ok      float16-small: inference, reference (mere-mare), determinism, inputs kept
    """
    spec: OpSpec = op.spec
    report = CheckReport(spec.name)
    if samples is None:
        report.notes.extend(coverage_notes(spec))
        folder = getattr(op, "folder", None)
        report.repro = f"opsdk check {folder or spec.name} --seed {seed}" + (
            f" --standard {standard}" if standard else ""
        )
    outputs: dict[str, list[str]] = {}
    checked = _as_samples(spec, samples, seed)
    for s in checked:
        outputs[s.label or "sample"] = _check_sample(op, spec, s, standard, report, reference)
    skipped = [n for n in report.notes if ": not run: " in n]
    if checked and len(skipped) == len(checked):
        report.problems.append("no sample is in the kernel's reach: " + "; ".join(skipped[:3]))
    folder = getattr(op, "folder", None)
    if folder is not None:
        _check_shape_function(Path(folder), spec, checked, outputs, report)
    if report.problems:
        raise ValidationError(str(report), report)
    return report


def _check_shape_function(folder: Path, spec: OpSpec, samples: list[Sample],
                          outputs: dict[str, list[str]], rep: CheckReport) -> None:
    """The C++ shape function (shape.h) on every generated case against spec.py, and on
    each sample against the kernel's outputs."""
    cases = shape_cases(spec, build_cases(spec))
    ids = {c.id for c in cases}
    for s in samples:
        if s.label in ids or not outputs.get(s.label):
            continue
        try:
            attrs = spec.resolve_attrs(dict(s.attrs))
        except SpecError:
            continue  # _check_sample reported it
        cases.append(ShapeCase(
            s.label, tuple(None if a is None else tuple(a.shape) for a in s.inputs),
            tuple(None if a is None else dtype_name(a.dtype) for a in s.inputs), attrs))
    shapes = ShapeCheck.of(folder, spec, cases)
    if shapes.fn is None and not shapes.error:
        rep.notes.append(f"C++ shape function not checked: {shapes.reason}")
        return
    problems = shapes.spec_report()
    for label, outs in outputs.items():
        problems += [f"{spec.name} [{label}]: {p}" for p in shapes.kernel_report(label, outs)]
    rep.problems += problems
    if not problems and shapes.fn is not None:
        rep.checked.append(
            f"C++ shape function ({shapes.fn.source}): {len(cases)} cases agree with spec.py "
            f"(shapes and dtypes) and {len(outputs)} sample(s) with the kernel's outputs")


def _check_sample(op: Any, spec: OpSpec, s: Sample, standard: str | None, rep: CheckReport,
                  reference: Any = None) -> list[str]:
    """Check one sample; returns the kernel's outputs described (``float32[2, 3]``)."""
    label = s.label or "sample"
    where = f"{label} ({', '.join(_desc(a) for a in s.inputs)}, attrs {s.attrs})"
    seen: list[str] = []
    try:
        comps, problems = run_arrays(spec, op, s.inputs, s.attrs, standard=standard,
                                     reference=reference, seen=seen)
    except DeviceUnavailable as e:  # out of the kernel's reach: skipped, as the harness does
        rep.notes.append(f"{where}: not run: {e}")
        return []
    except (SpecError, RuntimeError) as e:
        rep.problems.append(f"{where}: {type(e).__name__}: {e}")
        return []
    rep.comparisons.extend(comps)
    rep.problems += [f"{where}: {p}" for p in problems]
    for c in comps:
        if not c.passed:
            rep.problems.append(f"{where}: reference mismatch: {c.summary()}")
            for m in c.mismatches[:3]:
                rep.problems.append(
                    f"{where}:   at {list(m.index)} expected {m.expected!r} actual {m.actual!r}"
                    + (f" inputs {m.inputs}" if m.inputs else "")
                )
    try:
        _check_repeatable(op, spec, s, where, standard, rep)
    except KernelCrash as e:  # a worker's crash on a later run fails this sample only
        rep.problems.append(f"{where}: {e}")
    if not any(p.startswith(where) for p in rep.problems):
        stds = ", ".join(sorted({c.standard for c in comps}))
        rep.checked.append(
            f"{label}: inference, reference ({stds}), determinism, inputs kept"
            + (", batch" if spec.batch_axis is not None else "")
        )
    return seen if len(seen) == len(spec.outputs) else []


def _check_repeatable(
    op: Any, spec: OpSpec, s: Sample, where: str, standard: str | None, rep: CheckReport
) -> None:
    """Two runs are bit-identical, and a batch equals its per-item results."""
    first = op.run(s.inputs, dict(s.attrs))
    second = op.run(s.inputs, dict(s.attrs))
    for o, a, b in zip(spec.outputs, first, second, strict=False):
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            rep.problems.append(f"{where}: output {o.name!r} differs between two identical runs")
    if spec.batch_axis is not None:
        _check_batch(op, spec, s, first, where, standard, rep)


def _desc(a: np.ndarray | None) -> str:
    return "None" if a is None else f"{a.dtype}{list(a.shape)}"


def _check_batch(
    op: Any, spec: OpSpec, s: Sample, whole: list[np.ndarray], where: str,
    standard: str | None, rep: CheckReport,
) -> None:
    ax = spec.batch_axis
    assert ax is not None
    first = next((a for a in s.inputs if a is not None), None)
    if first is None or first.ndim <= ax or first.shape[ax] < 2:
        return
    n = first.shape[ax]
    batched = [a is not None and a.ndim > ax and a.shape[ax] == n for a in s.inputs]
    parts: list[list[np.ndarray]] = [[] for _ in spec.outputs]
    for i in range(n):
        item = [
            a.take([i], axis=ax) if b and a is not None else a
            for a, b in zip(s.inputs, batched, strict=False)
        ]
        for k, out in enumerate(op.run(item, dict(s.attrs))):
            parts[k].append(out)
    for o, w, p in zip(spec.outputs, whole, parts, strict=False):
        joined = np.concatenate(p, axis=ax)
        if joined.shape != w.shape:
            rep.problems.append(
                f"{where}: batch: per-item outputs of {o.name!r} concatenate to "
                f"{list(joined.shape)}, the batch gives {list(w.shape)}"
            )
            continue
        std = standard_for(dtype_name(w.dtype), spec.standard, standard)
        if std.needs_reference:  # the kernel against itself: no device to divide by
            std = standard_for(dtype_name(w.dtype))
        c = compare(joined, w, std, output=o.name, keep_arrays=False, rounding=False)
        if not c.passed:
            rep.problems.append(
                f"{where}: batch: {o.name!r} of the whole batch differs from the "
                f"concatenated per-item results along axis {ax}: {c.reason}"
            )

