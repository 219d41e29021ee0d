"""A narrow structural check of a model's top-level graph, for commands that edit it.

ONNX's checker (``onnx.checker.check_model``) also judges value types and shapes, and
rejects some models that load and run (value_info that disagrees with inference, which
exporters write). A rewrite needs less, and needs it for sure: every node input is made by
a node, an initializer or a graph input (no dangling tensor); no value is made twice; every
graph output is made; the opsets the nodes use are imported; the nodes form no cycle. A
graph that breaks one of these is refused before anything is rewritten, since a copy of it
would be as broken. :func:`scan_structure` is the one scan; ``opsdk doctor`` words it as its
findings, with nodes required in topological order (``ordered=True``).

Example:
    >>> structure_problems(model)  # doctest: +SKIP
    ["node #0 (Add) reads 'ghost', which no node, initializer or graph input makes ..."]
"""

from __future__ import annotations

from dataclasses import dataclass

from onnx import ModelProto, NodeProto

from ._model import ModelError, node_input_names, node_label, topological_sort

__all__ = ["StructureProblem", "check_structure", "scan_structure", "structure_problems"]

_EXPORT = "fix the model where it is written: its exporter, or the script that edited it"


@dataclass(frozen=True)
class StructureProblem:
    """One break in the graph's structure, for each command to word in its own terms.

    ``kind`` is ``dangling`` (a node reads a value nothing makes), ``out-of-order`` (it is
    made only by a later node; with ``ordered``), ``made-twice``, ``output-unmade`` (a graph
    output nothing makes) or ``domain-not-imported`` (``value`` is then the domain).
    ``node`` is the index in ``graph.node``; ``maker`` what made a value first.
    """

    kind: str
    node: int | None
    value: str
    maker: str | None = None


def scan_structure(model: ModelProto, *, ordered: bool = False) -> list[StructureProblem]:
    """The structural problems of the top-level graph, in node order.

    With ``ordered``, a value must be made before the node that reads it (ONNX's rule:
    nodes in topological order); without, any order without a cycle will do (what a rewrite
    needs: the cycle check is :func:`structure_problems`'s). A node's inputs include what
    its subgraphs capture from the graph.

    Example:
        >>> from onnx import helper, TensorProto as T
        >>> x = helper.make_tensor_value_info("x", T.FLOAT, [2])
        >>> g = helper.make_graph([helper.make_node("Relu", ["y"], ["z"]),
        ...                        helper.make_node("Relu", ["x"], ["y"])], "g", [x], [])
        >>> [(p.kind, p.node, p.value) for p in scan_structure(helper.make_model(g),
        ...                                                    ordered=True)]
        [('out-of-order', 0, 'y')]
    """
    g = model.graph
    problems: list[StructureProblem] = []
    made: dict[str, str] = {}
    for v in g.input:
        made.setdefault(v.name, f"graph input {v.name!r}")
    for kind, names in (("initializer", [t.name for t in g.initializer]),
                        ("sparse initializer", [t.values.name for t in g.sparse_initializer])):
        for name in names:
            made.setdefault(name, f"{kind} {name!r}")
    produced = {o for n in g.node for o in n.output if o}

    def make(idx: int, node: NodeProto) -> None:
        for out in (o for o in node.output if o):
            if out in made:
                problems.append(StructureProblem("made-twice", idx, out, made[out]))
            else:
                made[out] = f"node {node_label(node, idx)}"

    if not ordered:  # every value counts as made before any node reads it
        for idx, node in enumerate(g.node):
            make(idx, node)
    for idx, node in enumerate(g.node):
        for name in node_input_names(node):
            if name not in made:
                kind = "out-of-order" if ordered and name in produced else "dangling"
                problems.append(StructureProblem(kind, idx, name))
        if ordered:
            make(idx, node)
    problems += [StructureProblem("output-unmade", None, out.name)
                 for out in g.output if out.name not in made]
    imported = {("" if o.domain == "ai.onnx" else o.domain) for o in model.opset_import}
    for idx, node in enumerate(g.node):
        domain = "" if node.domain == "ai.onnx" else node.domain
        if domain not in imported:
            problems.append(StructureProblem("domain-not-imported", idx, domain))
            imported.add(domain)  # once per domain
    return problems


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
    problems = [_rewrite_message(p, model) for p in scan_structure(model)]
    if not problems:
        try:
            topological_sort(g)
        except ModelError as e:  # a cycle
            problems.append(f"{e}; {_EXPORT}")
    return problems


def _rewrite_message(p: StructureProblem, model: ModelProto) -> str:
    node = "" if p.node is None else f"node {node_label(model.graph.node[p.node], p.node)}"
    if p.kind == "made-twice":
        return (f"value {p.value!r} is made twice: by {p.maker} and by {node}; give one of "
                f"them another name; {_EXPORT}")
    if p.kind == "dangling":
        return (f"{node} reads {p.value!r}, which no node, initializer or graph input makes "
                f"(a dangling tensor); add what makes {p.value!r} or read an existing value; "
                f"{_EXPORT}")
    if p.kind == "output-unmade":
        return (f"graph output {p.value!r} is made by no node, initializer or graph input; "
                f"drop it from graph.output or name the value that computes it; {_EXPORT}")
    shown = p.value or "ai.onnx (the default domain)"
    return (f"{node} is of domain {shown}, which the model's opset_import does not list; add "
            f"onnx.helper.make_opsetid({p.value!r}, VERSION) to model.opset_import")


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
