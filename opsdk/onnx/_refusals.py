"""What the real tools refuse in a model: ONNX's checker and ONNX Runtime's session creation.

opsdk's own structure checks (:mod:`opsdk.onnx._structure`) name the node and the fix, but
they are not the tools a model meets later: ONNX's checker refuses an initializer without a
name, two initializers of one name, an attribute its operator does not have; ONNX Runtime
refuses two nodes of one name, an input without a type, a type its kernel does not take.
Commands that judge a model (``opsdk doctor``, ``opsdk triton build``) ask both:

* :func:`checker_refusal`: ONNX's checker with opsdk's schemas registered for the model's
  custom nodes, first without then with ``full_check`` (strict shape inference). The
  first kind makes the model invalid ONNX; the second ONNX Runtime may still open.
* :func:`ort_copy` and :func:`ort_refusal`: ONNX Runtime's session creation, in a child
  process (:class:`~._ort_child.OrtChild`), on a copy with every custom node's fallback
  function embedded; a refusal that is only about a custom node without one is not the
  model's fault (opsdk's Session runs it) and is not reported.
* :func:`repeated_node_names`: two nodes of one name in one graph (the ONNX IR names them
  unique; ONNX Runtime refuses them, the checker does not look).

Example:
    >>> from onnx import helper, TensorProto as T
    >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], foo=1)], "g",
    ...     [helper.make_tensor_value_info("x", T.FLOAT, [2])],
    ...     [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    >>> checker_refusal(helper.make_model(g)).text[:45]
    'Unrecognized attribute: foo for operator Relu'
    >>> repeated_node_names(g), model_refusals(helper.make_model(g))[0][:45]
    ([], "ONNX's checker rejects the model: Unrecognize")
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import AttributeProto, GraphProto, ModelProto

from ..errors import SpecError
from ..spec import OpSpec
from ._model import ModelError, is_standard_domain, iter_all_nodes

__all__ = ["Refusal", "checker_refusal", "explained_refusal", "model_refusals", "ort_copy",
           "ort_refusal", "repeated_node_names"]

_PROTO_LIMIT = (1 << 31) - 1  # protobuf's limit: a larger model is checked from a file


@dataclass(frozen=True)
class Refusal:
    """A tool's refusal: its first line(s) (``text``); ``full_only``: only ONNX's full
    check (strict shape inference) refuses, the structural one accepts."""

    text: str
    full_only: bool = False


def checker_refusal(model: ModelProto, extra: Iterable[OpSpec] = ()) -> Refusal | None:
    """ONNX's checker's refusal of ``model``, or None when it accepts it (see the module).

    Example:
        >>> checker_refusal(onnx.ModelProto()).text[:36]
        'The model does not have an ir_versio'
    """
    from ._schema import register_for_model

    try:
        register_for_model(model, extra)
    except SpecError as e:  # a spec whose schema ONNX cannot take: the spec's own error
        return Refusal(f"opsdk cannot register the schema of a custom node: {e}")
    copy, unknown_rank = _as_checked(model)
    for full in (False, True) if not unknown_rank else (False,):
        text = _check(copy, full)
        if text is not None:
            return Refusal(text, full_only=full)
    return None


def _as_checked(model: ModelProto) -> tuple[ModelProto, bool]:
    """What the checker is given: ``model`` without two things it refuses that the ONNX IR
    allows and ONNX Runtime opens. Nodes of domain ``ai.onnx`` (the default domain's other
    spelling, which opsdk writes for CANN) are respelled ''; a graph input or output of
    unknown rank (no shape: the checker demands one) gets the rank shape inference gives
    it, else a placeholder -- and True, since strict shape inference cannot then judge.
    """
    out = ModelProto()
    out.CopyFrom(model)
    for n in iter_all_nodes(out.graph):
        if n.domain == "ai.onnx":
            n.domain = ""
    imports = [(o.domain or "ai.onnx", o.version) for o in out.opset_import]
    del out.opset_import[:]
    for domain, version in dict(reversed(imports)).items():  # the first import of a domain
        out.opset_import.add(domain="" if domain == "ai.onnx" else domain, version=version)
    g = out.graph
    shapeless = [v for v in (*g.input, *g.output)
                 if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]
    if not shapeless:
        return out, False
    try:
        inferred = {v.name: v.type for v in onnx.shape_inference.infer_shapes(out).graph.output}
    except Exception:  # inference fails on the model: the checker will say why
        inferred = {}
    unknown = False
    for v in shapeless:
        t = inferred.get(v.name)
        if t is not None and t.tensor_type.HasField("shape"):
            v.type.tensor_type.shape.CopyFrom(t.tensor_type.shape)
        else:
            v.type.tensor_type.shape.SetInParent()
            unknown = True
    return out, unknown


def _check(model: ModelProto, full: bool) -> str | None:
    try:
        if model.ByteSize() > _PROTO_LIMIT:
            with tempfile.TemporaryDirectory(prefix="opsdk-check-") as d:
                path = Path(d) / "model.onnx"
                onnx.save(model, str(path), save_as_external_data=True)
                onnx.checker.check_model(str(path), full_check=full)
        else:
            onnx.checker.check_model(model, full_check=full)
    except Exception as e:  # ValidationError, InferenceError, or a shape function's error
        return _first_lines(e)
    return None


def _first_lines(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    text = " ".join(lines[:3]) or type(e).__name__
    return text if len(text) <= 400 else text[:400] + "..."


def ort_copy(model: ModelProto, specs: Iterable[OpSpec] = ()) -> tuple[ModelProto, list[str]]:
    """A copy of ``model`` ONNX Runtime can open: every custom node's fallback function
    embedded (``specs`` first, then the registry's), and the ``domain::op`` of custom nodes
    it cannot run (no operator, or one without a function).

    Example:
        >>> copy, unrunnable = ort_copy(model)  # doctest: +SKIP
    """
    from ._functions import attach_function
    from ._ops import find_spec

    out = ModelProto()
    out.CopyFrom(model)
    given = list(specs)
    unrunnable: list[str] = []
    wanted = {(n.domain, n.op_type) for n in iter_all_nodes(out.graph)
              if not is_standard_domain(n.domain)}
    local = {(f.domain, f.name) for f in out.functions}
    for domain, op in sorted(wanted - local):
        spec = find_spec(domain, op, given)
        try:
            if spec is None or spec.function is None:
                raise SpecError("no fallback function")
            attach_function(out, spec)
        except SpecError:
            unrunnable.append(f"{domain}::{op}")
    return out, unrunnable


def ort_refusal(model: ModelProto, specs: Iterable[OpSpec] = (),
                python: str | None = None) -> str | None:
    """ONNX Runtime's refusal to open ``model`` (:func:`ort_copy` of it) in a child process,
    or None when it opens it, or refuses only custom nodes it cannot run, or crashes (a
    crash is its callers' to report: see :func:`opsdk.onnx._probe.runnable_shapes`).

    Example:
        >>> ort_refusal(model_with_two_nodes_named_n)  # doctest: +SKIP
        "ONNX Runtime 1.32.0 cannot open the model: ... two nodes with same node name (n)."
    """
    from ._ort_child import OrtChild, OrtChildCrash

    copy, unrunnable = ort_copy(model, specs)
    try:
        OrtChild(copy, python or sys.executable).close()
    except OrtChildCrash:
        return None
    except ModelError as e:
        return explained_refusal(str(e), unrunnable)
    return None


def explained_refusal(text: str, unrunnable: Iterable[str]) -> str | None:
    """``text`` (ONNX Runtime's refusal), or None when it is about one of the custom ops
    ``unrunnable`` (``domain::op``) only: ONNX Runtime has no kernel for those.

    Example:
        >>> explained_refusal("... Fatal error: com.x:Foo(-1) is not a registered "
        ...                   "function/op", ["com.x::Foo"]) is None
        True
    """
    for op in unrunnable:
        domain, _, name = op.partition("::")
        if f"{domain}:{name}(" in text or (domain in text and "opset import" in text):
            return None
    return re.sub(r"Load model from \S+ failed: ?", "", text)  # the child's temporary copy


def model_refusals(model: ModelProto, specs: Iterable[OpSpec] = (),
                   python: str | None = None) -> list[str]:
    """What makes the real tools refuse ``model``, one line each: nodes of one name, ONNX's
    structural checker's refusal, ONNX Runtime's (only when the checker accepts: it would
    refuse the same). A refusal of only ONNX's full check (strict shape inference) is left
    out: ONNX Runtime opens such models.

    Example:
        >>> model_refusals(model_with_two_nodes_named_n)  # doctest: +SKIP
        ["two or more nodes are named 'n' in one graph; give each node its own name"]
    """
    specs = list(specs)
    out = [f"two or more nodes are named {name!r} in one graph (ONNX Runtime refuses it); "
           "give each node its own name, or none" for name in repeated_node_names(model.graph)]
    checked = checker_refusal(model, specs)
    if checked is not None and not checked.full_only:
        out.append(f"ONNX's checker rejects the model: {checked.text}")
    if not out:
        refused = ort_refusal(model, specs, python)
        out += [refused] if refused else []
    return out


def repeated_node_names(graph: GraphProto) -> list[str]:
    """Each node name used by more than one node of one graph (subgraphs each on their
    own, recursively), once, in graph order; unnamed nodes do not count.

    Example:
        >>> from onnx import helper
        >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"], name="n"),
        ...                        helper.make_node("Relu", ["a"], ["y"], name="n")],
        ...                       "g", [], [])
        >>> repeated_node_names(g)
        ['n']
    """
    out: list[str] = []
    todo = [graph]
    while todo:
        g = todo.pop(0)
        seen: set[str] = set()
        for n in g.node:
            if n.name and n.name in seen and n.name not in out:
                out.append(n.name)
            seen.add(n.name)
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    todo.append(a.g)
                elif a.type == AttributeProto.GRAPHS:
                    todo.extend(a.graphs)
    return out
