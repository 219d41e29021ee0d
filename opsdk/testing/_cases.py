"""The test matrix of an operator, derived from its spec: dtypes x shapes x attributes."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import is_float, to_numpy
from ..errors import SpecError
from ..spec import Input, OpSpec
from ._generate import (
    DISTRIBUTIONS,
    LAYOUTS,
    default_range,
    domain_edges,
    generate,
    inject_edges,
    non_contiguous,
)

__all__ = ["OpCase", "build_cases", "case_seed", "make_inputs", "SHAPE_SUITE", "coverage_notes"]

Shape = tuple[int, ...]

#: Shapes every elementwise operator is tested on (all inputs share the shape).
SHAPE_SUITE: dict[str, Shape] = {
    "scalar": (),
    "empty": (0,),
    "empty3d": (2, 0, 3),
    "one": (1,),
    "odd": (17,),
    "small": (2, 3, 4),
    "large": (256, 1031),
}
#: Shapes of the broadcasting cases of multi-input elementwise operators, per input.
BROADCAST_SUITE: dict[str, tuple[Shape, ...]] = {
    "broadcast": ((2, 3, 4), (3, 1), (1, 4), (4,)),
    "broadcast_scalar": ((5, 6), (), (), ()),
}
_LAYOUT_SHAPE: Shape = (4, 5, 6)
_EDGE_SHAPE: Shape = (8, 16)
_DIST_SHAPE: Shape = (4, 33)
#: An operator with a shape function gets its hard cases (layouts, edge values) on up to
#: this many of its spec's cases, and the distributions on the first of them; a case
#: qualifies when every input is non-empty and they hold at most _HARD_SIZE elements.
_HARD_BASES = 3
_HARD_SIZE = 1 << 15


@dataclass(frozen=True)
class OpCase:
    """One generated test case: per-input dtypes and shapes, attributes and data recipe.

    ``layout`` is ``contiguous``, ``strided`` or ``transposed`` (non-contiguous views);
    ``edges`` injects NaN/Inf/subnormal/extreme values (see :func:`edge_values`).
    """

    id: str
    dtypes: tuple[str | None, ...]
    shapes: tuple[Shape | None, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    distribution: str = "uniform"
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    edges: bool = False
    layout: str = "contiguous"

    def __repr__(self) -> str:
        return f"OpCase({self.id})"


def case_seed(seed: int, case_id: str) -> int:
    """The seed of one case: stable across processes and platforms.

    Example:
        >>> case_seed(0, "float32-small") == case_seed(0, "float32-small")
        True
    """
    return zlib.crc32(f"{seed}:{case_id}".encode())


def _attr_sets(spec: OpSpec) -> list[dict[str, Any]]:
    sets: list[dict[str, Any]] = []
    if not any(a.required for a in spec.attrs):
        sets.append({})
    for c in spec.cases:
        if dict(c.attrs) not in sets:
            sets.append(dict(c.attrs))
    return sets


def _attr_label(attrs: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in attrs.items()) or "defaults"


def _without_optional(spec: OpSpec, dts: tuple[str, ...], key: str) -> list[OpCase]:
    """The small case with every optional input absent (when the spec has some)."""
    opt = [i.optional for i in spec.inputs]
    if not any(opt):
        return []
    shapes = tuple(None if o else SHAPE_SUITE["small"] for o in opt)
    dtypes = tuple(None if o else d for o, d in zip(opt, dts, strict=False))
    return [OpCase(f"{key}-small-no_optional", dtypes, shapes)]


def _elementwise_cases(spec: OpSpec, dts: tuple[str, ...]) -> list[OpCase]:
    n_in = len(spec.inputs)
    key = "-".join(dict.fromkeys(dts))
    out = [OpCase(f"{key}-{k}", dts, (s,) * n_in) for k, s in SHAPE_SUITE.items()]
    out += _without_optional(spec, dts, key)
    if n_in > 1:
        for k, shapes in BROADCAST_SUITE.items():
            shp = tuple(shapes[min(i, len(shapes) - 1)] for i in range(n_in))
            out.append(OpCase(f"{key}-{k}", dts, shp))
    for layout in LAYOUTS:
        out.append(OpCase(f"{key}-{layout}", dts, (_LAYOUT_SHAPE,) * n_in, layout=layout))
    if any(is_float(d) for d in dts):
        out.append(OpCase(f"{key}-edge", dts, (_EDGE_SHAPE,) * n_in, edges=True))
        for dist in DISTRIBUTIONS:
            if dist != "uniform":
                out.append(OpCase(f"{key}-{dist}", dts, (_DIST_SHAPE,) * n_in, distribution=dist))
    return out


def _spec_cases(spec: OpSpec, dts: tuple[str, ...]) -> list[OpCase]:
    key = "-".join(dict.fromkeys(dts))
    out = []
    for i, c in enumerate(spec.cases):
        unknown = set(c.shapes) - {inp.name for inp in spec.inputs}
        if unknown:
            raise SpecError(
                f"{spec.name}: cases[{i}] gives shapes for unknown inputs {sorted(unknown)}; "
                f"inputs are {', '.join(inp.name for inp in spec.inputs)}"
            )
        shapes = tuple(
            tuple(c.shapes[inp.name]) if inp.name in c.shapes else None for inp in spec.inputs
        )
        missing = [
            inp.name
            for inp, s in zip(spec.inputs, shapes, strict=False)
            if s is None and not inp.optional
        ]
        if missing:
            raise SpecError(f"{spec.name}: cases[{i}] gives no shape for input(s) {missing}")
        dtypes = tuple(d if s is not None else None for d, s in zip(dts, shapes, strict=False))
        label = c.name or f"case{i}"
        out.append(OpCase(f"{key}-{label}", dtypes, shapes, dict(c.attrs), ranges=dict(c.ranges)))
    return out


def _hard_cases(spec: OpSpec, base: Sequence[OpCase], dts: tuple[str, ...]) -> list[OpCase]:
    """The hard cases of an operator with a shape function, on the shapes, attributes and
    ranges of its spec's cases: every non-contiguous layout and the edge values on up to
    :data:`_HARD_BASES` of them, the distributions on the first."""
    key = "-".join(dict.fromkeys(dts))
    bases = [c for c in base if _hard_base(c)][:_HARD_BASES]
    out: list[OpCase] = []
    edges = any(_takes_edges(spec, inp, d) for inp, d in zip(spec.inputs, dts, strict=False))
    for c in bases:
        label = c.id[len(key) + 1:]
        for layout in LAYOUTS:
            out.append(_with(c, id=f"{c.id}-{layout}", layout=layout))
        if edges:
            out.append(_with(c, id=f"{key}-{label}-edge", edges=True))
    if bases and any(is_float(d) for d in dts):
        for dist in DISTRIBUTIONS:
            if dist != "uniform":
                out.append(_with(bases[0], id=f"{bases[0].id}-{dist}", distribution=dist))
    return out


def _hard_base(c: OpCase) -> bool:
    sizes = [int(np.prod(s)) for s in c.shapes if s is not None]
    return bool(sizes) and min(sizes) > 0 and sum(sizes) <= _HARD_SIZE


def _takes_edges(spec: OpSpec, inp: Input, dtype: str | None) -> bool:
    """Whether edge values go into this input: a float input whose declared domain
    leaves some (an undeclared integer input of a shape-function operator gets none)."""
    if dtype is None or not is_float(dtype):
        return False
    return domain_edges(dtype, inp.values).size > 0


def _undeclared(spec: OpSpec, inp: Input, dtype: str | None) -> bool:
    """An integer input of an operator with a shape function and no declared domain: its
    valid values are unknown (indices?), so it keeps the spec case's uniform draw."""
    return (not spec.elementwise and inp.values is None and dtype is not None
            and dtype != "bool" and not is_float(dtype))


