"""The one .onnx an npu_ge model folder holds: loadable by ONNX Runtime 1.23.2 and by GE.

The backend opens the model twice: with ONNX Runtime (no custom ops registered) to read
inputs, outputs and symbolic dims, then with GE's ONNX parser to compile it. So the file
written for ``--target ascend``:

* embeds every custom node's fallback function (ONNX Runtime inlines it; GE ignores
  ``ModelProto.functions`` and maps the node to the CANN plugin by its key);
* imports each custom domain at the version of the plugin keys ``opsdk cann`` generates
  (:func:`opsdk.cann.default_origin_op_type`);
* for CANN releases whose parser rejects an empty-domain node next to another domain
  (E16005), spells standard nodes ``ai.onnx`` and imports ``ai.onnx`` beside ``""`` (the
  function bodies keep ``""``: ONNX Runtime 1.23.2 fails a function whose body uses
  ``ai.onnx``; ``onnx.checker`` accepts no explicit ``ai.onnx`` node at all);
* names every variable output dim the way the backend needs (a symbolic name made of
  input dim names), taking the names from ONNX shape inference where the graph has none.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import onnx
from onnx import ModelProto

from ..cann._model import default_origin_op_type
from ..cann._versions import CannVersion
from ..onnx._functions import attach_function
from ..onnx._model import iter_all_nodes, opset_version
from ..onnx._ops import find_spec
from ..spec import OpSpec
from . import _npu_ge as ge
from ._errors import TritonConfigError
from ._onnx_io import STANDARD_DOMAINS

__all__ = ["AscendModel", "prepare_ascend_model", "custom_specs"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class AscendModel:
    """The model to write, what was changed and the plugin keys its custom nodes need."""

    proto: ModelProto
    notes: list[str] = field(default_factory=list)
    keys: dict[str, list[str]] = field(default_factory=dict)


def custom_specs(model: ModelProto, label: str) -> list[OpSpec]:
    """The specs of the model's custom nodes (subgraphs included), each once."""
    specs: dict[tuple[str, str], OpSpec] = {}
    for n in iter_all_nodes(model.graph):
        if n.domain in STANDARD_DOMAINS or (n.domain, n.op_type) in specs:
            continue
        spec = find_spec(n.domain, n.op_type)
        if spec is None:
            raise TritonConfigError(
                f"{label}: custom node {n.domain}::{n.op_type} is not an operator opsdk can "
                "find; put its operator folder on OPSDK_OPERATORS_PATH (or install its wheel) "
                "so its fallback function and plugin key are known"
            )
        specs[(n.domain, n.op_type)] = spec
    return list(specs.values())


def prepare_ascend_model(
    model: ModelProto, cann: CannVersion, label: str, batched: bool = False
) -> AscendModel:
    """A copy of ``model`` that npu_ge can open with ONNX Runtime and parse with GE.

    ``batched``: the config has ``max_batch_size > 0``, so the outputs' leading dim is
    Triton's batch axis and needs no symbolic name.

    Raises:
        TritonConfigError: a custom op without a fallback function, two ops of one domain
            whose plugin keys need different versions, an opset ONNX Runtime 1.23.2 cannot
            load, or a variable output dim that cannot be named.

    Example:
        >>> from opsdk.onnx import export_model
        >>> from opsdk.cann._versions import parse_cann_version
        >>> m = export_model("ThresholdedRelu", shapes={"x": ("N", 4)})
        >>> out = prepare_ascend_model(m, parse_cann_version("8.1.RC1"), "m")
        >>> [f.name for f in out.proto.functions], out.keys
        (['ThresholdedRelu'], {'ThresholdedRelu': ['com.opsdk::1::ThresholdedRelu']})
    """
    out = AscendModel(copy.deepcopy(model))
    specs = custom_specs(out.proto, label)
    _check_opset(out.proto, label)
    _pin_custom_versions(out, specs, label)
    for spec in specs:
        if spec.function is None:
            raise TritonConfigError(
                f"{label}: custom op {spec.domain}::{spec.name} has no fallback function, so "
                "ONNX Runtime inside npu_ge cannot open the model; add a decomposition with "
                f"@SPEC.register_function in {spec.name}'s spec.py (see docs/onnx.md), or "
                "serve it with --target cpu"
            )
        attach_function(out.proto, spec)
        out.keys[spec.name] = [default_origin_op_type(spec)]
    if specs:
        out.notes.append(
            "embedded fallback functions: " + ", ".join(f"{s.domain}::{s.name}" for s in specs)
        )
    out.notes += name_output_dims(out.proto, label, batched)
    if cann.rejects_mixed_default_domain and len(out.proto.opset_import) > 1:
        _explicit_onnx_domain(out, cann)
    if out.proto.ir_version > ge.ORT_MAX_IR:
        out.notes.append(f"IR version {out.proto.ir_version} lowered to {ge.ORT_MAX_IR}, the "
                         f"newest ONNX Runtime {ge.ORT_VERSION} loads")
        out.proto.ir_version = ge.ORT_MAX_IR
    return out


def _check_opset(model: ModelProto, label: str) -> None:
    opset = opset_version(model, "")
    if opset is None:
        raise TritonConfigError(f"{label}: the model imports no ai.onnx opset; export it with one")
    if opset > ge.ORT_MAX_OPSET:
        raise TritonConfigError(
            f"{label}: the model uses ai.onnx opset {opset}, but npu_ge opens models with ONNX "
            f"Runtime {ge.ORT_VERSION}, which loads opset <= {ge.ORT_MAX_OPSET}; re-export "
            f"with --opset {ge.ORT_MAX_OPSET} or lower"
        )


