"""Find the GELU decompositions exporters write and fold each into one Gelu node.

torch writes a ``Gelu`` node only at ai.onnx opset >= 20; below it (every model CANN 8's
parser reads) nn.GELU becomes, in the node orders of the TorchScript and dynamo exporters:

* exact: ``x * 0.5 * (1 + Erf(x / sqrt(2)))`` (``Div`` by 1.4142135, or ``Mul`` by 0.70710677);
* tanh: ``0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` with ``x^3`` as
  ``Pow(x, 3)`` or ``x * (x * x)``.

The match is algebraic: products are read in any operand order and association, and each
intermediate must have exactly one reader and be no graph output.

Example:
    >>> matches = find_gelu(model)  # doctest: +SKIP
    >>> [(m.approximate, m.output) for m in matches]  # doctest: +SKIP
    [('none', '/1/Mul_1_output_0')]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import ModelProto, NodeProto

from ._constants import GraphConstants
from ._model import consumers_of, is_standard_domain, node_label

__all__ = ["GeluMatch", "find_gelu"]

_SQRT2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715


@dataclass(frozen=True)
class GeluMatch:
    """One decomposition: its input, its output, the nodes it spans and its form."""

    x: str
    output: str
    nodes: tuple[int, ...]  # indices in graph.node, the last one producing ``output``
    approximate: str  # "none" (Erf) or "tanh"
    label: str


class _NoMatch(Exception):
    pass


class _Matcher:
    """Lookups over the main graph."""

    def __init__(self, model: ModelProto) -> None:
        g = model.graph
        self.nodes = list(g.node)
        self.producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
        self.readers = consumers_of(g)
        self.consts = GraphConstants(g)
        self.outputs = {o.name for o in g.output}

    def op(self, value: str, *types: str) -> tuple[int, NodeProto]:
        idx = self.producer.get(value)
        if idx is None:
            raise _NoMatch
        node = self.nodes[idx]
        if node.op_type not in types or not is_standard_domain(node.domain):
            raise _NoMatch
        return idx, node

    def scalar(self, value: str, want: float) -> bool:
        array = self.consts.value(value)
        if array is None or array.size != 1:
            return False
        return bool(np.isclose(float(np.asarray(array, np.float64).ravel()[0]), want,
                               rtol=1e-4, atol=0.0))

    def single(self, value: str) -> int:
        """The one node reading ``value`` (an intermediate of the pattern)."""
        readers = self.readers.get(value, [])
        if len(readers) != 1 or value in self.outputs:
            raise _NoMatch
        return readers[0]

    def mul_by(self, node: NodeProto, want: float) -> str:
        """The other operand of a Mul with the scalar ``want``."""
        a, b = node.input
        if self.scalar(b, want):
            return a
        if self.scalar(a, want):
            return b
        raise _NoMatch


def _erf_argument(m: _Matcher, value: str) -> tuple[str, list[int]]:
    """``x`` of ``x / sqrt(2)`` (Div) or ``x * (1 / sqrt(2))`` (Mul)."""
    idx, node = m.op(value, "Div", "Mul")
    if node.op_type == "Div":
        if not m.scalar(node.input[1], _SQRT2):
            raise _NoMatch
        return node.input[0], [idx]
    return m.mul_by(node, 1.0 / _SQRT2), [idx]


def _cube_of(m: _Matcher, value: str) -> tuple[str, list[int]]:
    """``x`` of ``Pow(x, 3)``, ``x * (x * x)`` or ``(x * x) * x``."""
    idx, node = m.op(value, "Pow", "Mul")
    if node.op_type == "Pow":
        if not m.scalar(node.input[1], 3.0):
            raise _NoMatch
        return node.input[0], [idx]
    for sq, x in (node.input, reversed(node.input)):
        try:
            sq_idx, sq_node = m.op(sq, "Mul")
        except _NoMatch:
            continue
        if list(sq_node.input) == [x, x] and m.single(sq) == idx:
            return x, [sq_idx, idx]
    raise _NoMatch


def _tanh_argument(m: _Matcher, value: str) -> tuple[str, list[int]]:
    """``x`` of ``sqrt(2/pi) * (x + 0.044715 * x^3)``."""
    idx, node = m.op(value, "Mul")
    inner = m.mul_by(node, _SQRT_2_OVER_PI)
    add_idx, add = m.op(inner, "Add")
    if m.single(inner) != idx:
        raise _NoMatch
    for x, v in (add.input, reversed(add.input)):
        try:
            v_idx, v_node = m.op(v, "Mul")
            cube = m.mul_by(v_node, _CUBIC)
            cube_x, cube_nodes = _cube_of(m, cube)
            if cube_x == x and m.single(v) == add_idx and m.single(cube) == v_idx:
                return x, [*cube_nodes, v_idx, add_idx, idx]
        except _NoMatch:
            continue
    raise _NoMatch


def _one_plus(m: _Matcher, core: int) -> tuple[str, int]:
    """The ``1 + core`` Add reading the Erf/Tanh output."""
    t = m.nodes[core].output[0]
    add_idx = m.single(t)
    add = m.nodes[add_idx]
    if add.op_type != "Add" or not is_standard_domain(add.domain):
        raise _NoMatch
    other = add.input[1] if add.input[0] == t else add.input[0]
    if not m.scalar(other, 1.0):
        raise _NoMatch
    return add.output[0], add_idx


def _times_half_x(m: _Matcher, a: str, x: str) -> tuple[str, list[int]]:
    """The output of ``a * x * 0.5`` in any association, and its Mul nodes."""
    m1 = m.single(a)
    n1 = m.nodes[m1]
    if n1.op_type != "Mul" or not is_standard_domain(n1.domain):
        raise _NoMatch
    other = n1.input[1] if n1.input[0] == a else n1.input[0]
    if other == x or m.scalar(other, 0.5):  # (a * x) * 0.5 or (a * 0.5) * x
        m2 = m.single(n1.output[0])
        n2 = m.nodes[m2]
        want = 0.5 if other == x else None
        if n2.op_type != "Mul" or not is_standard_domain(n2.domain):
            raise _NoMatch
        last = n2.input[1] if n2.input[0] == n1.output[0] else n2.input[0]
        if (want is not None and m.scalar(last, 0.5)) or (want is None and last == x):
            return n2.output[0], [m1, m2]
        raise _NoMatch
    h_idx, half = m.op(other, "Mul")  # a * (0.5 * x)
    if m.mul_by(half, 0.5) != x or m.single(other) != m1:
        raise _NoMatch
    return n1.output[0], [h_idx, m1]


def _match(m: _Matcher, core: int) -> GeluMatch:
    node = m.nodes[core]
    if node.op_type == "Erf":
        x, arg_nodes = _erf_argument(m, node.input[0])
        approximate = "none"
    else:
        x, arg_nodes = _tanh_argument(m, node.input[0])
        approximate = "tanh"
    if m.single(node.input[0]) != core:
        raise _NoMatch
    a, add_idx = _one_plus(m, core)
    out, mul_nodes = _times_half_x(m, a, x)
    nodes = tuple(sorted({*arg_nodes, core, add_idx, *mul_nodes}))
    if nodes[-1] != m.producer[out]:
        raise _NoMatch
    return GeluMatch(x, out, nodes, approximate, node_label(m.nodes[nodes[-1]], nodes[-1]))


def find_gelu(model: ModelProto) -> list[GeluMatch]:
    """Every GELU decomposition in the main graph (see the module docstring)."""
    m = _Matcher(model)
    found = []
    for idx, node in enumerate(m.nodes):
        if node.op_type in ("Erf", "Tanh") and is_standard_domain(node.domain):
            try:
                found.append(_match(m, idx))
            except _NoMatch:
                continue
    return found
