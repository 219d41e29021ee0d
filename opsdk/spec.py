"""The operator spec: the single source of truth for one operator.

An operator folder's ``spec.py`` defines ``SPEC``, an :class:`OpSpec`. Everything opsdk
generates (pybind11 dispatch checks, ONNX schema, CANN project, Triton config, tests)
is derived from it.

Example:
    >>> from opsdk.spec import OpSpec, Input, Output, Attr, TFloat
    >>> spec = OpSpec(
    ...     "ThresholdedRelu", domain="com.example",
    ...     inputs=[Input("x", "T")], outputs=[Output("y", "T")],
    ...     attrs=[Attr("alpha", "float", 1.0)], types={"T": TFloat},
    ... )
    >>> spec.op_type
    ('com.example', 'ThresholdedRelu', 1)
    >>> spec.infer([TensorType((2, 3), "float32")], {"alpha": 1.0})
    [TensorType(shape=(2, 3), dtype='float32')]
"""

from __future__ import annotations

import itertools
import keyword
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._limits import allocation_problem, float32_problem, int_range_problem
from .dtypes import ALL_DTYPES, ATTR_TYPES, DTYPES, TFloat, TFloatAll, TFloatBf, TInt, TNumeric
from .errors import SpecError
from .naming import CPP_KEYWORDS, OP_NAME_RE

__all__ = [
    "OpSpec",
    "Input",
    "Output",
    "Attr",
    "Case",
    "Values",
    "TensorType",
    "REQUIRED",
    "TFloat",
    "TFloatBf",
    "TFloatAll",
    "TInt",
    "TNumeric",
    "broadcast_shapes",
]

_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DOMAIN_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$")
#: What an operator computes on: the AI Core's Vector unit or its matrix (Cube) unit.
#: ATC's precision modes treat matrix operators differently (docs/validation.md).
COMPUTE_KINDS = ("vector", "cube")
#: dtypes NumPy itself names (bfloat16 is ml_dtypes', two bytes)
_NUMPY_SIZED = frozenset(d for d in ALL_DTYPES if d != "bfloat16")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Marker for an attribute without a default.
REQUIRED: Any = _Required()

Dim = int | str | None


@dataclass(frozen=True)
class TensorType:
    """A tensor's shape and dtype; a dim may be symbolic (str) or unknown (None)."""

    shape: tuple[Dim, ...]
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Values:
    """The values an input may hold: its domain, which opsdk's generated inputs respect.

    * ``range=(lo, hi)``: the finite values the operator is defined for. Inputs are drawn
      from the dtype's default range cut to it (unless a ``Case`` gives its own range),
      and edge values outside it are not injected.
    * ``integer=True``: whole numbers only (a float tensor of counts or class ids); drawn
      values are rounded and only whole-number edge values are injected.
    * ``index_of="x", axis=0``: indices into input ``x`` along ``axis``: drawn from
      ``[0, x.shape[axis])``; no edge values and no distributions (an index has none).
    * ``nan=False``, ``inf=False``: NaN, or +-Inf, are not injected (the operator does not
      define its result for them, e.g. a float32 sum of products whose order decides
      between Inf and NaN).

    Example:
        >>> from opsdk.spec import Input, Values
        >>> Input("idx", "int64", values=Values(index_of="x", axis=0)).values.index_of
        'x'
    """

    range: tuple[float, float] | None = None
    integer: bool = False
    index_of: str | None = None
    axis: int = 0
    nan: bool = True
    inf: bool = True


@dataclass(frozen=True)
class Input:
    """One operator input.

    ``type`` is a type variable of the spec's ``types`` (``"T"``) or a dtype name;
    ``values`` (:class:`Values`) declares the values it may hold, when not every value of
    its dtype is valid (indices, a value range, whole numbers).
    """

    name: str
    type: str = "T"
    optional: bool = False
    rank: int | None = None
    doc: str = ""
    values: Values | None = None


@dataclass(frozen=True)
class Output:
    """One operator output; ``type`` as for :class:`Input`.

    ``optional=True``: an output a graph node may leave out (an empty output name, or
    absent at the end); ONNX's checker, shape inference, opsdk's node checks and ``Session``
    accept such a node, and ``opsdk rewrite`` leaves it out where nothing reads it. The CPU
    kernel is still given a buffer for it (dropped afterwards). The first output is never
    optional.

    Example:
        >>> Output("rstd", "float32", optional=True).optional
        True
    """

    name: str
    type: str = "T"
    doc: str = ""
    optional: bool = False