def _pin_custom_versions(out: AscendModel, specs: list[OpSpec], label: str) -> None:
    """Import each custom domain at the version its plugin keys use."""
    wanted: dict[str, OpSpec] = {}
    for spec in specs:
        other = wanted.setdefault(spec.domain, spec)
        if other.version != spec.version:
            raise TritonConfigError(
                f"{label}: {other.name} and {spec.name} share domain {spec.domain!r} but their "
                f"plugin keys need opset versions {other.version} and {spec.version}, and a "
                "model imports one version per domain; give them the same version in spec.py"
            )
    for imp in out.proto.opset_import:
        pinned = wanted.get(imp.domain)
        if pinned is not None and imp.version != pinned.version:
            out.notes.append(f"opset_import {imp.domain} {imp.version} -> {pinned.version} "
                             f"(plugin key {default_origin_op_type(pinned)})")
            imp.version = pinned.version
    have = {imp.domain for imp in out.proto.opset_import}
    for domain, spec in wanted.items():
        if domain not in have:
            out.proto.opset_import.append(onnx.helper.make_opsetid(domain, spec.version))


def _explicit_onnx_domain(out: AscendModel, cann: CannVersion) -> None:
    """Standard nodes spelled ``ai.onnx``, with ``ai.onnx`` imported beside ``""``."""
    version = opset_version(out.proto, "")
    assert version is not None  # _check_opset ran
    changed = 0
    for node in iter_all_nodes(out.proto.graph):
        if node.domain == "":
            node.domain = "ai.onnx"
            changed += 1
    if all(imp.domain != "ai.onnx" for imp in out.proto.opset_import):
        out.proto.opset_import.append(onnx.helper.make_opsetid("ai.onnx", version))
    if all(imp.domain != "" for imp in out.proto.opset_import):
        out.proto.opset_import.append(onnx.helper.make_opsetid("", version))
    out.notes.append(
        f"{changed} standard nodes spelled ai.onnx: the GE parser of CANN {cann} rejects an "
        "empty-domain node in a model importing several domains (E16005)"
    )


def name_output_dims(model: ModelProto, label: str, batched: bool = False) -> list[str]:
    """Give every variable output dim of ``model`` a name npu_ge can resolve; return notes.

    The backend maps an output's ``-1`` dim to the input dims its symbolic name (or the
    variables of an arithmetic expression such as ``2*seq``) refers to; an unnamed dim fails
    the model load. Names come from the graph, else from ONNX shape inference (custom nodes
    are inferred through their embedded functions).
    """
    inputs = _input_dim_names(model)
    inferred = _inferred_outputs(model)
    notes = []
    for out in model.graph.output:
        dims = out.type.tensor_type.shape.dim
        for axis, dim in enumerate(dims):
            if dim.HasField("dim_value") or (batched and axis == 0):
                continue
            if not dim.dim_param:
                found = inferred.get((out.name, axis))
                if isinstance(found, int):
                    dim.dim_value = found
                    notes.append(f"output '{out.name}' dim {axis} is {found} (from the graph)")
                    continue
                if found and set(_NAME.findall(found)) <= inputs:
                    dim.dim_param = found
                    notes.append(f"output '{out.name}' dim {axis} named {found!r} from the graph")
            _check_dim_name(out.name, axis, dim.dim_param, inputs, label)
    return notes


def _check_dim_name(output: str, axis: int, name: str, inputs: set[str], label: str) -> None:
    unknown = sorted(set(_NAME.findall(name)) - inputs) if name else []
    if name and not unknown:
        return
    why = (f"its symbolic name {name!r} uses {', '.join(unknown)}, which no input dim is called"
           if name else "it has no symbolic name")
    raise TritonConfigError(
        f"{label}: output '{output}' dim {axis} is variable but {why}; npu_ge sizes such an "
        "output from the input dims its name refers to (an input dim name, or an expression "
        f"of them such as 2*seq); input dims are named {', '.join(sorted(inputs)) or 'nothing'}."
        " Export the model with named dynamic axes (dynamic_axes={'y': {1: 'seq'}}) or fixed "
        "output shapes"
    )


def _input_dim_names(model: ModelProto) -> set[str]:
    inits = {i.name for i in model.graph.initializer}
    return {
        d.dim_param
        for v in model.graph.input if v.name not in inits
        for d in v.type.tensor_type.shape.dim if d.dim_param
    }


def _inferred_outputs(model: ModelProto) -> dict[tuple[str, int], str | int]:
    """Output dims ONNX shape inference finds: a name, or a fixed size."""
    probe = copy.deepcopy(model)
    for out in probe.graph.output:  # let inference fill in the dims the graph leaves open
        out.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(probe)
    except Exception:  # custom schemas may be missing: fall back to the graph's own names
        return {}
    found: dict[tuple[str, int], str | int] = {}
    for o in inferred.graph.output:
        for axis, d in enumerate(o.type.tensor_type.shape.dim):
            if d.HasField("dim_value") or d.dim_param:
                found[(o.name, axis)] = d.dim_value if d.HasField("dim_value") else d.dim_param
    return found