def coverage_notes(spec: OpSpec) -> list[str]:
    """What the generator cannot do for this operator, and why, one line each (empty when
    every case of docs/validation.md's matrix is generated).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output, Case
        >>> s = OpSpec("Pick", domain="com.x", inputs=[Input("x"), Input("i", "int64")],
        ...            outputs=[Output("y")], types={"T": ("float32",)},
        ...            cases=[Case({"x": (4, 3), "i": (2,)}, ranges={"i": (0, 3)})])
        >>> _ = s.register_shape(lambda x, i: x)
        >>> print(coverage_notes(s)[0][:59])
        Pick: input 'i' holds integers and the operator has a shape
    """
    notes = []
    for inp in spec.inputs:
        ints = [d for d in spec.allowed_dtypes(inp.type) if _undeclared(spec, inp, d)]
        if ints:
            notes.append(
                f"{spec.name}: input {inp.name!r} holds integers and the operator has a shape "
                "function, so opsdk cannot tell which values are valid (indices into another "
                "input?): its values are drawn only as the spec's cases say, without edge "
                "values or distributions; declare them in spec.py, e.g. Input("
                f"{inp.name!r}, {inp.type!r}, values=Values(index_of='x', axis=0)) or "
                "values=Values(range=(lo, hi)) (docs/validation.md, Input domains)")
    varied = {k for c in spec.cases for k, v in c.attrs.items()
              if k in spec.attr_map and v != spec.attr_map[k].default}
    for a in spec.attrs:
        if not a.required and a.name not in varied:
            notes.append(
                f"{spec.name}: attribute {a.name!r} is tested only at its default "
                f"{a.default!r}: no case of spec.py sets another value, so a kernel that "
                f"ignored it would pass; add Case(shapes={{...}}, attrs={{{a.name!r}: ...}})")
    if not spec.elementwise and spec.cases and not any(
        _hard_base(c) for dts in spec.dtype_combinations()[:1] for c in _spec_cases(spec, dts)
    ):
        notes.append(
            f"{spec.name}: no case of spec.py has every input non-empty and at most "
            f"{_HARD_SIZE} elements in all, so no layout, edge-value or distribution case is "
            "generated; add a small Case(shapes={...}) to spec.py")
    return notes


