"""The full gradient check of an operator: every entry of its Jacobian, in float64.

Where the kernel has float64, ``torch.autograd.gradcheck`` runs in full mode (every
Jacobian entry, not fast mode's random projections) on the kernel's forward and the
operator's backward, with torch's float64 tolerances. Where it has not, the operator's
backward (``@SPEC.register_backward``, or the derivative of its decomposition) runs in
float64 on the same inputs and every entry of its Jacobian is compared with float64 central
finite differences of the NumPy reference: the backward is what autograd uses, the
reference is the ground truth, and neither is limited by the kernel's dtype.

Example:
    >>> from opsdk.registry import load_spec
    >>> r = full_gradcheck(load_spec("operators/softmax"))  # doctest: +SKIP
    >>> r.passed, r.checked[0]  # doctest: +SKIP
    (True, 'float32-rank1: d(output)/d(input), 11x11 entries')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import is_float
from ..spec import OpSpec

__all__ = ["GradSample", "full_gradcheck", "TOLERANCES", "small_cases"]

#: (rtol, atol) of a Jacobian entry per dtype of the comparison: torch.autograd.gradcheck's
#: float64 tolerances. A gradient off by 0.1 relative fails them by a factor of 100.
TOLERANCES = {"float64": (1e-3, 1e-5)}
#: the central-difference step, relative to max(1, |x|): its truncation error (h^2/6 times
#: the third derivative) is ~2e-7; a smaller one would let the rounding of a reference that
#: computes a part in float32 (GridSample's coordinates, as PyTorch does) exceed the
#: tolerance (measured: 0.4% off at 1e-4, 0.01% at 1e-3).
_STEP = 1e-3
#: the generated samples: spec cases whose inputs hold at most this many elements in all
_MAX_ELEMENTS = 400
_MAX_SAMPLES = 4


@dataclass
class GradSample:
    """What one sample's check found."""

    case: str
    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class FullGradcheck:
    """The verdict over every sample; ``no_gradient`` names the inputs without one."""

    samples: list[GradSample] = field(default_factory=list)
    no_gradient: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.samples) and not any(s.problems for s in self.samples)

    @property
    def checked(self) -> list[str]:
        return [f"{s.case}: {c}" for s in self.samples for c in s.checked]

    @property
    def problems(self) -> list[str]:
        return [f"{s.case}: {p}" for s in self.samples for p in s.problems]


def small_cases(spec: OpSpec) -> list[Any]:
    """Small contiguous cases for the check, in the first dtype combination with a float32
    input (else any float input): an elementwise operator's ``small`` (2, 3, 4) case per
    attribute set and its ``broadcast`` case; else the smallest of the spec's own cases for
    each attribute set they use (up to four), every input non-empty."""
    from ..testing._cases import build_cases

    combos = [d for d in spec.dtype_combinations() if any(is_float(x) for x in d)]
    if not combos:
        return []
    combo = next((d for d in combos if all(x == "float32" for x in d if is_float(x))),
                 next((d for d in combos if "float32" in d), combos[0]))
    key = "-".join(dict.fromkeys(combo)) + "-"
    plain = [c for c in build_cases(spec) if c.layout == "contiguous" and not c.edges
             and c.distribution == "uniform"
             and all(d is None or d == w for d, w in zip(c.dtypes, combo, strict=False))]
    if spec.elementwise:
        wanted = ("small", "broadcast")
        plain = [c for c in plain if c.id[len(key):].split("-")[0] in wanted]
    picked: list[Any] = []
    seen: list[tuple[Any, ...]] = []
    for c in sorted(plain, key=_size):
        sizes = [int(np.prod(s)) for s in c.shapes if s is not None]
        mark = (sorted(c.attrs.items()), len(c.shapes) if spec.elementwise else 0,
                c.shapes if spec.elementwise else 0)
        if not sizes or min(sizes) == 0 or sum(sizes) > _MAX_ELEMENTS or mark in seen:
            continue
        seen.append(mark)
        picked.append(c)
        if len(picked) == _MAX_SAMPLES:
            break
    return picked


