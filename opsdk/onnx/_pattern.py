"""Patterns: an operator's decomposition, written as its fallback function is, to find in a
model.

A pattern is a callable ``fn(fb)`` in the language of ``@SPEC.register_function``
(``fb.input``, ``fb.attr``, ``fb.op``, ``fb.opset``) plus :meth:`PatternBuilder.rotate_half`.
Built with a :class:`PatternBuilder`, it becomes a tree of terms in a canonical form that
absorbs the variants exporters write, so one pattern matches all of them:

* ``Cast``, ``CastLike`` and ``Identity`` are transparent (the Cast islands around float16
  and bfloat16 arithmetic);
* ``Pow(x, 2)`` is ``x * x``; ``Div(1, s)`` is ``Reciprocal(s)``; ``Div(a, s)`` is
  ``a * Reciprocal(s)``;
* ``Mul`` and ``Add`` are n-ary, in any operand order and association;
* ``ReduceMean``'s axes are the same as an attribute or an input, counted from the end;
* a constant ``Constant(value_float=fb.attr("epsilon"))`` captures the attribute's value
  from the model's constant; other constants must match within 1e-4.

Example:
    >>> from opsdk.spec import Input, OpSpec, Output
    >>> spec = OpSpec("Sq", domain="com.example", inputs=[Input("x")], outputs=[Output("y")],
    ...               types={"T": ("float32",)})
    >>> fb = PatternBuilder(spec, 17)
    >>> fb.op("Pow", fb.input("x"), fb.op("Constant", value_float=2.0))
    POp(op='Mul', args=(PVar(name='x'), PVar(name='x')), attrs=())
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from ..errors import SpecError
from ..spec import OpSpec
from ._functions import AttrRef

__all__ = ["PVar", "PAttr", "PConst", "POp", "PTerm", "Pattern", "PatternBuilder",
           "build_patterns", "NARY", "TRANSPARENT"]

#: Ops read as n-ary, in any operand order and association.
NARY = ("Mul", "Add")
#: Ops a pattern and a model are read through (their input is their value).
TRANSPARENT = ("Cast", "CastLike", "Identity")


@dataclass(frozen=True)
class PVar:
    """An operator input: binds to one model value, the same at every use."""

    name: str


@dataclass(frozen=True)
class PAttr:
    """A constant that carries attribute ``name``'s value."""

    name: str


@dataclass(frozen=True, eq=False)
class PConst:
    """A constant the model's must equal (within 1e-4, broadcast)."""

    value: np.ndarray


@dataclass(frozen=True, eq=False)
class POp:
    """A node in canonical form: ``attrs`` are the ones that must match."""

    op: str
    args: tuple[PTerm, ...]
    attrs: tuple[tuple[str, Any], ...] = ()


PTerm = PVar | PAttr | PConst | POp


