"""Constant tensors of a graph, however an exporter wrote them, and graph-input dims.

Exporters store weights in different ways: torch.onnx writes initializers, paddle2onnx
writes one ``Constant`` node per weight, and graph optimisers leave ``Identity`` or ``Cast``
nodes in front of either. :class:`GraphConstants` resolves a value name to its constant
array through all of these, and :func:`remove_dead_constants` drops what a rewrite left
unread. :func:`input_dims` reads a graph input's dims the way ONNX Runtime does: a
``dim_value`` of -1 or 0 (written by some exporters for a dynamic dim) is dynamic.

Example:
    >>> import onnx
    >>> from onnx import helper, TensorProto as T
    >>> g = helper.make_graph(
    ...     [helper.make_node("Constant", [], ["w"], value_floats=[1.0, 2.0]),
    ...      helper.make_node("Cast", ["w"], ["w16"], to=T.FLOAT16)],
    ...     "g", [], [helper.make_tensor_value_info("w16", T.FLOAT16, [2])])
    >>> GraphConstants(g).value("w16")
    array([1., 2.], dtype=float16)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, NodeProto, TensorShapeProto, helper, numpy_helper

__all__ = [
    "GraphConstants",
    "constant_node_value",
    "remove_dead_constants",
    "input_dims",
    "dim_form",
    "read_dim",
]

#: Nodes that pass a constant through: the result is constant when their input is.
_PASS_THROUGH = ("Identity", "Cast")


def constant_node_value(node: NodeProto) -> np.ndarray:
    """The tensor a ``Constant`` node produces, for every attribute form ONNX defines.

    Raises:
        ValueError: the node has no (or an unknown) value attribute.

    Example:
        >>> constant_node_value(helper.make_node("Constant", [], ["k"], value_int=3))
        array(3)
    """
    if len(node.attribute) != 1:
        raise ValueError(
            f"Constant node {node.name or node.output[0]!r} has {len(node.attribute)} "
            "attributes; ONNX requires exactly one (value, sparse_value or value_*)"
        )
    a = node.attribute[0]
    if a.name == "value":
        return numpy_helper.to_array(a.t)
    if a.name == "sparse_value":
        return _dense(a.sparse_tensor)
    scalars = {"value_float": np.float32, "value_int": np.int64}
    lists = {"value_floats": np.float32, "value_ints": np.int64}
    if a.name in scalars:
        return np.array(helper.get_attribute_value(a), dtype=scalars[a.name])
    if a.name in lists:
        return np.array(list(helper.get_attribute_value(a)), dtype=lists[a.name])
    if a.name in ("value_string", "value_strings"):
        v = helper.get_attribute_value(a)
        return np.array(v if a.type == AttributeProto.STRING else list(v), dtype=object)
    raise ValueError(
        f"Constant node {node.name or node.output[0]!r} has unknown attribute {a.name!r}"
    )


def _dense(sp: onnx.SparseTensorProto) -> np.ndarray:
    values = numpy_helper.to_array(sp.values)
    out = np.zeros(int(np.prod(sp.dims)), dtype=values.dtype)
    idx = numpy_helper.to_array(sp.indices)
    if idx.ndim == 2:  # COO with one row of coordinates per value
        idx = np.ravel_multi_index(tuple(idx.T), tuple(sp.dims))
    out[idx] = values
    return out.reshape(tuple(sp.dims))


class GraphConstants:
    """Resolves value names of one graph to constant arrays (lazily, cached).

    A value is constant when it is an initializer that is no graph input (an input with a
    default can be fed), a ``Constant`` node's output, or the output of ``Identity`` or
    ``Cast`` of a constant.

    Example:
        >>> from onnx import TensorProto as T
        >>> g = helper.make_graph([], "g", [], [],
        ...     initializer=[helper.make_tensor("b", T.FLOAT, [1], [0.5])])
        >>> GraphConstants(g).value("b"), GraphConstants(g).value("x")
        (array([0.5], dtype=float32), None)
    """

    def __init__(self, graph: GraphProto) -> None:
        fed = {i.name for i in graph.input}
        self._inits = {t.name: t for t in graph.initializer if t.name not in fed}
        self._producer = {o: n for n in graph.node for o in n.output if o}
        self._cache: dict[str, np.ndarray | None] = {}

    def value(self, name: str) -> np.ndarray | None:
        """The constant array of ``name``, or None when it is computed or fed at run time."""
        if name not in self._cache:
            self._cache[name] = self._resolve(name, 0)
        return self._cache[name]

    def is_constant(self, name: str) -> bool:
        """True when :meth:`value` resolves ``name``."""
        return self.value(name) is not None

    def kind(self, name: str) -> str:
        """How ``name`` is stored: ``initializer``, ``Constant``, ``Identity``/``Cast`` or
        ``computed`` (for messages)."""
        if name in self._inits:
            return "initializer"
        node = self._producer.get(name)
        return node.op_type if node is not None and self.is_constant(name) else "computed"

    def nodes_of(self, name: str) -> list[NodeProto]:
        """The Constant/Identity/Cast nodes that make constant ``name`` (empty for an
        initializer or a computed value)."""
        out: list[NodeProto] = []
        while name not in self._inits and self.is_constant(name):
            node = self._producer[name]
            out.append(node)
            if node.op_type == "Constant":
                break
            name = node.input[0]
        return out

    def _resolve(self, name: str, depth: int) -> np.ndarray | None:
        if name in self._inits:
            return numpy_helper.to_array(self._inits[name])
        node = self._producer.get(name)
        if node is None or node.domain not in ("", "ai.onnx") or depth > 64:
            return None
        if node.op_type == "Constant":
            try:
                return constant_node_value(node)
            except ValueError:
                return None
        if node.op_type not in _PASS_THROUGH or not node.input or not node.input[0]:
            return None
        src = self._resolve(node.input[0], depth + 1)
        if src is None or node.op_type == "Identity":
            return src
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        if to is None or src.dtype == object:
            return None
        return src.astype(helper.tensor_dtype_to_np_dtype(to))


def remove_dead_constants(graph: GraphProto, keep: Iterable[str] = ()) -> int:
    """Drop Constant nodes, Identity/Cast of constants and initializers nobody reads.

    Values that are graph outputs, read by any node (subgraphs included) or named in
    ``keep`` stay. Returns how many nodes and initializers were removed.

    Example:
        >>> g = helper.make_graph([helper.make_node("Constant", [], ["k"], value_int=1)],
        ...                       "g", [], [])
        >>> remove_dead_constants(g), len(g.node)
        (1, 0)
    """
    from ._model import iter_nested_nodes

    removed = 0
    while True:
        consts = GraphConstants(graph)
        read = {i for n in graph.node for i in n.input}
        read |= {i for n in iter_nested_nodes(graph) for i in n.input}
        read |= {o.name for o in graph.output} | set(keep)
        dead = [
            k for k, n in enumerate(graph.node)
            if n.op_type in ("Constant", *_PASS_THROUGH)
            and all(o not in read for o in n.output)
            and all(consts.is_constant(o) for o in n.output if o)
        ]
        fed = {i.name for i in graph.input}
        unread = [t.name for t in graph.initializer if t.name not in read and t.name not in fed]
        if not dead and not unread:
            return removed
        for k in reversed(dead):
            del graph.node[k]
        kept = [t for t in graph.initializer if t.name not in set(unread)]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        removed += len(dead) + len(unread)


# ---------------------------------------------------------------------------- dims
def read_dim(d: TensorShapeProto.Dimension) -> int | str | None:
    """A graph-input dim as ONNX Runtime reads it: an int > 0, a symbol, or None (dynamic).

    ``dim_value`` -1 or 0 (paddle2onnx and some converters write these for dynamic dims)
    and an unset dim are dynamic.

    Example:
        >>> d = TensorShapeProto.Dimension(dim_value=-1)
        >>> read_dim(d), dim_form(d)
        (None, 'dim_value -1')
    """
    kind = d.WhichOneof("value")
    if kind == "dim_value":
        return int(d.dim_value) if d.dim_value > 0 else None
    if kind == "dim_param" and d.dim_param:
        return d.dim_param
    return None


def dim_form(d: TensorShapeProto.Dimension) -> str:
    """How a dim was written, for messages: ``dim_value 4``, ``dim_param 'N'``, ``unset``."""
    kind = d.WhichOneof("value")
    if kind == "dim_value":
        return f"dim_value {d.dim_value}"
    if kind == "dim_param" and d.dim_param:
        return f"dim_param {d.dim_param!r}"
    return "unset"


def input_dims(value: onnx.ValueInfoProto) -> list[int | str | None] | None:
    """The dims of a tensor graph input/output via :func:`read_dim`; None for unknown rank.

    Example:
        >>> vi = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [-1, 3, "h"])
        >>> input_dims(vi)
        [None, 3, 'h']
    """
    tt = value.type.tensor_type
    if not value.type.HasField("tensor_type") or not tt.HasField("shape"):
        return None
    return [read_dim(d) for d in tt.shape.dim]