def _size(c: Any) -> int:
    return sum(int(np.prod(s)) for s in c.shapes if s is not None)


def full_gradcheck(spec: OpSpec, seed: int = 0) -> FullGradcheck:
    """Every Jacobian entry of the operator's backward, in float64, against float64
    central finite differences of its NumPy reference, on :func:`small_cases`."""
    from ..testing._cases import make_inputs

    result = FullGradcheck()
    for case in small_cases(spec):
        arrays = [None if a is None else np.asarray(a, np.float64) if is_float(str(a.dtype))
                  else np.asarray(a) for a in make_inputs(spec, case, seed)]
        result.samples.append(_check_sample(spec, case.id, arrays, dict(case.attrs), result))
    return result


def _check_sample(spec: OpSpec, case: str, inputs: list[np.ndarray | None],
                  attrs: dict[str, Any], total: FullGradcheck) -> GradSample:
    from ..testing._runner import reference_outputs

    resolved = spec.resolve_attrs(attrs)
    sample = GradSample(case)
    outs = reference_outputs(spec, inputs, resolved)
    out_idx = [k for k, o in enumerate(outs) if is_float(str(o.dtype)) and o.size]
    try:
        analytic = _analytic(spec, inputs, outs, resolved, out_idx)
    except Exception as e:  # the backward itself failed: that is the finding
        sample.problems.append(f"the backward raised {type(e).__name__}: {e}")
        return sample
    rtol, atol = TOLERANCES["float64"]
    for i, (inp, a) in enumerate(zip(spec.inputs, inputs, strict=False)):
        if a is None:
            continue
        if not is_float(str(a.dtype)):
            _note(total, f"{inp.name!r} ({a.dtype}: not differentiable)")
            continue
        numeric, noise = _numeric(spec, inputs, i, resolved, out_idx)
        names = ", ".join(spec.outputs[k].name for k in out_idx)
        shape = f"{numeric.shape[0]}x{numeric.shape[1]} entries"
        got = analytic[i]
        if got is None:  # stated; a failure when the reference depends on it
            _note(total, f"{inp.name!r} (the backward returns None)")
            worst = float(np.max(np.where(_unresolved(numeric, noise, atol), 0.0,
                                          np.abs(numeric)), initial=0.0))
            if worst > atol:
                sample.problems.append(
                    f"input {inp.name!r}: the backward gives no gradient, but the reference "
                    f"depends on it (largest |d({names})/d{inp.name}| is {worst:.3g})")
            continue
        bad = _worst(got, numeric, noise, rtol, atol)
        skipped = int(_unresolved(numeric, noise, atol).sum())
        if skipped:
            shape += f" ({skipped} where the reference jumps within the step not judged)"
        if bad is None:
            sample.checked.append(f"d({names})/d({inp.name}), {shape}")
        else:
            r, c, back, want = bad
            sample.problems.append(
                f"d({names})/d({inp.name}) wrong: entry [output element {r}, input element "
                f"{c}] is {back:.6g} by the backward, {want:.6g} by float64 finite differences "
                f"of the reference (rtol {rtol:g}, atol {atol:g}, plus the differences' error "
                f"estimate {float(noise[r, c]):.2g})")
    return sample


def _note(total: FullGradcheck, what: str) -> None:
    if what not in total.no_gradient:
        total.no_gradient.append(what)


def _worst(a: np.ndarray, n: np.ndarray, noise: np.ndarray, rtol: float, atol: float
           ) -> tuple[int, int, float, float] | None:
    """The entry most beyond ``atol + rtol*|n|`` widened by twice the differences' own
    error estimate; None when every judged entry is within (:func:`_unresolved` ones are
    not judged)."""
    excess = np.abs(a - n) - (atol + rtol * np.abs(n) + 2 * noise)
    excess = np.where(np.isnan(excess), np.inf, excess)
    excess = np.where(_unresolved(n, noise, atol), -np.inf, excess)
    if excess.size == 0 or float(excess.max()) <= 0:
        return None
    r, c = np.unravel_index(int(np.argmax(excess)), excess.shape)
    return int(r), int(c), float(a[r, c]), float(n[r, c])