@dataclass(frozen=True)
class Attr:
    """One attribute: type is one of int, float, bool, string, ints, floats."""

    name: str
    type: str
    default: Any = REQUIRED
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Case:
    """A test case the spec proposes: input shapes, attributes and value ranges."""

    shapes: Mapping[str, tuple[int, ...]]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    name: str = ""


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """NumPy broadcasting over possibly symbolic shapes.

    Example:
        >>> broadcast_shapes((2, 1), (3,))
        (2, 3)
        >>> broadcast_shapes(("N", 4), (4,))
        ('N', 4)
    """
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d != 1}
        if not known:
            out.append(1)
        elif len(known) == 1:
            out.append(known.pop())
        else:
            ints = {d for d in known if isinstance(d, int)}
            if len(ints) > 1:
                raise ValueError(f"shapes {', '.join(map(str, shapes))} do not broadcast")
            out.append(ints.pop() if ints else None)
    return tuple(out)


def _check_ident(op: str, what: str, name: str) -> None:
    if not _IDENT_RE.match(name) or keyword.iskeyword(name) or name in CPP_KEYWORDS:
        raise SpecError(
            f"{op}: {what} name {name!r} is not a valid Python and C++ identifier "
            "(use snake_case letters, digits and '_', not a keyword)"
        )


