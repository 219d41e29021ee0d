"""Find an operator's patterns (:mod:`._pattern`) in a model's main graph.

The model is read in the patterns' canonical form, node by node as the match needs it:
float ``Cast``/``CastLike``/``Identity`` are read through, ``Pow(x, 2)`` as ``x * x``,
``Div(1, s)`` as ``Reciprocal(s)`` and ``Div(a, s)`` as ``a * Reciprocal(s)``, ``Mul``/``Add``
trees as n-ary products and sums cut any way that gives the pattern's number of operands,
``ReduceMean``'s axes from an attribute or an input counted from the end, and Hugging Face's
``rotate_half`` (``Concat(Neg(x[..., h:]), x[..., :h])`` with ``Slice`` or ``Split``, ``2h``
= x's last dim) as one ``RotateHalf``. A pattern input binds to the value the model computes
it from, read back through Casts that only widen (float16/bfloat16 to float32), so a fused
node takes the model's own dtype. A match is kept only when none of its intermediates is
read outside it or is a graph output (a second pattern output may be: it becomes the fused
node's output).

Example:
    >>> matches = find_matches(model, spec, build_patterns(spec, 17))  # doctest: +SKIP
    >>> [(m.label, len(m.nodes)) for m in matches]  # doctest: +SKIP
    [('/n1/Mul_1', 11)]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto

from ..spec import OpSpec
from ._constants import GraphConstants
from ._model import attribute_value, consumers_of, is_standard_domain, node_label, tensor_type_of
from ._pattern import NARY, TRANSPARENT, Pattern, PAttr, PConst, PTerm, PVar

__all__ = ["DecompositionMatch", "find_matches"]

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_WIDTH = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}

#: A model term: a value name, or ("Reciprocal", term) read from a Div.
Term = Any


@dataclass(frozen=True)
class _Env:
    binds: tuple[tuple[str, str], ...] = ()
    attrs: tuple[tuple[str, float], ...] = ()
    nodes: frozenset[int] = frozenset()
    seen: tuple[tuple[int, Term], ...] = ()  # id(pattern term) -> model term

    def bound(self, name: str) -> str | None:
        return dict(self.binds).get(name)

    def with_nodes(self, nodes: set[int] | frozenset[int]) -> _Env:
        return replace(self, nodes=self.nodes | nodes)


@dataclass(frozen=True)
class DecompositionMatch:
    """One found decomposition: the spec inputs bound to model values, the captured
    attributes, the nodes it spans, and the model value of each pattern output (the first is
    the root; None where the model has no value for it)."""

    inputs: dict[str, str]
    attrs: dict[str, Any]
    nodes: frozenset[int]
    outputs: tuple[str | None, ...]
    label: str
    pattern: str


class _Reader:
    """The model's main graph read in canonical form."""

    def __init__(self, model: ModelProto, types: dict[str, Any]) -> None:
        g = model.graph
        self.nodes = list(g.node)
        self.producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
        self.readers = consumers_of(g)
        self.consts = GraphConstants(g)
        self.graph_outputs = {o.name for o in g.output}
        self.types = {k: tensor_type_of(v) for k, v in types.items()}

    def _node(self, value: str) -> tuple[int, NodeProto] | None:
        idx = self.producer.get(value)
        if idx is None or not is_standard_domain(self.nodes[idx].domain):
            return None
        return idx, self.nodes[idx]

    def dtype(self, value: str) -> str | None:
        t = self.types.get(value)
        return t.dtype if t is not None else None

    def rank(self, value: str) -> int | None:
        t = self.types.get(value)
        return None if t is None or not isinstance(t.shape, tuple) else len(t.shape)

    def _transparent(self, value: str) -> tuple[int, str] | None:
        """The node and its input when ``value`` is a float Cast/CastLike/Identity of it."""
        found = self._node(value)
        if found is None or found[1].op_type not in TRANSPARENT or not found[1].input:
            return None
        idx, node = found
        src = node.input[0]
        if self.consts.is_constant(value) or node.op_type != "Identity" and (
                self.dtype(src) not in _FLOATS or self.dtype(value) not in _FLOATS):
            return None
        return idx, src

    def strip(self, value: str) -> tuple[str, set[int]]:
        """``value`` read through float Casts; the Cast nodes passed."""
        passed: set[int] = set()
        while (step := self._transparent(value)) is not None:
            passed.add(step[0])
            value = step[1]
        return value, passed

    def bind_value(self, value: str) -> str:
        """The value a pattern input stands for: read back through Casts that only widen."""
        while (step := self._transparent(value)) is not None:
            src = step[1]
            a, b = self.dtype(src), self.dtype(value)
            if a is None or b is None or _WIDTH.get(b, 0) < _WIDTH.get(a, 99):
                break
            value = src
        return value

    def const(self, term: Term) -> np.ndarray | None:
        return self.consts.value(term) if isinstance(term, str) else None

    def scalar(self, term: Term) -> float | None:
        v = self.const(term)
        if v is None or v.size != 1 or v.dtype.kind not in "fiu":
            return None
        return float(np.asarray(v, np.float64).ravel()[0])

    def view(self, term: Term) -> tuple[str, list[Term], dict[str, Any], set[int]] | None:
        """``(op, args, attrs, nodes)`` of ``term`` in canonical form, or None for a leaf."""
        if isinstance(term, tuple):
            return "Reciprocal", [term[1]], {}, set()
        value, passed = self.strip(term)
        found = self._node(value)
        if found is None or self.consts.is_constant(value):
            return None
        idx, node = found
        nodes = passed | {idx}
        op, ins = node.op_type, list(node.input)
        attrs = {a.name: attribute_value(a) for a in node.attribute}
        if op == "Pow" and len(ins) == 2 and self.scalar(ins[1]) == 2.0:
            return "Mul", [ins[0], ins[0]], {}, nodes
        if op == "Div":
            if self.scalar(ins[0]) == 1.0:
                return "Reciprocal", [ins[1]], {}, nodes
            return "Mul", [ins[0], ("Reciprocal", ins[1])], {}, nodes
        if op == "ReduceMean":
            return self._reduce_mean(ins, attrs, nodes)
        if op == "Concat" and len(ins) == 2:
            rot = self._rotate_half(node, nodes)
            if rot is not None:
                return rot
        return op, ins, attrs, nodes

    def _axes(self, axes: Sequence[int], value: str) -> tuple[int, ...] | None:
        rank = self.rank(value)
        if any(a >= 0 for a in axes) and rank is None:
            return None
        return tuple(sorted(a - rank if a >= 0 and rank is not None else a for a in axes))

    def _reduce_mean(self, ins: list[str], attrs: dict[str, Any], nodes: set[int]
                     ) -> tuple[str, list[Term], dict[str, Any], set[int]] | None:
        axes = attrs.get("axes")
        if axes is None and len(ins) > 1 and ins[1]:
            given = self.const(ins[1])
            axes = None if given is None else given.ravel().tolist()
        norm = None if axes is None else self._axes([int(a) for a in axes], ins[0])
        if norm is None:
            return None
        return "ReduceMean", [ins[0]], {"axes": norm,
                                        "keepdims": int(attrs.get("keepdims", 1))}, nodes

    def _halves(self, first: str, second: str) -> tuple[str, set[int]] | None:
        """The source x when ``first`` is x's second half and ``second`` its first half on
        the last axis (Slice or Split), with their nodes."""
        a, b = self._node(first), self._node(second)
        if a is None or b is None:
            return None
        if a[0] == b[0] and a[1].op_type == "Split":
            return self._split_halves(a[1], first, second, a[0])
        if a[1].op_type != "Slice" or b[1].op_type != "Slice" or a[1].input[0] != b[1].input[0]:
            return None
        src = a[1].input[0]
        t = self.types.get(src)
        d = t.shape[-1] if t is not None and t.shape else None
        hi, lo = self._slice(a[1], src, d), self._slice(b[1], src, d)
        if hi is None or lo is None or hi[0] != "half" or hi[1] != "end" or lo != (0, "half"):
            return None
        return src, {a[0], b[0]}

    def _slice(self, node: NodeProto, src: str, d: object) -> tuple[object, object] | None:
        """(start, end) of a one-axis, step-1 Slice on ``src``'s last axis, each an int or
        "half" (of the last dim, ``d`` or computed from ``Shape``) or "end"."""
        ins = list(node.input) + [""] * (5 - len(node.input))
        parts = [self.const(i) if i else None for i in ins[3:5]]
        axes = [-1] if parts[0] is None else parts[0].ravel().tolist()
        steps = [1] if parts[1] is None else parts[1].ravel().tolist()
        if self._axes([int(a) for a in axes], src) != (-1,) or steps != [1]:
            return None
        bounds = [self._bound(v, src, d) for v in ins[1:3]]
        if None in bounds:
            return None
        return bounds[0], bounds[1]

    def _bound(self, value: str, src: str, d: object) -> object:
        """A Slice bound: an int, "half" of src's last dim, "end" (it or beyond), or None."""
        given = self.const(value) if value else None
        if given is not None:
            if given.size != 1 or given.dtype.kind not in "iu":
                return None
            k = int(given.ravel()[0])
            if isinstance(d, int):
                return "half" if 2 * k == d else "end" if k >= d else k
            return "end" if k >= 2**31 - 1 else k
        return "half" if self._runtime_half(value, src) else None

    def _runtime_half(self, value: str, src: str) -> bool:
        """``value`` is ``Shape(src)[-1] / 2`` as exporters compute it with dynamic axes:
        through Unsqueeze/Squeeze/Cast/Reshape, a ``Div`` by 2, a ``Gather`` of the last
        dim of ``Shape(src)`` (or ``Shape(src, start=-1)``)."""
        seen = 0
        while (found := self._node(value)) is not None and seen < 8:
            seen += 1
            node = found[1]
            if node.op_type in ("Unsqueeze", "Squeeze", "Cast", "Reshape", "Identity"):
                value = node.input[0]
                continue
            if node.op_type != "Div" or self.scalar(node.input[1]) != 2.0:
                return False
            return self._last_dim(node.input[0], src)
        return False

    def _last_dim(self, value: str, src: str) -> bool:
        found = self._node(value)
        if found is None:
            return False
        node = found[1]
        attrs = {a.name: attribute_value(a) for a in node.attribute}
        if node.op_type == "Shape":
            return node.input[0] == src and attrs.get("start") == -1 and "end" not in attrs
        if node.op_type != "Gather" or self.scalar(node.input[1]) is None:
            return False
        shape = self._node(node.input[0])
        if shape is None or shape[1].op_type != "Shape" or shape[1].input[0] != src \
                or len(shape[1].attribute):
            return False
        index = int(self.scalar(node.input[1]) or 0)
        return self._axes([index], src) == (-1,)

    def _split_halves(self, node: NodeProto, first: str, second: str, idx: int
                      ) -> tuple[str, set[int]] | None:
        if list(node.output) != [second, first]:
            return None
        attrs = {a.name: attribute_value(a) for a in node.attribute}
        src = node.input[0]
        if self._axes([int(attrs.get("axis", 0))], src) != (-1,):
            return None
        sizes = attrs.get("split")
        if sizes is None and len(node.input) > 1 and node.input[1]:
            given = self.const(node.input[1])
            sizes = None if given is None else given.ravel().tolist()
        if sizes is not None and (len(sizes) != 2 or sizes[0] != sizes[1]):
            return None
        return src, {idx}

    def _rotate_half(self, concat: NodeProto, nodes: set[int]
                     ) -> tuple[str, list[Term], dict[str, Any], set[int]] | None:
        attrs = {a.name: attribute_value(a) for a in concat.attribute}
        neg_value, x1 = self.strip(concat.input[0])[0], concat.input[1]
        neg = self._node(neg_value)
        if neg is None or neg[1].op_type != "Neg":
            return None
        x2, x2_casts = self.strip(neg[1].input[0])
        x1, x1_casts = self.strip(x1)
        halves = self._halves(x2, x1)
        if halves is None or self._axes([int(attrs.get("axis", 0))], halves[0]) != (-1,):
            return None
        parts = nodes | {neg[0]} | x2_casts | x1_casts | halves[1]
        return "RotateHalf", [halves[0]], {}, parts

    # ------------------------------------------------------------------- matching
    def cuts(self, term: Term, op: str, budget: int, top: bool
             ) -> Iterator[tuple[list[Term], set[int]]]:
        """The ways to read ``term`` as an ``op`` of up to ``budget`` operands."""
        if not top:
            yield [term], set()
        view = self.view(term)
        if view is None or view[0] != op or budget < 2:
            return
        args, nodes = view[1], view[3]
        options = [list(self.cuts(a, op, budget - len(args) + 1, False)) for a in args]
        for combo in itertools.product(*options):
            factors = [f for part, _ in combo for f in part]
            if len(factors) <= budget:
                yield factors, nodes.union(*(n for _, n in combo))

    def match(self, p: PTerm, t: Term, env: _Env) -> Iterator[_Env]:
        if isinstance(p, PVar):
            yield from self._match_var(p, t, env)
        elif isinstance(p, PAttr | PConst):
            yield from self._match_const(p, t, env)
        elif p.op in NARY:
            for factors, nodes in self.cuts(t, p.op, len(p.args), True):
                if len(factors) == len(p.args):
                    for perm in itertools.permutations(factors):
                        yield from self._match_seq(p.args, perm, self._seen(env, p, t, nodes))
        else:
            view = self.view(t)
            if view is None or view[0] != p.op or len(view[1]) != len(p.args):
                return
            if any(view[2].get(k) != v for k, v in p.attrs):
                return
            yield from self._match_seq(p.args, view[1], self._seen(env, p, t, view[3]))

    @staticmethod
    def _seen(env: _Env, p: PTerm, t: Term, nodes: set[int]) -> _Env:
        return replace(env.with_nodes(nodes), seen=(*env.seen, (id(p), t)))

    def _match_var(self, p: PVar, t: Term, env: _Env) -> Iterator[_Env]:
        if not isinstance(t, str):
            return
        value = self.bind_value(t)
        prev = env.bound(p.name)
        if prev is None:
            yield replace(env, binds=(*env.binds, (p.name, value)))
        elif prev == value:
            yield env

    def _match_const(self, p: PAttr | PConst, t: Term, env: _Env) -> Iterator[_Env]:
        if isinstance(p, PConst):
            got = self.const(t)
            want = np.asarray(p.value, np.float64)
            if got is not None and got.dtype.kind in "fiu" and _close(got, want):
                yield env
            return
        v = self.scalar(t)
        if v is None:
            return
        prev = dict(env.attrs).get(p.name)
        if prev is None:
            yield replace(env, attrs=(*env.attrs, (p.name, v)))
        elif np.isclose(prev, v, rtol=1e-6, atol=0.0):
            yield env

    def _match_seq(self, ps: Sequence[PTerm], ts: Sequence[Term], env: _Env) -> Iterator[_Env]:
        if not ps:
            yield env
            return
        for e in self.match(ps[0], ts[0], env):
            yield from self._match_seq(ps[1:], ts[1:], e)

    def closed(self, env: _Env, exposed: set[str]) -> bool:
        """No intermediate is read outside the match or is a graph output (``exposed``
        values become the fused node's outputs), and no input is made inside it."""
        for idx in env.nodes:
            for out in self.nodes[idx].output:
                if out in exposed or not out:
                    continue
                if out in self.graph_outputs or not set(self.readers.get(out, [])) <= env.nodes:
                    return False
        return all(self.producer.get(v) not in env.nodes for _, v in env.binds)


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    try:
        g = np.broadcast_to(np.asarray(got, np.float64), np.broadcast_shapes(got.shape,
                                                                              want.shape))
    except ValueError:
        return False
    return bool(np.allclose(g, want, rtol=1e-4, atol=0.0))