def _unresolved(n: np.ndarray, noise: np.ndarray, atol: float) -> np.ndarray:
    """Entries whose differences do not converge (D(h) and D(2h) differ by more than half
    of D(h)): the reference jumps or has a kink within the step there (a rounding in
    nearest-neighbour sampling, relu at 0), so no derivative can be read off it."""
    return noise > 0.5 * np.abs(n) + atol


def _numeric(spec: OpSpec, inputs: list[np.ndarray | None], i: int,
             attrs: dict[str, Any], out_idx: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(output elements) x (elements of input i): central differences of the reference
    with step h, and their error estimate |D(h) - D(2h)| (the truncation error of D(2h) is
    four times D(h)'s; the rounding of the reference shows as a difference too)."""
    x = inputs[i]
    assert x is not None
    cols, errs = [], []
    for j in range(x.size):
        h = _STEP * max(1.0, abs(float(x.reshape(-1)[j])))
        f = {k: _moved(spec, inputs, i, j, k * h, attrs, out_idx) for k in (1, -1, 2, -2)}
        d1 = (f[1] - f[-1]) / (2 * h)
        d2 = (f[2] - f[-2]) / (4 * h)
        cols.append(d1)
        errs.append(np.abs(d1 - d2))
    if not cols:
        return np.zeros((0, 0)), np.zeros((0, 0))
    return np.stack(cols, axis=1), np.stack(errs, axis=1)


def _moved(spec: OpSpec, inputs: list[np.ndarray | None], i: int, j: int, step: float,
           attrs: dict[str, Any], out_idx: Sequence[int]) -> np.ndarray:
    """The reference's float outputs, flattened, with element j of input i moved by step."""
    from ..testing._runner import reference_outputs

    x = inputs[i]
    assert x is not None
    moved = x.copy()
    moved.reshape(-1)[j] += step
    args = list(inputs)
    args[i] = moved
    outs = reference_outputs(spec, args, attrs)
    return np.concatenate([np.asarray(outs[k], np.float64).reshape(-1) for k in out_idx])


def _analytic(spec: OpSpec, inputs: list[np.ndarray | None], outs: list[np.ndarray],
              attrs: dict[str, Any], out_idx: Sequence[int]) -> list[np.ndarray | None]:
    """(output elements) x (input elements) per input, row by row: the backward with a
    one-hot output gradient; None for an input it gives no gradient."""
    import torch

    from ._autograd import backward_of

    tin = [None if a is None else torch.from_numpy(np.array(a)) for a in inputs]
    tin += [None] * (len(spec.inputs) - len(tin))
    floats = [is_float(str(o.dtype)) for o in outs]
    tout = [torch.from_numpy(np.array(o, dtype=np.float64 if f else o.dtype))
            for o, f in zip(outs, floats, strict=False)]
    rows: list[list[np.ndarray | None]] = []
    for k in out_idx:
        for j in range(outs[k].size):
            grads = [torch.zeros_like(o) if f else None
                     for o, f in zip(tout, floats, strict=False)]
            g = grads[k]
            assert g is not None
            g.view(-1)[j] = 1.0
            got = backward_of(spec, tin, tout, grads, attrs)
            rows.append([None if t is None else t.detach().double().reshape(-1).numpy()
                         for t in got])
    result: list[np.ndarray | None] = []
    for i, a in enumerate(inputs):
        if a is None or not rows or any(r[i] is None for r in rows):
            result.append(None)
        else:
            result.append(np.stack([np.asarray(r[i]).reshape(a.size) for r in rows]))
    return result