def build_cases(spec: OpSpec) -> list[OpCase]:
    """Every case of the spec: each dtype combination x (spec.cases, the hard cases
    (layouts, edge values, distributions) and, for elementwise operators, the shape suite)
    x attribute sets. An operator with a shape function gets its hard cases on the shapes
    of its spec's cases (:func:`_hard_cases`).

    Raises SpecError, naming the fix, when the spec gives nothing to test (a shape
    function but no cases, or a required attribute that no case sets).

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("Neg", domain="com.x", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": ("float32",)})
        >>> [c.id for c in build_cases(s)][:3]
        ['float32-scalar', 'float32-empty', 'float32-empty3d']
    """
    if not spec.elementwise and not spec.cases:
        raise SpecError(
            f"{spec.name}: the spec has a shape function, so opsdk cannot invent input "
            "shapes; add cases=[Case(shapes={...}, attrs={...})] to spec.py"
        )
    attr_sets = _attr_sets(spec)
    if not attr_sets:
        required = [a.name for a in spec.attrs if a.required]
        raise SpecError(
            f"{spec.name}: required attribute(s) {required} have no default and no case "
            "sets them; add cases=[Case(shapes={...}, attrs={...})] to spec.py"
        )
    cases: list[OpCase] = []
    for dts in spec.dtype_combinations():
        base = _spec_cases(spec, dts)
        base += _elementwise_cases(spec, dts) if spec.elementwise else _hard_cases(spec, base, dts)
        for c in base:
            sets = [c.attrs] if c.attrs else attr_sets
            for attrs in sets:
                suffix = f"-{_attr_label(attrs)}" if len(attr_sets) > 1 and not c.attrs else ""
                cases.append(_with(c, id=c.id + suffix, attrs=dict(attrs)))
    return cases


def _with(c: OpCase, **changes: Any) -> OpCase:
    from dataclasses import replace

    return replace(c, **changes)