def find_matches(model: ModelProto, spec: OpSpec, patterns: Sequence[Pattern],
                 types: dict[str, Any]) -> list[DecompositionMatch]:
    """Every place of the main graph one of ``patterns`` of ``spec`` matches, without
    overlap, the outermost first (see the module docstring)."""
    r = _Reader(model, types)
    used: set[int] = set()
    found = []
    for idx in reversed(range(len(r.nodes))):
        node = r.nodes[idx]
        if idx in used or not node.output or not is_standard_domain(node.domain):
            continue
        for pattern in patterns:
            match = _first(r, pattern, node.output[0], used)
            if match is not None:
                used |= match.nodes
                found.append(replace(match, label=node_label(node, idx)))
                break
    return found[::-1]


def _first(r: _Reader, pattern: Pattern, root: str, used: set[int]
           ) -> DecompositionMatch | None:
    for env in r.match(pattern.outputs[0], root, _Env()):
        if env.nodes & used:
            continue
        seen = dict(env.seen)
        others = [seen.get(id(p)) for p in pattern.outputs[1:]]
        outs = tuple(o if isinstance(o, str) and r.producer.get(o) in env.nodes else None
                     for o in others)
        if not r.closed(env, {root, *(o for o in outs if o)}):
            continue
        attrs = {**dict(env.attrs), **pattern.attrs}
        return DecompositionMatch(dict(env.binds), attrs, env.nodes, (root, *outs), "",
                                  pattern.label)
    return None