class OpSpec:
    """The typed description of one operator. See the module docstring for an example."""

    def __init__(
        self,
        name: str,
        *,
        domain: str,
        inputs: Sequence[Input],
        outputs: Sequence[Output],
        attrs: Sequence[Attr] = (),
        types: Mapping[str, Sequence[str]] | None = None,
        version: int = 1,
        doc: str = "",
        standard: str | Mapping[str, str] | None = None,
        batch_axis: int | None = None,
        onnx_op: str | None = None,
        cases: Sequence[Case] = (),
        elementwise: bool | None = None,
        compute: str = "vector",
    ) -> None:
        self.name = name
        self.domain = domain
        self.version = version
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.attrs = tuple(attrs)
        self.types = {k: tuple(v) for k, v in (types or {}).items()}
        self.doc = doc
        self.standard = standard
        self.batch_axis = batch_axis
        self.onnx_op = onnx_op
        self.cases = tuple(cases)
        self.compute = compute
        self._shape_fn: Callable[..., Any] | None = None
        self._reference: Callable[..., Any] | None = None
        self._function: Callable[..., Any] | None = None
        self._backward: Callable[..., Any] | None = None
        #: further forms of the decomposition to find in models (:meth:`register_pattern`)
        self.patterns: list[tuple[Callable[..., Any], dict[str, Any]]] = []
        self.elementwise = elementwise if elementwise is not None else True
        self.validate()

    # ------------------------------------------------------------------ identity
    @property
    def op_type(self) -> tuple[str, str, int]:
        """``(domain, name, version)`` as ONNX names an operator."""
        return (self.domain, self.name, self.version)

    @property
    def snake_name(self) -> str:
        """``MyOp`` -> ``my_op``; the folder, file and module spelling."""
        from .naming import snake_case

        return snake_case(self.name)

    @property
    def attr_map(self) -> dict[str, Attr]:
        return {a.name: a for a in self.attrs}

    def __repr__(self) -> str:
        return f"OpSpec({self.domain}::{self.name}:{self.version})"

    # ------------------------------------------------------------- validation
    def validate(self) -> None:
        """Check the spec is self-consistent; raise :class:`SpecError` naming the fix."""
        op = self.name
        if not isinstance(op, str) or not OP_NAME_RE.match(op) or op in CPP_KEYWORDS:
            raise SpecError(
                f"{op!r}: op name must be UpperCamelCase ([A-Z][A-Za-z0-9]*), e.g. 'MyOp'"
            )
        if not isinstance(self.domain, str) or not _DOMAIN_RE.match(self.domain):
            raise SpecError(
                f"{op}: domain {self.domain!r} must be a dotted lowercase name like 'com.example'"
            )
        if self.domain in ("", "ai.onnx", "ai.onnx.ml"):
            raise SpecError(f"{op}: domain {self.domain!r} is reserved by ONNX; use your own")
        if not isinstance(self.version, int) or self.version < 1:
            raise SpecError(f"{op}: version must be an int >= 1, got {self.version!r}")
        if not self.outputs:
            raise SpecError(f"{op}: outputs is empty; an operator needs at least one Output")
        for tv, dts in self.types.items():
            if not dts:
                raise SpecError(f"{op}: type variable {tv!r} has no dtypes; list at least one")
            for dt in dts:
                if dt not in ALL_DTYPES:
                    raise SpecError(
                        f"{op}: type variable {tv!r} lists unknown dtype {dt!r}; "
                        f"expected one of {', '.join(ALL_DTYPES)}"
                    )
        seen: set[str] = set()
        for kind, items in (("input", self.inputs), ("output", self.outputs)):
            for item in items:
                _check_ident(op, kind, item.name)
                if item.name in seen:
                    raise SpecError(f"{op}: {kind} name {item.name!r} is used twice")
                seen.add(item.name)
                if item.type not in self.types and item.type not in ALL_DTYPES:
                    raise SpecError(
                        f"{op}: {kind} {item.name!r} has type {item.type!r}, which is neither "
                        f"a type variable in types= ({', '.join(self.types) or 'none'}) "
                        f"nor a dtype; add types={{{item.type!r}: (...)}}"
                    )
        for inp in self.inputs:
            _check_values(self, inp)
        opt_seen = False
        for inp in self.inputs:
            if inp.optional:
                opt_seen = True
            elif opt_seen:
                raise SpecError(
                    f"{op}: required input {inp.name!r} follows an optional input; "
                    "put optional inputs last"
                )
        if self.outputs[0].optional:
            raise SpecError(f"{op}: the first output {self.outputs[0].name!r} is optional; "
                            "the first output is always computed: put optional outputs after it")
        for out in self.outputs:
            if out.type in self.types and not any(i.type == out.type for i in self.inputs):
                if len(self.types[out.type]) > 1:
                    raise SpecError(
                        f"{op}: output {out.name!r} has type {out.type!r} that no input binds; "
                        "give it a concrete dtype or bind the type variable with an input"
                    )
        anames: set[str] = set()
        for a in self.attrs:
            _check_ident(op, "attribute", a.name)
            if a.name in anames or a.name in seen:
                raise SpecError(f"{op}: attribute name {a.name!r} is used twice")
            anames.add(a.name)
            if a.type not in ATTR_TYPES:
                raise SpecError(
                    f"{op}: attribute {a.name!r} has type {a.type!r}; "
                    f"expected one of {', '.join(ATTR_TYPES)}"
                )
            if not a.required:
                try:
                    _coerce_attr(a, a.default)
                except SpecError as e:
                    raise SpecError(f"{op}: default of {e}") from None
        if self.compute not in COMPUTE_KINDS:
            raise SpecError(
                f"{op}: compute={self.compute!r}; expected 'vector' (elementwise and "
                "reduction work on the Vector unit) or 'cube' (matrix work: MatMul, Conv)"
            )
        if self.batch_axis is not None and not isinstance(self.batch_axis, int):
            raise SpecError(f"{op}: batch_axis must be an int or None")
        for case in self.cases:
            _check_ranges(op, case)

    # ---------------------------------------------------------------- behaviour
    def register_shape(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Attach shape/dtype inference; usable as a decorator.

        ``fn(*input_types, **attrs)`` gets :class:`TensorType` (or None for an absent
        optional input) and returns one TensorType or a list, one per output.
        """
        self._shape_fn = fn
        self.elementwise = False
        return fn

    def register_reference(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Attach the NumPy reference ``fn(*arrays, **attrs)``; usable as a decorator."""
        self._reference = fn
        return fn

    def register_function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Attach a decomposition into standard ONNX ops (see opsdk.onnx)."""
        self._function = fn
        return fn

    def register_pattern(
        self, fn: Callable[..., Any] | None = None, *, attrs: Mapping[str, Any] | None = None
    ) -> Any:
        """Add a form of the operator's decomposition for ``opsdk rewrite --replace NAME`` to
        find in models; usable as a decorator, once per variant.

        ``fn(fb)`` is written as the fallback function is (``fb.input``, ``fb.attr``,
        ``fb.op``; ``fb.rotate_half(x)`` too) and returns the outputs; ``attrs`` fixes
        attribute values the form implies. The fallback function is itself the first
        pattern; casts, operand order and the spellings of squares, reciprocals and axes are
        absorbed by the matcher (docs/onnx.md, Rewrites).

        Example:
            >>> spec = OpSpec("Silu", domain="com.example", inputs=[Input("x")],
            ...               outputs=[Output("y")], types={"T": ("float32",)})
            >>> @spec.register_pattern
            ... def _as_exported(fb):
            ...     x = fb.input("x")
            ...     return fb.op("Mul", x, fb.op("Sigmoid", x))
            >>> len(spec.patterns)
            1
        """
        def add(f: Callable[..., Any]) -> Callable[..., Any]:
            self.patterns.append((f, dict(attrs or {})))
            return f

        return add if fn is None else add(fn)

    def register_backward(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Attach the operator's own backward; usable as a decorator.

        ``fn(inputs, outputs, grads, **attrs)`` gets lists of torch tensors (an absent
        optional input is None) and the resolved attributes, and returns one gradient per
        input (None where there is none). ``opsdk.torch`` uses it for autograd in place of
        differentiating the decomposition.
        """
        self._backward = fn
        return fn

    @property
    def backward(self) -> Callable[..., Any] | None:
        return self._backward

    @property
    def reference(self) -> Callable[..., Any] | None:
        return self._reference

    @property
    def function(self) -> Callable[..., Any] | None:
        return self._function

    # --------------------------------------------------------------- type logic
    def allowed_dtypes(self, type_name: str) -> tuple[str, ...]:
        return self.types.get(type_name, (type_name,))

    def bind_types(self, input_dtypes: Sequence[str | None]) -> dict[str, str]:
        """Bind type variables from actual input dtypes; raise SpecError on a mismatch."""
        binding: dict[str, str] = {}
        for inp, dt in zip(self.inputs, input_dtypes):
            if dt is None:
                continue
            allowed = self.allowed_dtypes(inp.type)
            if dt not in allowed:
                raise SpecError(
                    f"{self.name}: input {inp.name!r} has dtype {dt}, expected "
                    f"{'one of ' if len(allowed) > 1 else ''}{', '.join(allowed)} (see spec.py)"
                )
            if inp.type in self.types:
                prev = binding.setdefault(inp.type, dt)
                if prev != dt:
                    other = next(i.name for i in self.inputs if i.type == inp.type)
                    raise SpecError(
                        f"{self.name}: input {inp.name!r} has dtype {dt} but {other!r} has "
                        f"{prev}; inputs of type {inp.type} must share one dtype"
                    )
        return binding

    def resolve_type(self, type_name: str, binding: Mapping[str, str]) -> str:
        """The dtype a type variable (or dtype name) stands for under ``binding``."""
        if type_name in self.types:
            return binding.get(type_name, self.types[type_name][0])
        return type_name

    def output_dtype(self, out: Output, binding: Mapping[str, str]) -> str:
        return self.resolve_type(out.type, binding)

    def dtype_combinations(self) -> list[tuple[str, ...]]:
        """Every combination of input dtypes the spec allows (one per kernel to register)."""
        tvars = list(dict.fromkeys(i.type for i in self.inputs if i.type in self.types))
        combos = []
        for values in itertools.product(*(self.types[t] for t in tvars)):
            bind = dict(zip(tvars, values))
            combos.append(tuple(bind.get(i.type, i.type) for i in self.inputs))
        return combos

    def resolve_attrs(self, attrs: Mapping[str, Any]) -> dict[str, Any]:
        """Fill defaults, coerce and check attribute values; raise SpecError naming the fix."""
        amap = self.attr_map
        for key in attrs:
            if key not in amap:
                known = ", ".join(amap) or "none"
                raise SpecError(
                    f"{self.name}: unknown attribute {key!r}; the spec declares: {known}"
                )
        out: dict[str, Any] = {}
        for a in self.attrs:
            if a.name in attrs:
                try:
                    out[a.name] = _coerce_attr(a, attrs[a.name])
                except SpecError as e:
                    raise SpecError(f"{self.name}: {e}") from None
            elif a.required:
                raise SpecError(
                    f"{self.name}: attribute {a.name!r} ({a.type}) is required; pass {a.name}=..."
                )
            else:
                out[a.name] = a.default
        return out

    def infer(
        self, input_types: Sequence[TensorType | None], attrs: Mapping[str, Any]
    ) -> list[TensorType]:
        """Output shapes and dtypes for given input types and resolved attributes."""
        n_req = sum(1 for i in self.inputs if not i.optional)
        if not (n_req <= len(input_types) <= len(self.inputs)):
            raise SpecError(
                f"{self.name}: expected {n_req}"
                f"{'' if n_req == len(self.inputs) else f' to {len(self.inputs)}'} inputs "
                f"({', '.join(i.name for i in self.inputs)}), got {len(input_types)}"
            )
        types = list(input_types) + [None] * (len(self.inputs) - len(input_types))
        for inp, tt in zip(self.inputs, types):
            if tt is None:
                if not inp.optional:
                    raise SpecError(f"{self.name}: required input {inp.name!r} is missing")
                continue
            if inp.rank is not None and tt.rank != inp.rank:
                raise SpecError(
                    f"{self.name}: input {inp.name!r} has rank {tt.rank} (shape "
                    f"{tuple(tt.shape)}), expected rank {inp.rank}"
                )
        binding = self.bind_types([t.dtype if t else None for t in types])
        if self._shape_fn is None:
            present = [t.shape for t in types if t is not None]
            try:
                shape = broadcast_shapes(*present)
            except ValueError as e:
                raise SpecError(f"{self.name}: input {e}") from None
            return [TensorType(shape, self.output_dtype(o, binding)) for o in self.outputs]
        try:
            result = self._shape_fn(*types, **attrs)
        except SpecError:
            raise
        except (ValueError, IndexError, TypeError) as e:
            raise SpecError(f"{self.name}: shape inference failed: {e}") from e
        result_list = [result] if isinstance(result, TensorType) else list(result)
        if len(result_list) != len(self.outputs):
            raise SpecError(
                f"{self.name}: shape function returned {len(result_list)} outputs, "
                f"spec declares {len(self.outputs)}"
            )
        return [TensorType(tuple(t.shape), t.dtype) for t in result_list]

    def check_allocation(self, out_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        """Refuse outputs that C++ or the memory cannot hold, before anything is allocated.

        Every concrete dim must fit int64 and every output the memory ceiling
        (``opsdk._limits.memory_ceiling``); the error names the output, its shape, the
        limit and the attributes set away from their defaults (often the cause).

        Example:
            >>> spec = OpSpec("Pad1", domain="com.example", inputs=[Input("x")],
            ...               outputs=[Output("y")], types={"T": ("float32",)})
            >>> spec.check_allocation([TensorType((2**62, 4), "float32")], {})
            ... # doctest: +ELLIPSIS
            Traceback (most recent call last):
            opsdk.errors.SpecError: Pad1: output 'y' (float32, shape (...)) needs ...
        """
        for out, t in zip(self.outputs, out_types):
            dims = tuple(d for d in t.shape if isinstance(d, int))
            item = np.dtype(DTYPES[t.dtype].numpy).itemsize if t.dtype in _NUMPY_SIZED else 2
            problem = allocation_problem(dims, item)
            if problem:
                raise SpecError(
                    f"{self.name}: output {out.name!r} ({t.dtype}, shape {tuple(t.shape)}) "
                    f"{problem}; check the input shapes and {self._set_attrs(attrs)}"
                )

    def _set_attrs(self, attrs: Mapping[str, Any]) -> str:
        """The attributes given away from their defaults, for an error message."""
        amap = self.attr_map
        changed = [f"{k}={v!r}" for k, v in attrs.items()
                   if k in amap and (amap[k].required or v != amap[k].default)]
        if not changed:
            return "the attributes (all at their defaults)"
        text = ", ".join(changed)
        return "the attributes " + (text if len(text) <= 200 else text[:197] + "...")


def _check_ranges(op: str, case: Case) -> None:
    """A case's value ranges: finite ``(lo, hi)`` with ``lo <= hi`` and a finite width
    (inputs are drawn uniformly from them; ``(-1e400, 1e400)`` was a bare OverflowError)."""
    for name, r in case.ranges.items():
        try:
            lo, hi = (float(v) for v in r)
            ok = lo <= hi and math.isfinite(hi - lo)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise SpecError(
                f"{op}: case {case.name or dict(case.shapes)!r}: range of input {name!r} is "
                f"{r!r}; expected finite (lo, hi) with lo <= hi and hi - lo a finite double, "
                "e.g. (-1.0, 1.0)")


class _OutOfRange(SpecError):
    """A number of the right type but beyond the range its attribute type can hold."""


def _check_values(spec: OpSpec, inp: Input) -> None:
    """Raise SpecError naming the fix when ``inp.values`` is not a usable domain."""
    v = inp.values
    if v is None:
        return
    where = f"{spec.name}: input {inp.name!r}: values="
    if not isinstance(v, Values):
        raise SpecError(f"{where}{v!r} is not a Values(...); write values=Values(range=(lo, hi)),"
                        " Values(integer=True) or Values(index_of='x', axis=0)")
    if v.range is not None:
        ok = (isinstance(v.range, (tuple, list)) and len(v.range) == 2
              and all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in v.range))
        if not ok or not (np.isfinite(v.range[0]) and np.isfinite(v.range[1])
                          and v.range[0] < v.range[1]):
            raise SpecError(f"{where}Values(range={v.range!r}): expected two finite numbers "
                            "(lo, hi) with lo < hi, e.g. range=(0.0, 1.0)")
    if v.index_of is None:
        return
    names = [i.name for i in spec.inputs]
    if v.index_of not in names or v.index_of == inp.name:
        raise SpecError(f"{where}Values(index_of={v.index_of!r}) names no other input; "
                        f"expected one of {', '.join(n for n in names if n != inp.name)}")
    if v.range is not None:
        raise SpecError(f"{where}Values gives both index_of and range; indices take their "
                        f"range from {v.index_of!r}'s shape: drop range")
    dtypes = spec.allowed_dtypes(inp.type)
    floats = [d for d in dtypes if d.startswith(("float", "bfloat")) or d == "bool"]
    if floats:
        raise SpecError(f"{where}Values(index_of={v.index_of!r}): an index input needs an "
                        f"integer type, but {inp.type!r} allows {', '.join(floats)}")
    if not isinstance(v.axis, int) or isinstance(v.axis, bool):
        raise SpecError(f"{where}Values(axis={v.axis!r}): expected an int (the axis of "
                        f"{v.index_of!r} the indices point into)")


def _coerce_attr(a: Attr, value: Any) -> Any:
    t = a.type
    bad = f"attribute {a.name!r} expects {t}, got {type(value).__name__} {value!r}"
    if t in ("int", "float"):
        if isinstance(value, (bool, str, bytes)) or isinstance(value, np.bool_):
            raise SpecError(bad)
        if t == "int":
            if isinstance(value, float) or not hasattr(value, "__index__"):
                raise SpecError(bad)
            number: int | float = int(value)
            problem = int_range_problem(int(number), "int64")
            where = "int attributes are int64 in C++ and ONNX"
        else:
            if not hasattr(value, "__float__"):
                raise SpecError(bad)
            try:
                number = float(value)
            except OverflowError:  # an int beyond any double
                number = math.inf if value > 0 else -math.inf
                problem = "is beyond any double"
            else:
                problem = float32_problem(number)
            where = "ONNX stores float attributes as float32"
        if problem:
            raise _OutOfRange(
                f"attribute {a.name!r} ({a.type}) value {value!r} {problem} ({where}); "
                "pass a value within it"
            )
        return number
    if t == "bool":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return bool(value)
        raise SpecError(bad)
    if t == "string":
        if not isinstance(value, str):
            raise SpecError(bad)
        return value
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise SpecError(bad)
    elem = Attr(a.name, "int" if t == "ints" else "float")
    out = []
    for i, v in enumerate(value):
        try:
            out.append(_coerce_attr(elem, v))
        except _OutOfRange as e:
            raise _OutOfRange(str(e).replace(f"{a.name!r} (", f"{a.name!r}[{i}] (", 1)) from None
        except SpecError:
            raise SpecError(bad) from None
    return out
