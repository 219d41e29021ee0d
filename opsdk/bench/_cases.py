"""What `opsdk bench OP` runs by default, and turning ``--shape`` into input arrays.

Each shipped operator has a default benchmark (shapes, attributes, value ranges, and
whether it is memory-bound or compute-bound). ``--shape`` gives input shapes by position
(``4096x1024``) or by name (``Scale=1024``); inputs it leaves out are derived where that
is unambiguous (LayerNormalization's Scale and B from X and the axis, the other inputs of
an elementwise operator from the first), else the error lists the inputs to give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._limits import allocation_problem
from ..dtypes import to_numpy
from ..errors import SpecError
from ..spec import OpSpec

__all__ = ["BenchCase", "DEFAULT_CASES", "parse_shape", "resolve_shapes", "make_inputs",
           "conv_flops"]

Shape = tuple[int, ...]


def conv_flops(
    shapes: Mapping[str, Shape], out_shapes: Sequence[Shape], attrs: Mapping[str, Any]
) -> float:
    """Multiply-adds x 2 of an NCHW convolution: 2 * N*M*OH*OW * (C/group)*kH*kW."""
    w = shapes["w"]
    n, m, oh, ow = out_shapes[0]
    return 2.0 * n * m * oh * ow * w[1] * w[2] * w[3]


@dataclass(frozen=True)
class BenchCase:
    """Default benchmark of one operator: ``shapes`` memory-bound, ``small`` cache-resident."""

    shapes: Mapping[str, Shape]
    small: Mapping[str, Shape]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    flops: Callable[[Mapping[str, Shape], Sequence[Shape], Mapping[str, Any]], float] | None = None


_SIXTEEN_M = (4096, 4096)  # 64 MiB per float32 array: memory-bound
_ONE_M = (1024, 1024)  # 4 MiB per float32 array: cache-resident
_CONV = {"x": (1, 64, 56, 56), "w": (64, 64, 3, 3), "b": (64,)}  # compute-bound either way
DEFAULT_CASES: dict[str, BenchCase] = {
    "ThresholdedRelu": BenchCase({"x": _SIXTEEN_M}, {"x": _ONE_M}, {"alpha": 0.5}),
    "Gelu": BenchCase({"X": _SIXTEEN_M}, {"X": _ONE_M}),
    "LayerNormalization": BenchCase(
        {"X": (16384, 1024), "Scale": (1024,), "B": (1024,)},
        {"X": (1024, 1024), "Scale": (1024,), "B": (1024,)},
    ),
    "Softmax": BenchCase({"input": (16384, 1024)}, {"input": _ONE_M}, {"axis": -1}),
    "FusedConvBnRelu": BenchCase(
        {**_CONV, "x": (8, 64, 56, 56)}, _CONV, {"pads": [1, 1, 1, 1]}, flops=conv_flops,
    ),
    "GridSample": BenchCase(
        {"x": (4, 32, 256, 256), "grid": (4, 256, 256, 2)},
        {"x": (4, 32, 64, 64), "grid": (4, 64, 64, 2)}, {"align_corners": 0},
        ranges={"grid": (-1.0, 1.0)},
    ),
}


def parse_shape(text: str) -> tuple[str | None, Shape]:
    """``"4096x1024"`` -> (None, (4096, 1024)); ``"Scale=1024"`` -> ("Scale", (1024,)).

    ``"scalar"`` or an empty dims part is a 0-d shape; ``,`` also separates dims.

    Example:
        >>> parse_shape("8x64x56x56"), parse_shape("B=1024")
        ((None, (8, 64, 56, 56)), ('B', (1024,)))
    """
    name, sep, dims = text.partition("=")
    if not sep:
        name, dims = "", text
    dims = dims.strip().lower()
    if dims in ("", "scalar", "()"):
        return (name or None, ())
    try:
        shape = tuple(int(d) for d in dims.replace(",", "x").split("x") if d.strip())
    except ValueError:
        raise SpecError(
            f"--shape {text!r}: expected dims like 4096x1024 (optionally NAME=4096x1024)"
        ) from None
    if any(d < 0 for d in shape):
        raise SpecError(f"--shape {text!r}: dims must be >= 0")
    return (name or None, shape)


def _derive(spec: OpSpec, shapes: dict[str, Shape], attrs: Mapping[str, Any]) -> None:
    if spec.name == "LayerNormalization" and "X" in shapes:
        x = shapes["X"]
        axis = int(attrs.get("axis", -1)) % max(len(x), 1)
        for n in ("Scale", "B"):
            shapes.setdefault(n, x[axis:])
    elif spec.elementwise and shapes:
        first = next(iter(shapes.values()))
        for inp in spec.inputs:
            if not inp.optional:
                shapes.setdefault(inp.name, first)


def resolve_shapes(
    spec: OpSpec, given: Sequence[str] | None, attrs: Mapping[str, Any], small: bool = False
) -> dict[str, Shape]:
    """Input name -> shape from ``--shape`` values, defaults and derivation rules.

    Without ``given``, the default case's memory-bound shapes, or with ``small`` its
    cache-resident ones.
    """
    names = [i.name for i in spec.inputs]
    default = DEFAULT_CASES.get(spec.name)
    if not given:
        if default is not None:
            return dict(default.small if small else default.shapes)
        if spec.cases:
            biggest = max(spec.cases, key=lambda c: sum(int(np.prod(s)) for s in c.shapes.values()))
            return {k: tuple(v) for k, v in biggest.shapes.items()}
        if spec.elementwise:
            big = _ONE_M if small else _SIXTEEN_M
            return {i.name: big for i in spec.inputs if not i.optional}
        raise SpecError(f"{spec.name}: no default benchmark shape; pass --shape for "
                        f"{', '.join(names)}")
    shapes: dict[str, Shape] = {}
    for pos, text in enumerate(given):
        name, shape = parse_shape(text)
        if name is None:
            if pos >= len(names):
                raise SpecError(f"{spec.name}: {len(given)} --shape values for "
                                f"{len(names)} inputs ({', '.join(names)})")
            name = names[pos]
        if name not in names:
            raise SpecError(f"{spec.name}: --shape names unknown input {name!r}; inputs are "
                            f"{', '.join(names)}")
        shapes[name] = shape
    _derive(spec, shapes, attrs)
    missing = [i.name for i in spec.inputs if not i.optional and i.name not in shapes]
    if missing:
        example = " ".join(n + "=..." for n in missing)
        raise SpecError(f"{spec.name}: --shape gives no shape for input(s) "
                        f"{', '.join(missing)}; pass e.g. --shape {example}")
    for name, shape in shapes.items():  # 8 bytes an element: the widest dtype a bench makes
        problem = allocation_problem(shape, 8)
        if problem:
            raise SpecError(f"{spec.name}: --shape {name}={'x'.join(map(str, shape))} "
                            f"{problem}")
    return shapes


def make_inputs(
    spec: OpSpec,
    shapes: Mapping[str, Shape],
    dtype: str,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    seed: int = 0,
) -> list[np.ndarray | None]:
    """Uniform random inputs (float inputs of a type variable take ``dtype``)."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray | None] = []
    for inp in spec.inputs:
        if inp.name not in shapes:
            out.append(None)
            continue
        dt = dtype if inp.type in spec.types else inp.type
        allowed = spec.allowed_dtypes(inp.type)
        if dt not in allowed:
            raise SpecError(f"{spec.name}: --dtype {dtype} is not allowed for input "
                            f"{inp.name!r} (allowed: {', '.join(allowed)})")
        lo, hi = (ranges or {}).get(inp.name, (-3.0, 3.0))
        out.append(rng.uniform(lo, hi, shapes[inp.name]).astype(to_numpy(dt)))
    while out and out[-1] is None:
        out.pop()
    return out