def make_inputs(spec: OpSpec, case: OpCase, seed: int) -> list[np.ndarray | None]:
    """Generate the inputs of ``case``, deterministically from ``seed``.

    Example:
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("Neg", domain="com.x", inputs=[Input("x")], outputs=[Output("y")],
        ...            types={"T": ("float32",)})
        >>> c = build_cases(s)[5]
        >>> make_inputs(s, c, 0)[0].shape
        (2, 3, 4)
    """
    rng = np.random.default_rng(case_seed(seed, case.id))
    arrays: list[np.ndarray | None] = []
    for inp, dt, shp in zip(spec.inputs, case.dtypes, case.shapes, strict=False):
        if dt is None or shp is None:
            arrays.append(None)
            continue
        a = _draw(spec, case, inp, dt, shp, rng)
        if case.edges and not _undeclared(spec, inp, dt):
            a = inject_edges(rng, a, dt, values=inp.values)
        if case.layout != "contiguous":
            a = non_contiguous(a, case.layout)
        arrays.append(a)
    while arrays and arrays[-1] is None:
        arrays.pop()
    return arrays


def _draw(spec: OpSpec, case: OpCase, inp: Input, dt: str, shp: Shape,
          rng: np.random.Generator) -> np.ndarray:
    """One input's values: from the case's range, else the declared domain's."""
    v = inp.values
    if v is not None and v.index_of is not None:
        return _indices(spec, case, inp, dt, shp, rng)
    rng_ = case.ranges.get(inp.name) or _clip_range(v.range if v is not None else None, dt)
    dist = "uniform" if _undeclared(spec, inp, dt) else case.distribution
    a = generate(rng, shp, dt, dist, rng_)
    if v is not None and v.integer and is_float(dt):
        a = np.rint(a.astype(np.float64)).astype(a.dtype)
    return a


def _clip_range(domain: tuple[float, float] | None, dt: str) -> tuple[float, float] | None:
    """The dtype's default draw range within a declared domain (the domain itself when
    they do not meet)."""
    if domain is None:
        return None
    lo, hi = default_range(dt)
    lo, hi = max(lo, domain[0]), min(hi, domain[1])
    return (lo, hi) if lo < hi else (float(domain[0]), float(domain[1]))


def _indices(spec: OpSpec, case: OpCase, inp: Input, dt: str, shp: Shape,
             rng: np.random.Generator) -> np.ndarray:
    """Indices into the input ``values.index_of`` names, along its axis."""
    v = inp.values
    assert v is not None and v.index_of is not None
    k = [i.name for i in spec.inputs].index(v.index_of)
    target = case.shapes[k]
    if target is None or not -len(target) <= v.axis < max(len(target), 1):
        raise SpecError(
            f"{spec.name}: case {case.id}: input {inp.name!r} holds indices into "
            f"{v.index_of!r} along axis {v.axis}, but {v.index_of!r} has shape {target}; "
            "give the case a shape for it with that axis, or fix Values(axis=...)")
    n = target[v.axis] if target else 1
    if n == 0 and int(np.prod(shp)) > 0:
        raise SpecError(
            f"{spec.name}: case {case.id}: input {inp.name!r} holds indices into axis "
            f"{v.axis} of {v.index_of!r}, which is empty (shape {target}); no index is valid: "
            "give that axis at least 1 element or make the index input empty")
    return rng.integers(0, max(n, 1), size=shp).astype(to_numpy(dt))


def sample_cases(cases: Sequence[OpCase]) -> list[OpCase]:
    """One representative case per dtype combination (for quick checks): the first
    contiguous, uniform, edge-free case whose inputs have 2 to 4096 elements."""
    picked: dict[tuple[str | None, ...], OpCase] = {}
    for c in cases:
        sizes = [int(np.prod(s)) for s in c.shapes if s is not None]
        plain = c.layout == "contiguous" and not c.edges and c.distribution == "uniform"
        if plain and sizes and all(2 <= n <= 4096 for n in sizes):
            picked.setdefault(c.dtypes, c)
    return list(picked.values())