@dataclass(frozen=True)
class Pattern:
    """One variant: its outputs (the first is the match's root) and the attributes it fixes."""

    outputs: tuple[PTerm, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    label: str = ""


def _const_of(attrs: dict[str, Any]) -> PTerm:
    if len(attrs) != 1:
        raise SpecError(f"a pattern's Constant takes one value_* attribute, got {sorted(attrs)}")
    key, value = next(iter(attrs.items()))
    if isinstance(value, AttrRef):
        return PAttr(value.name)
    if isinstance(value, onnx.TensorProto):
        return PConst(onnx.numpy_helper.to_array(value))
    return PConst(np.asarray(value))


def _scalar(t: PTerm) -> float | None:
    if isinstance(t, PConst) and t.value.size == 1:
        return float(np.asarray(t.value, np.float64).ravel()[0])
    return None


def _flat(op: str, args: Sequence[PTerm]) -> tuple[PTerm, ...]:
    out: list[PTerm] = []
    for a in args:
        out += list(a.args) if isinstance(a, POp) and a.op == op else [a]
    return tuple(out)


def canonical(op: str, args: Sequence[PTerm], attrs: dict[str, Any]) -> PTerm:
    """The canonical form of one pattern node (see the module docstring)."""
    if op == "Pow" and _scalar(args[1]) == 2.0:
        return POp("Mul", (args[0], args[0]))
    if op == "Div":
        recip = POp("Reciprocal", (args[1],))
        return recip if _scalar(args[0]) == 1.0 else POp("Mul", _flat("Mul", [args[0], recip]))
    if op in NARY:
        return POp(op, _flat(op, args))
    if op == "ReduceMean":
        axes = attrs.get("axes")
        if axes is None and len(args) > 1 and isinstance(args[1], PConst):
            axes = args[1].value.ravel().tolist()
        return POp(op, (args[0],), (("axes", tuple(int(a) for a in axes or ())),
                                    ("keepdims", int(attrs.get("keepdims", 1)))))
    kept = tuple(sorted((k, v) for k, v in attrs.items() if isinstance(v, int | float | str)))
    return POp(op, tuple(args), kept)


class PatternBuilder:
    """Builds one pattern: the ``fb`` a pattern callable (or a fallback function) gets.

    Example:
        >>> fb = PatternBuilder(spec, 18)  # doctest: +SKIP
        >>> y = fb.op("Mul", fb.input("x"), fb.op("Sigmoid", fb.input("x")))  # doctest: +SKIP
    """

    def __init__(self, spec: OpSpec, opset: int) -> None:
        self.spec = spec
        self.opset = opset

    def input(self, name: str) -> PVar:
        """Spec input ``name`` (checked)."""
        if name not in [i.name for i in self.spec.inputs]:
            raise SpecError(f"{self.spec.name}: a pattern reads input {name!r}; inputs are "
                            f"{[i.name for i in self.spec.inputs]}")
        return PVar(name)

    def attr(self, name: str) -> AttrRef:
        """Spec attribute ``name``, for ``Constant(value_float=fb.attr(name))``."""
        a = self.spec.attr_map.get(name)
        if a is None:
            raise SpecError(f"{self.spec.name}: a pattern refers to attribute {name!r}; "
                            f"declared: {', '.join(self.spec.attr_map) or 'none'}")
        return AttrRef(name, a.type)

    def op(self, op_type: str, *inputs: Any, outputs: int = 1, domain: str = "",
           version: int | None = None, **attrs: Any) -> PTerm:
        """One node; Cast/CastLike/Identity return their input."""
        if outputs != 1 or domain not in ("", "ai.onnx"):
            raise SpecError(f"{self.spec.name}: a pattern's nodes are ai.onnx nodes with one "
                            f"output ({op_type} has {outputs}, domain {domain!r}); write a "
                            "Split as two Slices, rotate-half as fb.rotate_half(x)")
        if op_type in TRANSPARENT:
            return inputs[0]
        if op_type == "Constant":
            return _const_of(attrs)
        if any(i is None or isinstance(i, str) for i in inputs):
            raise SpecError(f"{self.spec.name}: pattern node {op_type} has an input that is "
                            "not a term of the pattern (an empty or named input)")
        return canonical(op_type, inputs, attrs)

    def rotate_half(self, x: PTerm) -> PTerm:
        """``cat(-x2, x1)`` of x's halves on the last axis, as ``Slice``/``Concat`` or
        ``Split``/``Concat`` (Hugging Face's ``rotate_half``)."""
        return POp("RotateHalf", (x,))


def build_patterns(spec: OpSpec, opset: int) -> list[Pattern]:
    """The operator's patterns at ``opset``: its fallback function first, then those
    ``@SPEC.register_pattern`` adds. A callable that cannot be read as a pattern is
    skipped when it is the fallback function (it may use what patterns cannot), and an
    error naming it otherwise.

    Example:
        >>> [p.label for p in build_patterns(spec, 17)]  # doctest: +SKIP
        ['the fallback function', 'pattern _rotate_half']
    """
    found: list[Pattern] = []
    sources: list[tuple[Callable[..., Any], dict[str, Any], str]] = []
    if spec.function is not None:
        sources.append((spec.function, {}, "the fallback function"))
    for fn, attrs in spec.patterns:
        sources.append((fn, dict(attrs), f"pattern {getattr(fn, '__name__', 'pattern')}"))
    for fn, attrs, label in sources:
        try:
            result = fn(PatternBuilder(spec, opset))
        except (SpecError, KeyError, IndexError, TypeError, ValueError) as e:
            if label == "the fallback function":
                continue
            raise SpecError(f"{spec.name}: {label} cannot be read as a pattern: {e}") from None
        outs = tuple(result) if isinstance(result, tuple | list) else (result,)
        if not isinstance(outs[0], POp):
            continue  # an input or a constant: nothing to find
        found.append(Pattern(outs, attrs, label))
    return found
