"""Fallback functions: an operator's decomposition into standard ONNX ops.

The contract of ``spec.register_function(fn)``: ``fn(fb)`` receives a
:class:`FunctionBuilder` for one ai.onnx opset, adds nodes with ``fb.op(...)`` and returns
the value name (or a sequence of names, one per spec output) holding the results. Function
attributes are referenced, not copied, with ``fb.attr("alpha")``, so one FunctionProto
serves every node whatever its attribute values. Example, in an operator's spec.py::

    @SPEC.register_function
    def _decomposition(fb):
        x = fb.input("x")
        alpha = fb.op("CastLike", fb.op("Constant", value_float=fb.attr("alpha")), x)
        zero = fb.op("CastLike", fb.op("Constant", value_float=0.0), x)
        return fb.op("Where", fb.op("Greater", x, alpha), x, zero)

``opsdk export --with-function`` embeds the result as a model-local FunctionProto, so any
ONNX runtime can run the model without opsdk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import onnx
from onnx import AttributeProto, FunctionProto, ModelProto, NodeProto

from .._generated import BANNER
from ..errors import SpecError
from ..spec import OpSpec
from ._model import opset_version
from ._schema import ATTR_PROTO_TYPES, onnx_attr

__all__ = [
    "AttrRef", "FunctionBuilder", "build_function", "attach_function", "evaluate_function",
    "MIN_FUNCTION_IR",
]

#: Model-local functions need IR version 8 (ONNX 1.10) or later.
MIN_FUNCTION_IR = 8


@dataclass(frozen=True)
class AttrRef:
    """A reference to one of the operator's attributes inside a function body."""

    name: str
    type: str


class FunctionBuilder:
    """Collects the nodes of one function body; see the module docstring for the contract.

    Attributes:
        spec: the operator the function implements.
        opset: the ai.onnx opset version the body must use (the model's).

    Example:
        >>> fb = FunctionBuilder(spec, 15)  # doctest: +SKIP
        >>> y = fb.op("Relu", fb.input("x"))  # doctest: +SKIP
    """

    def __init__(self, spec: OpSpec, opset: int) -> None:
        self.spec = spec
        self.opset = opset
        self.nodes: list[NodeProto] = []
        self.domains: dict[str, int] = {"": opset}
        self._count = 0

    def input(self, name: str) -> str:
        """The value name of spec input ``name`` (checked)."""
        names = [i.name for i in self.spec.inputs]
        if name not in names:
            raise SpecError(
                f"{self.spec.name}: fallback function reads input {name!r}; inputs are {names}"
            )
        return name

    def attr(self, name: str) -> AttrRef:
        """A reference to spec attribute ``name`` for use as a node attribute value."""
        a = self.spec.attr_map.get(name)
        if a is None:
            raise SpecError(
                f"{self.spec.name}: fallback function refers to attribute {name!r}; "
                f"declared: {', '.join(self.spec.attr_map) or 'none'}"
            )
        return AttrRef(name, a.type)

    def op(
        self,
        op_type: str,
        *inputs: str | None,
        outputs: int = 1,
        domain: str = "",
        version: int | None = None,
        **attrs: Any,
    ) -> Any:
        """Append a node; returns its output name (or a tuple when ``outputs`` > 1)."""
        self._check_op(op_type, domain, version)
        inputs = self._axes_input(op_type, domain, inputs, attrs)
        names = []
        for _ in range(outputs):
            self._count += 1
            names.append(f"_{op_type.lower()}{self._count}")
        node = onnx.helper.make_node(
            op_type, [i or "" for i in inputs], names, domain=domain or None
        )
        for key, value in attrs.items():
            node.attribute.append(self._attribute(key, value))
        self.nodes.append(node)
        return names[0] if outputs == 1 else tuple(names)

    def _axes_input(self, op_type: str, domain: str, inputs: tuple[str | None, ...],
                    attrs: dict[str, Any]) -> tuple[str | None, ...]:
        """``axes=`` of an op that takes axes as an input at this opset (ReduceSum from 13,
        the other reductions from 18): a Constant input instead of the attribute, so one
        decomposition serves every opset."""
        if domain not in ("", "ai.onnx") or "axes" not in attrs or len(inputs) != 1 \
                or isinstance(attrs["axes"], AttrRef):
            return inputs
        schema = onnx.defs.get_schema(op_type, self.opset, "")
        if [i.name for i in schema.inputs][1:2] != ["axes"]:
            return inputs
        axes = attrs.pop("axes")
        axes = [int(axes)] if isinstance(axes, int) else [int(a) for a in axes]
        return (inputs[0], self.op("Constant", value_ints=axes))

    def _attribute(self, key: str, value: Any) -> AttributeProto:
        if isinstance(value, AttrRef):
            ref = AttributeProto(name=key, ref_attr_name=value.name)
            ref.type = cast(Any, ATTR_PROTO_TYPES[value.type])
            return ref
        return onnx.helper.make_attribute(key, value)

    def _check_op(self, op_type: str, domain: str, version: int | None) -> None:
        if domain in ("", "ai.onnx"):
            if not onnx.defs.has(op_type, self.opset, ""):
                first = _first_version(op_type)
                need = f"needs opset >= {first}" if first else "is not an ONNX operator"
                raise SpecError(
                    f"{self.spec.name}: the fallback function uses {op_type}, which "
                    f"{need}; the model uses ai.onnx opset {self.opset}"
                    + (f" (export with --opset {first} or later)" if first else "")
                )
            return
        if version is None:
            raise SpecError(
                f"{self.spec.name}: fallback function node {op_type} in domain {domain!r} "
                "needs version=<opset of that domain>"
            )
        self.domains[domain] = version


