"""The model with ATC's casts: float32 tensors rounded to float16 where ATC lowers.

A lowered node's float32 inputs pass through ``Cast(to=float16)`` and back to float32 (ATC's
cast into the float16 region, once per tensor; a tensor a lowered node produced is already
float16 and is not cast again), and its float32 outputs are rounded the same way (the
float16 result; the cast back is ATC's cast out of the region, exact). The node itself runs
in float32 in ONNX Runtime, whose CPU kernels mostly lack float16: the emulation rounds
every tensor a lowered node reads or writes, as the NPU stores them, and computes inside
the node in float32 (as the cube unit accumulates; a vector unit's float16 arithmetic inside
one op is not emulated). ``low-in`` nodes (cube ops under ``force_fp32``) round inputs only.
Under the ``saturation`` overflow mode every rounding first turns NaN into 0 and clips to
the largest finite value of the low dtype (what the SoC's saturation mode gives); under
``inf-nan`` a float16 overflow is Inf (IEEE 754 round to nearest even).

:func:`switchboard` builds one model in which every candidate node's rounding is switched
by an element of a boolean input, so the attribution and the bisector run one session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper

from ...errors import SpecError
from ...onnx import FreshNames
from ._assign import LOW, LOW_IN, NodeDtype

__all__ = ["float_tensors", "lower_model", "switchboard", "SWITCH_INPUT", "CAST_PREFIX"]

#: The boolean input of a switchboard model: one element per candidate node.
SWITCH_INPUT = "opsdk_lower"
#: Prefix of every node opsdk inserts.
CAST_PREFIX = "opsdk_precision/"
_ONNX_LOW = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16}


def float_tensors(model: onnx.ModelProto, shapes_given: bool = False) -> set[str]:
    """Names of the model's float32 tensors (graph inputs, initializers, node outputs).

    Types come from the initializers, ``Constant`` nodes and ONNX shape inference, which
    knows the opsdk operators the model uses (their schemas are registered first); a node
    output they leave untyped is refused (its rounding could not be decided), naming it.
    ``shapes_given``: the caller was given input shapes (the message then suggests none).
    """
    from ...onnx import infer_shapes

    g = model.graph
    types: dict[str, int] = {i.name: i.data_type for i in g.initializer}
    inferred = infer_shapes(model)
    for vi in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            types[vi.name] = vi.type.tensor_type.elem_type
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    types[n.output[0]] = a.t.data_type
    unknown = [(n, t) for n in g.node for t in n.output if t and t not in types]
    if unknown:
        _refuse_untyped(unknown, len(unknown), shapes_given)
    return {t for t, e in types.items() if e == TensorProto.FLOAT}


def _refuse_untyped(unknown: Sequence[tuple[Any, str]], count: int, shapes_given: bool) -> None:
    """The error for outputs ONNX shape inference left untyped; it suggests only what the
    caller has not done already."""
    from ...onnx import is_standard_domain, known_specs

    node, t = unknown[0]
    label = node.name or node.op_type
    fixes = ["declare the types (value_info)"]
    if not is_standard_domain(node.domain) and (node.domain, node.op_type) not in known_specs():
        fixes.insert(0, f"make {node.domain}::{node.op_type} an opsdk operator (opsdk new "
                     f"{node.op_type}, or add its folder to OPSDK_OPERATORS_PATH) so its "
                     "spec.py types its outputs")
    elif not shapes_given:
        fixes.insert(0, "give the model's inputs static shapes (--input-shape)")
    raise SpecError(f"node {label!r}: ONNX shape inference gives no element type for its "
                    f"output {t!r} ({count} such tensors); {', or '.join(fixes)}")


class _Builder:
    """New nodes and renamed tensors for one lowered copy of a graph."""

    def __init__(self, model: onnx.ModelProto, low: str, saturate: bool = False) -> None:
        self.model = onnx.ModelProto()
        self.model.CopyFrom(model)
        self.low = _ONNX_LOW[low]
        self.rounded: dict[str, str] = {}
        self.fresh = FreshNames(self.model)
        self.saturate = saturate
        self.limits: dict[str, str] = {}
        if saturate:
            big = float(ml_dtypes.finfo(getattr(ml_dtypes, low, np.float16)).max)
            for name, v in (("zero", 0.0), ("max", big), ("min", -big)):
                self.limits[name] = self._name(name)
                self.model.graph.initializer.append(
                    onnx.numpy_helper.from_array(np.array(v, np.float32), self.limits[name]))

    def _name(self, what: str) -> str:
        """A name fresh in the model: ``opsdk_precision/<what>``, numbered if taken."""
        return self.fresh(f"{CAST_PREFIX}{what}")

    def round_pair(self, src: str, dst: str) -> list[onnx.NodeProto]:
        mid = self._name("f16")
        pre: list[onnx.NodeProto] = []
        if self.saturate:
            nan, clean, clipped = self._name("isnan"), self._name("nan0"), self._name("sat")
            pre = [helper.make_node("IsNaN", [src], [nan], name=self._name("isnan")),
                   helper.make_node("Where", [nan, self.limits["zero"], src], [clean],
                                    name=self._name("nan_to_zero")),
                   helper.make_node("Clip", [clean, self.limits["min"], self.limits["max"]],
                                    [clipped], name=self._name("saturate"))]
            src = clipped
        return [*pre,
                helper.make_node("Cast", [src], [mid], name=self._name("cast_in"), to=self.low),
                helper.make_node("Cast", [mid], [dst], name=self._name("cast_out"),
                                 to=TensorProto.FLOAT)]


def lower_model(model: onnx.ModelProto, assigned: Sequence[NodeDtype],
                floats: set[str], low: str = "float16", saturate: bool = False
                ) -> onnx.ModelProto:
    """A copy of ``model`` with Cast pairs where ATC lowers (see the module docstring).

    Example:
        >>> # see tests/ascend/test_model_precision.py::test_casts_are_inserted_where_atc_lowers
    """
    b = _Builder(model, low, saturate)
    nodes = list(b.model.graph.node)
    low_values: set[str] = set()
    new: list[onnx.NodeProto] = []
    for node, d in zip(nodes, assigned, strict=True):
        if d.run not in (LOW, LOW_IN):
            fin = [t for t in node.input if t in floats]
            if d.run == "-" and fin and all(t in low_values for t in fin):
                low_values.update(t for t in node.output if t in floats)
            new.append(node)
            continue
        for k, t in enumerate(node.input):
            if t not in floats or t in low_values:
                continue
            if t not in b.rounded:
                b.rounded[t] = b.fresh(f"{t}__opsdk_{low}")
                new.extend(b.round_pair(t, b.rounded[t]))
            node.input[k] = b.rounded[t]
        new.append(node)
        if d.run == LOW:
            for k, t in enumerate(node.output):
                if t in floats:
                    raw = b.fresh(f"{t}__opsdk_f32")
                    node.output[k] = raw
                    new.extend(b.round_pair(raw, t))
                    low_values.add(t)
    del b.model.graph.node[:]
    b.model.graph.node.extend(new)
    return b.model


def switchboard(model: onnx.ModelProto, candidates: Sequence[NodeDtype], floats: set[str],
                low: str = "float16", saturate: bool = False) -> onnx.ModelProto:
    """``model`` with each candidate's rounding switched by ``opsdk_lower[i]`` (bool [N]).

    A switched node rounds its float inputs (idempotent on values already rounded) and, for
    LOW nodes, its float outputs: ``Where(flag, Cast(Cast(t, low), float), t)``. The switch
    is the last graph input: :data:`SWITCH_INPUT`, numbered where the model has that name.
    """
    b = _Builder(model, low, saturate)
    g = b.model.graph
    switch = b.fresh(SWITCH_INPUT)
    g.input.append(helper.make_tensor_value_info(switch, TensorProto.BOOL, [len(candidates)]))
    slot = {c.index: (i, c) for i, c in enumerate(candidates)}
    new: list[onnx.NodeProto] = []
    for idx, node in enumerate(list(g.node)):
        if idx not in slot:
            new.append(node)
            continue
        i, c = slot[idx]
        flag, index = b._name(f"flag_{i}"), b._name(f"slot_{i}")
        g.initializer.append(onnx.numpy_helper.from_array(np.array(i, np.int64), index))
        new.append(helper.make_node("Gather", [switch, index], [flag],
                                    name=b._name("flag"), axis=0))
        for k, t in enumerate(node.input):
            if t in floats:
                switched = b.fresh(f"{t}__opsdk_sw{i}_{k}")
                new.extend(_switched(b, t, switched, flag))
                node.input[k] = switched
        new.append(node)
        if c.run == LOW:
            for k, t in enumerate(node.output):
                if t in floats:
                    node.output[k] = raw = b.fresh(f"{t}__opsdk_raw{i}")
                    new.extend(_switched(b, raw, t, flag))
    del g.node[:]
    g.node.extend(new)
    return b.model


def _switched(b: _Builder, src: str, dst: str, flag: str) -> list[onnx.NodeProto]:
    rounded = b.fresh(f"{dst}__r")
    return [*b.round_pair(src, rounded),
            helper.make_node("Where", [flag, rounded, src], [dst], name=b._name("switch"))]


def flags(candidates: Sequence[NodeDtype], assigned: Sequence[NodeDtype]) -> np.ndarray:
    """The switchboard's input for one assignment: which candidates it lowers."""
    low = {d.index for d in assigned if d.lowered}
    return np.array([c.index in low for c in candidates], dtype=bool)


def inserted(model: onnx.ModelProto) -> list[Any]:
    """The Cast nodes opsdk inserted: (name, input, output, to)."""
    return [(n.name, n.input[0], n.output[0], n.attribute[0].i) for n in model.graph.node
            if n.name.startswith(CAST_PREFIX) and n.op_type == "Cast"]
