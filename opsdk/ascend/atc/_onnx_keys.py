"""The OriginOpType keys the GE ONNX parser looks up, computed from an ONNX model.

ATC maps an ONNX node to a registered plugin by the key ``<domain>::<version>::<op_type>``
(``OnnxModelParser::ConstructOriType`` in CANN's parser):

* a node with a domain uses the version that the model's ``opset_import`` gives that domain,
  and is rejected when the domain is not imported;
* a node with an empty domain is resolved only when the model imports exactly one opset: it
  then takes that opset's domain and version (``""`` is spelled ``ai.onnx``); with two or more
  imports ATC fails (E16005), whatever the node.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..versions import CannVersion

__all__ = [
    "NodeKey",
    "KeyProblem",
    "node_keys",
    "origin_op_types",
    "check_plugin_keys",
    "check_parser_rules",
    "normalize_default_domain",
]

_STANDARD = ("", "ai.onnx", "ai.onnx.ml")


@dataclass(frozen=True)
class NodeKey:
    """One node, its ONNX identity and the key the GE parser builds for it (None: rejected)."""

    node: str
    op_type: str
    domain: str
    key: str | None
    custom: bool
    problem: str = ""


@dataclass(frozen=True)
class KeyProblem:
    """A mismatch between a model and the registered plugins, with its fix."""

    node: str
    op_type: str
    message: str

    def __str__(self) -> str:
        return self.message


def _load(model: Any) -> Any:
    import onnx

    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        from google.protobuf.message import DecodeError

        from ...onnx import ModelError

        try:
            return onnx.load(str(model), load_external_data=False)
        except FileNotFoundError:
            raise ModelError(f"{model}: no such file; pass the path of the .onnx file") from None
        except (DecodeError, OSError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise ModelError(
                f"{model}: not a readable ONNX model ({why}); pass the complete .onnx file "
                "(re-export it if it was truncated)"
            ) from None
    return model


def _is_custom(op_type: str, domain: str) -> bool:
    import onnx.defs

    if domain not in _STANDARD:
        return True
    return not onnx.defs.has(op_type, "" if domain == "ai.onnx" else domain)


def node_keys(model: Any, cann: CannVersion | None = None) -> list[NodeKey]:
    """Every node of the main graph with the key the GE ONNX parser builds for it.

    A default-domain node in a model importing several domains has no key on the parsers
    that reject it (E16005, through CANN 9.1, the default); on a later ``cann`` it resolves
    through ``ai.onnx``.

    Example:
        >>> import onnx.helper as h
        >>> n = h.make_node("MyOp", ["x"], ["y"], domain="com.example")
        >>> g = h.make_graph([n], "g", [], [])
        >>> m = h.make_model(g, opset_imports=[h.make_opsetid("com.example", 2)])
        >>> node_keys(m)[0].key
        'com.example::2::MyOp'
    """
    m = _load(model)
    imports = {o.domain: o.version for o in m.opset_import}
    return [_node_key(n, n.name or f"{n.op_type}_{i}", imports, cann)
            for i, n in enumerate(m.graph.node)]


def _node_key(n: Any, name: str, imports: Mapping[str, int], cann: CannVersion | None) -> NodeKey:
    custom = _is_custom(n.op_type, n.domain)
    if n.domain:
        if n.domain not in imports:
            problem = (
                f"node {name!r} ({n.op_type}) has domain {n.domain!r}, which the model's "
                f'opset_import does not list; ATC rejects it ("The opset of domain[{n.domain}] '
                f'has no responding version"): add opset_import '
                f"{{domain: {n.domain!r}, version: N}}"
            )
            return NodeKey(name, n.op_type, n.domain, None, custom, problem)
        key = f"{n.domain}::{imports[n.domain]}::{n.op_type}"
        return NodeKey(name, n.op_type, n.domain, key, custom)
    if len(imports) == 1:
        dom, ver = next(iter(imports.items()))
        return NodeKey(name, n.op_type, "", f"{dom or 'ai.onnx'}::{ver}::{n.op_type}", custom)
    if cann is not None and not cann.rejects_mixed_default_domain and "" in imports:
        return NodeKey(name, n.op_type, "", f"ai.onnx::{imports['']}::{n.op_type}", custom)
    listed = ", ".join(f"{d or 'ai.onnx'}:{v}" for d, v in imports.items())
    problem = (
        f"node {name!r} ({n.op_type}) has an empty domain and the model imports "
        f"{len(imports)} opsets ({listed}); the GE ONNX parser resolves an empty domain "
        "only when exactly one opset is imported (ATC error E16005): convert a copy made "
        "by opsdk.ascend.normalize_default_domain(model), or put the custom ops in the "
        "default domain"
    )
    return NodeKey(name, n.op_type, "", None, custom, problem)


def origin_op_types(model: Any) -> dict[str, list[str]]:
    """``{op_type: [keys]}`` the model's custom (non-standard ONNX) nodes need registered.

    Example:
        >>> import onnx.helper as h
        >>> n = h.make_node("MyOp", ["x"], ["y"], domain="com.example")
        >>> m = h.make_model(h.make_graph([n], "g", [], []),
        ...                  opset_imports=[h.make_opsetid("com.example", 1)])
        >>> origin_op_types(m)
        {'MyOp': ['com.example::1::MyOp']}
    """
    keys: dict[str, set[str]] = {}
    for nk in node_keys(model):
        if nk.custom and nk.key:
            keys.setdefault(nk.op_type, set()).add(nk.key)
    return {k: sorted(v) for k, v in sorted(keys.items())}


def _mismatch(nk: NodeKey, have: Sequence[str]) -> str:
    domain_dot = nk.key.rsplit("::", 2)[0] if nk.key else nk.domain
    same = [
        k for k in have if k.rsplit("::", 1)[-1] == nk.op_type and k.split("::")[0] == domain_dot
    ]
    base = f"node {nk.node!r} ({nk.op_type}) needs the plugin key {nk.key!r}"
    if same:
        return (
            f"{base} but the plugin registers {', '.join(same)} (a different opset version); "
            f"regenerate with `opsdk cann {nk.op_type} --onnx-model <model>` or export the model "
            f"with the version the plugin registers"
        )
    return (
        f"{base} but the plugin registers {', '.join(have)}; regenerate with "
        f"`opsdk cann {nk.op_type} --onnx-model <model>` so the keys match"
    )


def check_plugin_keys(
    model: Any, registered: Mapping[str, Sequence[str]], cann: CannVersion | None = None
) -> list[KeyProblem]:
    """Problems that keep ATC from mapping the model's nodes to the registered plugins.

    ``registered`` maps an op type to the OriginOpType keys its plugin registers (an opsdk
    project records them in its manifest). Only op types in ``registered`` and nodes ATC
    rejects outright are reported.

    Example:
        >>> import onnx.helper as h
        >>> n = h.make_node("MyOp", ["x"], ["y"], domain="com.example")
        >>> m = h.make_model(h.make_graph([n], "g", [], []),
        ...                  opset_imports=[h.make_opsetid("com.example", 2)])
        >>> [p.op_type for p in check_plugin_keys(m, {"MyOp": ["com.example::1::MyOp"]})]
        ['MyOp']
    """
    problems = []
    seen: set[str] = set()
    for p in check_parser_rules(model, cann, registered):
        if p.message not in seen:
            problems.append(p)
            seen.add(p.message)
    return problems


def normalize_default_domain(model: Any) -> Any:
    """A copy in which the default domain is spelled ``ai.onnx`` in opset_import and nodes.

    The GE parser then resolves standard nodes through ``ai.onnx`` and custom-domain nodes
    through their own domain, so a model mixing both converts. Use the copy only for ATC:
    ONNX tools treat ``ai.onnx`` as a distinct domain.
    """
    m = copy.deepcopy(_load(model))
    for o in m.opset_import:
        if o.domain == "":
            o.domain = "ai.onnx"
    for _, n in _all_nodes(m.graph):  # If/Loop bodies too: the parser reads them alike
        if n.domain == "":
            n.domain = "ai.onnx"
    return m


def _all_nodes(graph: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for i, n in enumerate(graph.node):
        name = prefix + (n.name or f"{n.op_type}_{i}")
        out.append((name, n))
        for a in n.attribute:
            for g in [a.g] if a.HasField("g") else list(a.graphs):
                out += _all_nodes(g, f"{name}/")
    return out


def check_parser_rules(
    model: Any, cann: CannVersion | None, registered: Mapping[str, Sequence[str]] | None = None
) -> list[KeyProblem]:
    """What the GE ONNX parser of ``cann`` would reject in ``model``, subgraphs included.

    ``cann=None`` applies the rules of the releases through 9.1.

    The rules (``OnnxModelParser::ConstructOriType``): a node with a domain takes the
    version ``opset_import`` gives that domain and is rejected when there is none; an
    empty-domain node needs exactly one imported opset through CANN 9.1 (E16005); a custom
    node maps to a plugin by ``<domain>::<version>::<op_type>``, which must be one of
    ``registered[op_type]`` when given. ``ModelProto.functions`` play no part: GE ignores them.

    Example:
        >>> import onnx.helper as h
        >>> from opsdk.ascend.versions import parse_cann_version
        >>> n = h.make_node("MyOp", ["x"], ["y"], domain="com.example")
        >>> r = h.make_node("Relu", ["y"], ["z"])
        >>> m = h.make_model(h.make_graph([n, r], "g", [], []), opset_imports=[
        ...     h.make_opsetid("", 17), h.make_opsetid("com.example", 1)])
        >>> [p.op_type for p in check_parser_rules(m, parse_cann_version("8.1.RC1"))]
        ['Relu']
        >>> check_parser_rules(m, parse_cann_version("10.0"))
        []
    """
    m = _load(model)
    imports = {o.domain: o.version for o in m.opset_import}
    problems: list[KeyProblem] = []
    for name, n in _all_nodes(m.graph):
        nk = _node_key(n, name, imports, cann)
        if nk.key is None:
            problems.append(KeyProblem(name, n.op_type, nk.problem))
            continue
        have = list((registered or {}).get(nk.op_type, ()))
        if have and nk.key not in have:
            problems.append(KeyProblem(name, n.op_type, _mismatch(nk, have)))
    return problems