def function_opset(spec: OpSpec, at_least: int) -> int:
    """The lowest ai.onnx opset, ``at_least`` or above, the fallback function builds for.

    Raises:
        SpecError: the function builds for no opset up to the newest ONNX knows (the error
            of ``at_least``, which names the operator and what it needs).

    Example:
        >>> from opsdk.registry import find_operator
        >>> function_opset(find_operator("GridSample").spec, 15)
        16
    """
    newest = int(onnx.defs.onnx_opset_version())
    first_error: SpecError | None = None
    for opset in range(at_least, max(at_least, newest) + 1):
        try:
            build_function(spec, opset)
        except SpecError as e:
            first_error = first_error or e
            continue
        return opset
    assert first_error is not None
    raise first_error


def _first_version(op_type: str) -> int | None:
    try:
        versions = [
            s.since_version
            for s in onnx.defs.get_all_schemas_with_history()
            if s.name == op_type and s.domain == ""
        ]
    except Exception:  # pragma: no cover - defensive
        return None
    return min(versions) if versions else None


def build_function(spec: OpSpec, opset: int) -> FunctionProto:
    """Run ``spec.function`` for ai.onnx ``opset`` and return the FunctionProto.

    Example:
        >>> f = build_function(spec, 15)  # doctest: +SKIP
        >>> [n.op_type for n in f.node]  # doctest: +SKIP
        ['Constant', 'CastLike', 'Constant', 'CastLike', 'Greater', 'Where']
    """
    if spec.function is None:
        raise SpecError(
            f"{spec.name} has no fallback function; add one to spec.py with "
            "@SPEC.register_function (see docs/onnx.md)"
        )
    fb = FunctionBuilder(spec, opset)
    try:
        result = spec.function(fb)
    except SpecError:
        raise
    except Exception as e:
        raise SpecError(
            f"{spec.name}: the fallback function failed: {type(e).__name__}: {e}"
        ) from e
    results = [result] if isinstance(result, str) else list(result or ())
    if len(results) != len(spec.outputs):
        raise SpecError(
            f"{spec.name}: the fallback function returned {len(results)} values, the spec "
            f"declares {len(spec.outputs)} outputs ({', '.join(o.name for o in spec.outputs)})"
        )
    nodes = _bind_outputs(fb, results)
    return onnx.helper.make_function(
        spec.domain,
        spec.name,
        [i.name for i in spec.inputs],
        [o.name for o in spec.outputs],
        nodes,
        [onnx.helper.make_opsetid(d, v) for d, v in fb.domains.items()],
        attributes=[a.name for a in spec.attrs if a.required],
        attribute_protos=[onnx_attr(a, a.default) for a in spec.attrs if not a.required],
        doc_string=f"fallback decomposition of {spec.domain}::{spec.name}; {BANNER}",
    )


