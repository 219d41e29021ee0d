"""A narrow structural check of a model's top-level graph, for commands that edit it.

ONNX's checker (``onnx.checker.check_model``) also judges value types and shapes, and
rejects some models that load and run (value_info that disagrees with inference, which
exporters write). A rewrite needs less, and needs it for sure: every node input is made by
a node, an initializer or a graph input (no dangling tensor); no value is made twice; every
graph output is made; the opsets the nodes use are imported; the nodes form no cycle. A
graph that breaks one of these is refused before anything is rewritten, since a copy of it
would be as broken.

Example:
    >>> structure_problems(model)  # doctest: +SKIP
    ["node #0 (Add) reads 'ghost', which no node, initializer or graph input makes ..."]
"""

from __future__ import annotations

from onnx import ModelProto

from ._model import ModelError, node_input_names, node_label, topological_sort

__all__ = ["check_structure", "structure_problems"]

_EXPORT = "fix the model where it is written: its exporter, or the script that edited it"


def structure_problems(model: ModelProto) -> list[str]:
    """What breaks the graph's structure (see the module), each naming the node or value
    and the fix; empty for a sound graph.

    Example:
        >>> from onnx import helper, TensorProto as T
        >>> x = helper.make_tensor_value_info("x", T.FLOAT, [2])
        >>> g = helper.make_graph([helper.make_node("Add", ["x", "b"], ["y"])], "g", [x],
        ...                       [helper.make_tensor_value_info("y", T.FLOAT, [2])])
        >>> structure_problems(helper.make_model(g))[0][:44]
        "node #0 (Add) reads 'b', which no node, init"
    """
    g = model.graph
    problems: list[str] = []
    made: dict[str, str] = {}
    for v in g.input:
        made.setdefault(v.name, f"graph input {v.name!r}")
    for kind, names in (("initializer", [t.name for t in g.initializer]),
                        ("sparse initializer", [t.values.name for t in g.sparse_initializer])):
        for name in names:
            made.setdefault(name, f"{kind} {name!r}")
    for idx, node in enumerate(g.node):
        for out in (o for o in node.output if o):
            if out in made:
                problems.append(
                    f"value {out!r} is made twice: by {made[out]} and by node "
                    f"{node_label(node, idx)}; give one of them another name; {_EXPORT}")
            else:
                made[out] = f"node {node_label(node, idx)}"
    for idx, node in enumerate(g.node):
        for name in node_input_names(node):
            if name not in made:
                problems.append(
                    f"node {node_label(node, idx)} reads {name!r}, which no node, initializer "
                    f"or graph input makes (a dangling tensor); add what makes {name!r} or "
                    f"read an existing value; {_EXPORT}")
    for out in g.output:
        if out.name not in made:
            problems.append(
                f"graph output {out.name!r} is made by no node, initializer or graph input; "
                f"drop it from graph.output or name the value that computes it; {_EXPORT}")
    problems += _opset_problems(model)
    if not problems:
        try:
            topological_sort(g)
        except ModelError as e:  # a cycle
            problems.append(f"{e}; {_EXPORT}")
    return problems


def _opset_problems(model: ModelProto) -> list[str]:
    imported = {("" if o.domain == "ai.onnx" else o.domain) for o in model.opset_import}
    out = []
    for idx, node in enumerate(model.graph.node):
        domain = "" if node.domain == "ai.onnx" else node.domain
        if domain not in imported:
            shown = domain or "ai.onnx (the default domain)"
            out.append(f"node {node_label(node, idx)} is of domain {shown}, which the model's "
                       f"opset_import does not list; add "
                       f"onnx.helper.make_opsetid({domain!r}, VERSION) to model.opset_import")
            imported.add(domain)  # once per domain
    return out


def check_structure(model: ModelProto, command: str) -> None:
    """Raise :class:`ModelError` listing :func:`structure_problems` (``command``: what
    refuses, e.g. ``opsdk rewrite``).

    Example:
        >>> check_structure(model, "opsdk rewrite")  # doctest: +SKIP
    """
    problems = structure_problems(model)
    if problems:
        more = f" (and {len(problems) - 1} more: {'; '.join(problems[1:4])})" if len(
            problems) > 1 else ""
        raise ModelError(f"the model's graph is broken ({command} changed nothing): "
                         f"{problems[0]}{more}")
