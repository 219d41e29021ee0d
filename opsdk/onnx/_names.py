"""Fresh names for what a rewrite adds to a model: the one place every rewrite gets them.

A name a rewrite invents (a folded weight, an unused optional output, a lowered node's
intermediate, a Reshape's constant) must not be one the model already holds anywhere: a
graph input of that name would turn a new initializer into an overridable input, an
initializer of that name would give a value two definitions, a subgraph's value of that
name would shadow it. :class:`FreshNames` collects every name of the model once -- graph
inputs, outputs, initializers, sparse initializers, value_info, node inputs and outputs,
node names, and the same in every subgraph (If/Loop/Scan bodies), recursively -- and
hands out names no one of them is, each taken as it is handed out.

Example:
    >>> from onnx import helper, TensorProto as T
    >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
    ...     [helper.make_tensor_value_info("x", T.FLOAT, [2]),
    ...      helper.make_tensor_value_info("conv_b", T.FLOAT, [2])],
    ...     [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    >>> fresh = FreshNames(helper.make_model(g))
    >>> fresh("conv_b"), fresh("conv_b"), fresh("conv_w")
    ('conv_b_1', 'conv_b_2', 'conv_w')
"""

from __future__ import annotations

from onnx import AttributeProto, GraphProto, ModelProto

from ._model import unique_name

__all__ = ["FreshNames", "graph_names"]


def graph_names(graph: GraphProto) -> set[str]:
    """Every name ``graph`` holds, its subgraphs' included (see the module docstring).

    Example:
        >>> from onnx import helper
        >>> sorted(graph_names(helper.make_graph(
        ...     [helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [], [])))
        ['r', 'x', 'y']
    """
    names: set[str] = set()
    todo = [graph]
    while todo:
        g = todo.pop()
        names.update(v.name for v in (*g.input, *g.output, *g.value_info))
        names.update(t.name for t in g.initializer)
        for s in g.sparse_initializer:
            names.update((s.values.name, s.indices.name))
        for n in g.node:
            names.update((*n.input, *n.output, n.name))
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    todo.append(a.g)
                elif a.type == AttributeProto.GRAPHS:
                    todo.extend(a.graphs)
    names.discard("")
    return names


class FreshNames:
    """Names fresh against every name of ``model`` (a ModelProto or a GraphProto) and
    against each other: call it with a base name, get the base or ``base_1``, ``base_2``...

    :meth:`take` marks names the caller uses as given (e.g. a node name kept from the node
    it replaces), so nothing handed out later repeats them.
    """

    def __init__(self, model: ModelProto | GraphProto) -> None:
        graph = model.graph if isinstance(model, ModelProto) else model
        self.taken = graph_names(graph)

    def __call__(self, base: str) -> str:
        return unique_name(base, self.taken)

    def __contains__(self, name: object) -> bool:
        return name in self.taken

    def take(self, *names: str) -> None:
        """Count ``names`` as held from now on."""
        self.taken.update(n for n in names if n)