def _bind_outputs(fb: FunctionBuilder, results: Sequence[str]) -> list[NodeProto]:
    nodes = list(fb.nodes)
    produced = {o for n in nodes for o in n.output}
    renames: dict[str, str] = {}
    for value, out in zip(results, fb.spec.outputs, strict=True):
        if value in produced and value not in renames:
            renames[value] = out.name
        else:  # an input, or a value returned twice: copy it
            nodes.append(onnx.helper.make_node("Identity", [renames.get(value, value)], [out.name]))
    for n in nodes:
        for seq in (n.input, n.output):
            for i, name in enumerate(seq):
                if name in renames:
                    seq[i] = renames[name]
    return nodes


def attach_function(model: ModelProto, spec: OpSpec) -> FunctionProto:
    """Embed ``spec``'s fallback function in ``model`` (once); returns it.

    The function uses the model's ai.onnx opset, as ONNX requires.

    Example:
        >>> attach_function(model, spec)  # doctest: +SKIP
    """
    for f in model.functions:
        if (f.domain, f.name) == (spec.domain, spec.name):
            return f
    opset = opset_version(model, "")
    if opset is None:
        raise SpecError(
            f"{spec.name}: the model imports no ai.onnx opset; the fallback function needs one"
        )
    func = build_function(spec, opset)
    for imp in func.opset_import:
        if imp.domain and opset_version(model, imp.domain) is None:
            model.opset_import.append(onnx.helper.make_opsetid(imp.domain, imp.version))
    model.functions.append(func)
    model.ir_version = max(model.ir_version, MIN_FUNCTION_IR)
    return func


#: id(spec) -> (spec, opset, evaluator); the spec is kept so that its id stays unique.
_EVALUATORS: dict[int, tuple[OpSpec, int, Any]] = {}


def evaluate_function(spec: OpSpec, inputs: Sequence[Any], attrs: dict[str, Any],
                      opset: int = 21) -> Any:
    """Run ``spec``'s decomposition on NumPy ``inputs`` with ONNX's reference implementation.

    Returns one array, or a tuple when the spec has several outputs. A scaffolded operator's
    reference.py uses it when the operator was created from a decomposition.

    Example:
        >>> from opsdk.registry import load_spec
        >>> import numpy as np
        >>> spec = load_spec("operators/thresholded_relu")  # doctest: +SKIP
        >>> evaluate_function(spec, [np.array([0.5, 2.0])], {"alpha": 1.0})  # doctest: +SKIP
        array([0., 2.])
    """
    from onnx.reference import ReferenceEvaluator

    cached = _EVALUATORS.get(id(spec))
    if cached is None or cached[1] != opset:
        if len(_EVALUATORS) > 32:
            _EVALUATORS.clear()
        cached = _EVALUATORS[id(spec)] = (spec, opset,
                                          ReferenceEvaluator(build_function(spec, opset)))
    feeds = {i.name: a for i, a in zip(spec.inputs, inputs, strict=False) if a is not None}
    outs: list[Any] = list(cached[2].run(None, feeds, attributes=spec.resolve_attrs(attrs)))
    return outs[0] if len(outs) == 1 else tuple(outs)
