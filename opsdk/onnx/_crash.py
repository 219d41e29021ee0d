"""Which node of a model crashes ONNX Runtime, found by runs in child processes.

Run only after ONNX Runtime died on the model in a child process; each question "does
this copy crash it?" is one more child (the caller's ``crashes``). First
the outputs: a node that calls a function of the model and leaves off some of the
function's trailing outputs gets them named (ONNX Runtime 1.23.2 aborts inlining such a
call), and a node's unused outputs are left off; each kind of change, applied to every node
it fits, is one child; the nodes of the kind that helped are bisected to the one that
matters. Else the graph is cut after each half of its nodes in turn (bisection on the
prefix) to name the first node whose presence crashes it. Each step is one child.

Example:
    >>> found = isolate_crash(model, child_crashes(feeds, python))  # doctest: +SKIP
    >>> found.node, found.fixed is not None
    ('#1 (com.opsdk::LayerNormalization)', True)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import ModelProto, NodeProto

from ._model import ModelError, node_label
from ._names import FreshNames

__all__ = ["Isolated", "child_crashes", "crash_note", "isolate_crash"]

#: Whether ONNX Runtime dies on a copy of the model (each call one child process).
Crashes = Callable[[ModelProto], bool]


@dataclass(frozen=True)
class Isolated:
    """The node that crashes, what about it does (``why``), and a ``fixed`` copy that does
    not crash when a change of its outputs alone avoids it (else None)."""

    node: str
    why: str
    fixed: ModelProto | None
    change: str = ""
    fix: str = ""


@dataclass(frozen=True)
class _Scope:
    """What a change of outputs reads of the model: the values something reads, and fresh
    names for outputs it adds."""

    used: set[str]
    fresh: FreshNames


# A kind of output change: per node, the changed node and what changed, or None.
_Changed = tuple[NodeProto, str] | None
_Change = Callable[[NodeProto, ModelProto, _Scope], _Changed]


def _name_left_off(node: NodeProto, model: ModelProto, scope: _Scope) -> _Changed:
    fn = next((f for f in model.functions
               if (f.domain, f.name) == (node.domain, node.op_type)), None)
    if fn is None or len(node.output) >= len(fn.output):
        return None
    missing = list(fn.output[len(node.output):])
    new = copy.deepcopy(node)
    base = node.output[0] if node.output and node.output[0] else node.op_type
    new.output.extend(scope.fresh(f"{base}__opsdk_{m}") for m in missing)
    return new, f"names its left-off outputs {', '.join(missing)} (unused)"


def _drop_unused(node: NodeProto, model: ModelProto, scope: _Scope) -> _Changed:
    used = scope.used
    unused = [o for o in node.output[1:] if o and o not in used]
    if not unused:
        return None
    new = copy.deepcopy(node)
    outs = [o if o in used or i == 0 else "" for i, o in enumerate(node.output)]
    while len(outs) > 1 and not outs[-1]:
        outs.pop()
    del new.output[:]
    new.output.extend(outs)
    return new, f"leaves off its unused outputs {', '.join(unused)}"


_CHANGES: tuple[tuple[_Change, str, str], ...] = (
    (_name_left_off, "it leaves off outputs {names} of its function; with them named it loads",
     "name every output of the node (unused ones may take any fresh name), e.g. with "
     "opsdk.onnx.make_node{then}"),
    (_drop_unused, "it has unused outputs {names}; with them left off it loads",
     "leave the node's unused outputs off (an empty name, or none at the end){then}"),
)


def isolate_crash(model: ModelProto, crashes: Crashes, then: str = "") -> Isolated | None:
    """The node of ``model`` (top-level graph) whose presence makes ``crashes`` true.

    None when no single node can be blamed (the whole model crashes, each part alone runs).
    ``then`` ends the fix (", and rebuild the folder with ...").
    """
    scope = _Scope(_used(model), FreshNames(model))
    for change, why, fix in _CHANGES:
        changed = {i: c for i, n in enumerate(model.graph.node)
                   if (c := change(n, model, scope)) is not None}
        if not changed or crashes(_with(model, changed)):
            continue
        idxs = sorted(changed)
        while len(idxs) > 1:  # the half whose change alone still avoids the crash
            half = idxs[: len(idxs) // 2]
            keep = (half if not crashes(_with(model, {i: changed[i] for i in half}))
                    else idxs[len(idxs) // 2:])
            idxs = keep
        i = idxs[0]
        node = model.graph.node[i]
        names = _names(node, changed[i][0], model)
        fixed = _with(model, {i: changed[i]})
        if len(changed) > 1 and crashes(fixed):  # no one node: all of them
            return Isolated(", ".join(node_label(model.graph.node[j], j) for j in changed),
                            why.format(names="(each)"), _with(model, changed),
                            changed[i][1], fix.format(then=then))
        return Isolated(node_label(node, i), why.format(names=", ".join(names)), fixed,
                        changed[i][1], fix.format(then=then))
    return _first_crashing_node(model, crashes)


def _names(old: NodeProto, new: NodeProto, model: ModelProto) -> list[str]:
    """The outputs a change added (by the function's names) or removed."""
    fn = next((f for f in model.functions if (f.domain, f.name) == (old.domain, old.op_type)),
              None)
    if len(new.output) > len(old.output) and fn is not None:
        return list(fn.output[len(old.output):len(new.output)])
    return [o for o in old.output if o and o not in new.output]


def _first_crashing_node(model: ModelProto, crashes: Crashes) -> Isolated | None:
    nodes = model.graph.node
    lo, hi = 0, len(nodes)  # the first lo nodes alone run; the first hi (all) crash
    if hi == 0:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if crashes(_prefix(model, mid)):
            hi = mid
        else:
            lo = mid
    node = nodes[hi - 1]
    return Isolated(node_label(node, hi - 1),
                    "the graph cut right after it crashes, cut right before it loads", None)


def _used(model: ModelProto) -> set[str]:
    used = {o.name for o in model.graph.output}
    for n in model.graph.node:
        used.update(n.input)
        for a in n.attribute:  # values a subgraph reads from the outer scope
            for g in [a.g, *a.graphs]:
                for sub in g.node:
                    used.update(sub.input)
    return used


def _with(model: ModelProto, changed: Mapping[int, tuple[NodeProto, str]]) -> ModelProto:
    out = copy.deepcopy(model)
    for i, (node, _) in changed.items():
        out.graph.node[i].CopyFrom(node)
    return out


def _prefix(model: ModelProto, k: int) -> ModelProto:
    """The first ``k`` nodes, whose values no later one of them reads are the outputs."""
    out = copy.deepcopy(model)
    del out.graph.node[k:]
    read = {v for n in out.graph.node for v in n.input}
    produced = [o for n in out.graph.node for o in n.output if o]
    types = {v.name: v for v in [*model.graph.value_info, *model.graph.output]}
    del out.graph.output[:]
    for name in [o for o in produced if o not in read] or produced[-1:]:
        out.graph.output.append(types.get(name) or onnx.ValueInfoProto(name=name))
    return out


def child_crashes(feeds: Mapping[str, np.ndarray], python: str | Path) -> Crashes:
    """``crashes`` for :func:`isolate_crash`: the ONNX Runtime of ``python`` opens a copy and
    runs ``feeds`` (those the copy takes) in an :class:`~._ort_child.OrtChild`; a refusal
    or an error of ONNX Runtime is no crash."""
    from ._ort_child import OrtChild
    from .errors import OrtChildCrash

    def crashes(model: ModelProto) -> bool:
        try:
            child = OrtChild(model, python)
        except OrtChildCrash:
            return True
        except ModelError:
            return False  # refused, not crashed: not this part
        names = {i.name for i in model.graph.input}
        try:
            child.run({k: v for k, v in feeds.items() if k in names})
        except OrtChildCrash:
            return True
        except RuntimeError:
            return False
        finally:
            child.close()
        return False

    return crashes


def crash_note(model: ModelProto, feeds: Mapping[str, np.ndarray], python: str | Path,
               of: str = "") -> str:
    """"; the crash is node N[ of ``of``]: why; fix: ..." for a crash of the ONNX Runtime
    of ``python`` on ``model`` (with ``feeds``) when children isolate it, else ""."""
    found = isolate_crash(model, child_crashes(feeds, python))
    if found is None:
        return ""
    return f"; the crash is node {found.node}{f' of {of}' if of else ''}: {found.why}" + (
        f"; fix: {found.fix}" if found.fix else "")
