"""What a rewrite did, and the one way it edits a graph: replace nodes, drop the chain.

Example:
    >>> RewriteRecord("#3 (Relu)", "skipped", "no Conv before the BatchNormalization").action
    'skipped'
"""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx
from onnx import ModelProto, NodeProto

from ..spec import OpSpec
from ._constants import remove_dead_constants
from ._model import opset_version

__all__ = ["RewriteRecord", "RewriteResult", "replace_nodes", "ensure_import"]


@dataclass(frozen=True)
class RewriteRecord:
    """What a rewrite did at one place of the graph."""

    node: str
    #: "fused" / "replaced" (rewritten), "refused" (a candidate left as it is because the
    #: rewrite would not pay, the reason says why), "skipped" (no match, or it cannot be) or
    #: "measured" (the whole model timed before and after: the fusions paid and were kept)
    action: str
    detail: str


@dataclass
class RewriteResult:
    """The rewritten model and the record of every match."""

    model: ModelProto
    records: list[RewriteRecord] = field(default_factory=list)

    @property
    def changed(self) -> int:
        """How many places were rewritten."""
        return sum(1 for r in self.records if r.action in ("fused", "replaced"))


def replace_nodes(
    model: ModelProto, replaced: dict[int, NodeProto], dropped: set[int], spec: OpSpec
) -> None:
    """In place: node ``i`` becomes ``replaced[i]``, the ``dropped`` nodes go, and so do the
    constants, initializer inputs and value_info nothing reads anymore; ``spec``'s domain is
    imported.

    Example:
        >>> replace_nodes(model, {5: fused}, {3, 4, 5}, spec)  # doctest: +SKIP
    """
    g = model.graph
    nodes = [replaced.get(i, n) for i, n in enumerate(g.node) if i in replaced or i not in dropped]
    removed_values = {o for i in dropped for o in g.node[i].output} - {
        o for n in replaced.values() for o in n.output
    }
    del g.node[:]
    g.node.extend(nodes)
    before = {t.name for t in g.initializer} | {o for n in g.node for o in n.output}
    # Old-IR models list initializers as graph inputs too: drop those no node reads anymore.
    used = {v for n in g.node for v in n.input} | {o.name for o in g.output}
    inits = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name not in inits or i.name in used]
    del g.input[:]
    g.input.extend(inputs)
    remove_dead_constants(g)
    removed_values |= before - {t.name for t in g.initializer} - {
        o for n in g.node for o in n.output
    }
    infos = [vi for vi in g.value_info if vi.name not in removed_values]
    del g.value_info[:]
    g.value_info.extend(infos)
    ensure_import(model, spec)


def ensure_import(model: ModelProto, spec: OpSpec) -> None:
    """Import ``spec``'s domain at its version when the model does not yet.

    Example:
        >>> ensure_import(model, spec)  # doctest: +SKIP
    """
    if opset_version(model, spec.domain) is None:
        model.opset_import.append(onnx.helper.make_opsetid(spec.domain, spec.version))
