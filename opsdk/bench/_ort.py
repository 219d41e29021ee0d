"""ONNX Runtime equivalents of operators: the standard op or subgraph, run in-process.

An equivalent is built with ``onnx.helper`` from the benchmark's own inputs and
attributes and run by ``onnxruntime.InferenceSession`` on the CPU with the same number
of intra-op threads as the opsdk kernel, one inter-op thread, all graph optimisations, and
preallocated outputs bound through IOBinding (opsdk is timed with destination passing too,
so neither side allocates outputs inside the timed call).

Built in: ThresholdedRelu, Gelu, LayerNormalization, Softmax, GridSample (one standard
node each) and FusedConvBnRelu (Conv + BatchNormalization + Relu with weights and
BatchNormalization parameters as initializers, so ONNX Runtime can fold and prepack them
as it does in a real model). :func:`register_ort_equivalent` adds more; otherwise operators
with ``spec.onnx_op`` get a node of that type with the same inputs and attributes, and
operators with a fallback function get the model ``opsdk export --with-function`` writes
(the decomposition an exporter would have left in the graph).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import dtype_name, onnx_elem_type
from ..errors import OpsdkError
from ..spec import OpSpec

__all__ = ["OrtGraph", "OrtRunner", "ort_equivalent", "register_ort_equivalent", "OPSET",
           "node_opsets", "single_node"]

#: The ONNX opset of the equivalents (Gelu needs 20; every other op here is unchanged).
OPSET = 20


@dataclass
class OrtGraph:
    """An equivalent model and which benchmark inputs feed which graph input.

    ``feeds[i]`` is the graph input name of the benchmark's input ``i``, or None when the
    input is baked into the model as an initializer (or absent).
    """

    model: Any
    feeds: list[str | None]
    note: str = ""
    output_names: list[str] = field(default_factory=list)


Builder = Callable[
    [OpSpec, Sequence[np.ndarray | None], dict[str, Any], Sequence[np.ndarray]], OrtGraph
]
_BUILDERS: dict[str, Builder] = {}


def register_ort_equivalent(op_name: str) -> Callable[[Builder], Builder]:
    """Register the ONNX Runtime equivalent of an operator; usable as a decorator.

    The builder gets ``(spec, inputs, attrs, outputs)`` (the benchmark's arrays) and
    returns an :class:`OrtGraph`.

    Example:
        >>> @register_ort_equivalent("MyRelu")
        ... def _relu(spec, inputs, attrs, outputs):
        ...     return single_node("Relu", spec, inputs, {}, outputs)
    """

    def deco(fn: Builder) -> Builder:
        _BUILDERS[op_name] = fn
        return fn

    return deco


def _value_info(name: str, a: np.ndarray) -> Any:
    from onnx import helper

    return helper.make_tensor_value_info(name, onnx_elem_type(dtype_name(a.dtype)), a.shape)


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any],
           opsets: dict[str, int] | None = None) -> Any:
    from onnx import helper

    graph = helper.make_graph(nodes, "opsdk_bench", inputs, outputs, initializer=inits)
    imports = [helper.make_opsetid(d, v) for d, v in (opsets or {"": OPSET}).items()]
    model = helper.make_model(graph, opset_imports=imports)
    standard = [i for i in imports if i.domain in ("", "ai.onnx", "ai.onnx.ml")]
    model.ir_version = max(9, helper.find_min_ir_version_for(standard))  # ONNX's domains only
    return model


def node_opsets(op_type: str, domain: str = "", version: int | None = None) -> dict[str, int]:
    """The opset imports a model with one ``op_type`` node needs: ai.onnx at :data:`OPSET`,
    or at the op's newest version when it came later (RMSNormalization: 23); a node of
    another domain (ONNX Runtime's ``com.microsoft``) adds that domain at ``version`` (1).

    Example:
        >>> node_opsets("Softmax"), node_opsets("RMSNormalization")
        ({'': 20}, {'': 23})
        >>> node_opsets("SkipSimplifiedLayerNormalization", "com.microsoft")
        {'': 20, 'com.microsoft': 1}
    """
    import onnx

    if domain not in ("", "ai.onnx"):
        return {"": OPSET, domain: version or 1}
    if version is not None:
        return {"": version}
    if onnx.defs.has(op_type, OPSET, "") or not onnx.defs.has(op_type):
        return {"": OPSET}  # standard at OPSET, or an ONNX Runtime op in the ai.onnx domain
    return {"": max(OPSET, onnx.defs.get_schema(op_type).since_version)}


def single_node(
    op_type: str,
    spec: OpSpec,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any],
    outputs: Sequence[np.ndarray] | None = None,
    *,
    domain: str = "",
    version: int | None = None,
    node_outputs: Sequence[str] | None = None,
) -> OrtGraph:
    """One node with the spec's input/output names; outputs typed like inputs[0] unless
    given. The model imports the opset the node needs (:func:`node_opsets`): an opset-23
    op, or an ONNX Runtime contrib op with ``domain="com.microsoft"``. ``node_outputs`` lists
    the node's outputs in the op's order when they differ from the spec's ("" for one the
    spec has not; each spec output named once).

    Example:
        >>> import numpy as np
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("MyRms", domain="com.x", inputs=[Input("x"), Input("scale")],
        ...            outputs=[Output("y")], types={"T": ("float32",)})
        >>> x, w = np.zeros((2, 8), np.float32), np.ones(8, np.float32)
        >>> g = single_node("RMSNormalization", s, [x, w], {"axis": -1}, [x])
        >>> [(o.domain, o.version) for o in g.model.opset_import]
        [('', 23)]
    """
    from onnx import helper

    names = [i.name for i in spec.inputs]
    present = [(n, a) for n, a in zip(names, inputs) if a is not None]
    node_inputs = [n if a is not None else "" for n, a in zip(names, inputs)]
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    out_names = [o.name for o in spec.outputs]
    wired = list(node_outputs) if node_outputs is not None else out_names
    if sorted(n for n in wired if n) != sorted(out_names):
        raise OpsdkError(f"{spec.name}: node_outputs {wired} must name each output of the spec "
                         f"({', '.join(out_names)}) once, '' for the node's others")
    node = helper.make_node(op_type, node_inputs, wired, domain=domain or None, **attrs)
    first = next(a for a in inputs if a is not None)
    outs = list(outputs) if outputs else [first] * len(out_names)
    graph_outputs = [_value_info(n, o) for n, o in zip(out_names, outs)]
    model = _model([node], [_value_info(n, a) for n, a in present], graph_outputs, [],
                   node_opsets(op_type, domain, version))
    return OrtGraph(model, [n if a is not None else None for n, a in zip(names, inputs)],
                    output_names=out_names)


def _standard(op_type: str) -> Builder:
    def build(
        spec: OpSpec,
        inputs: Sequence[np.ndarray | None],
        attrs: dict[str, Any],
        outputs: Sequence[np.ndarray],
    ) -> OrtGraph:
        return single_node(op_type, spec, inputs, attrs, outputs)

    return build


def _grid_sample(
    spec: OpSpec,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any],
    outputs: Sequence[np.ndarray],
) -> OrtGraph:
    mode = str(attrs.get("mode", "linear"))
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    return single_node("GridSample", spec, inputs, {**attrs, "mode": mode}, outputs)


def _conv_bn_relu(
    spec: OpSpec,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any],
    outputs: Sequence[np.ndarray],
) -> OrtGraph:
    from onnx import helper, numpy_helper

    x, w = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) > 2 else None
    if x is None or w is None:
        raise OpsdkError(f"{spec.name}: the ONNX Runtime equivalent needs inputs x and w")
    m = w.shape[0]
    dt = w.dtype
    inits = [numpy_helper.from_array(w, "w")]
    conv_in = ["x", "w"]
    if b is not None:
        inits.append(numpy_helper.from_array(b, "b"))
        conv_in.append("b")
    for name, value in (("bn_scale", 1.0), ("bn_bias", 0.0), ("bn_mean", 0.0), ("bn_var", 1.0)):
        inits.append(numpy_helper.from_array(np.full(m, value, dt), name))
    conv_attrs = {k: attrs[k] for k in ("strides", "pads", "dilations", "group") if k in attrs}
    nodes = [
        helper.make_node("Conv", conv_in, ["conv"], **conv_attrs),
        helper.make_node("BatchNormalization",
                         ["conv", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn"],
                         epsilon=0.0),
        helper.make_node("Relu", ["bn"], [spec.outputs[0].name]),
    ]
    out = _value_info(spec.outputs[0].name, outputs[0])
    model = _model(nodes, [_value_info("x", x)], [out], inits)
    return OrtGraph(model, ["x", None, None], "Conv+BatchNormalization+Relu, weights as "
                    "initializers", output_names=[spec.outputs[0].name])


_BUILDERS["GridSample"] = _grid_sample
_BUILDERS["FusedConvBnRelu"] = _conv_bn_relu
for _op in ("ThresholdedRelu", "Gelu", "LayerNormalization", "Softmax"):
    _BUILDERS[_op] = _standard(_op)


def ort_equivalent(
    spec: OpSpec,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any],
    outputs: Sequence[np.ndarray],
) -> OrtGraph | None:
    """The ONNX Runtime equivalent of ``spec`` on these arrays, or None if there is none.

    Example:
        >>> import numpy as np
        >>> from opsdk.spec import OpSpec, Input, Output
        >>> s = OpSpec("Softmax", domain="com.x", inputs=[Input("input")],
        ...            outputs=[Output("output")], types={"T": ("float32",)})
        >>> x = np.zeros((2, 3), np.float32)
        >>> ort_equivalent(s, [x], {"axis": -1}, [x]).model.graph.node[0].op_type
        'Softmax'
    """
    builder = _BUILDERS.get(spec.name)
    if builder is None and spec.onnx_op:
        builder = _standard(spec.onnx_op)
    if builder is None and spec.function is not None:
        builder = _fallback_function
    return builder(spec, inputs, attrs, outputs) if builder is not None else None


def _fallback_function(
    spec: OpSpec,
    inputs: Sequence[np.ndarray | None],
    attrs: dict[str, Any],
    outputs: Sequence[np.ndarray],
) -> OrtGraph:
    """The operator's ONNX fallback (its decomposition, which ONNX Runtime inlines): the
    graph an exporter writes for the operator, e.g. Mul(Mul(gate, Sigmoid(gate)), up)."""
    from ..onnx import export_model, function_opset
    from ..spec import REQUIRED

    names = [i.name for i in spec.inputs]
    shapes = {n: a.shape for n, a in zip(names, inputs) if a is not None}
    dtypes = {n: dtype_name(a.dtype) for n, a in zip(names, inputs) if a is not None}
    given = {k: v for k, v in attrs.items() if v is not REQUIRED}
    try:
        model = export_model(spec, shapes=shapes, dtype=dtypes, attrs=given,
                             opset=function_opset(spec, OPSET), with_function=True)
    except OpsdkError as e:
        raise OpsdkError(f"{spec.name}: its ONNX fallback cannot be the ONNX Runtime "
                         f"equivalent: {e}") from None
    return OrtGraph(model, [n if a is not None else None for n, a in zip(names, inputs)],
                    "the operator's ONNX fallback (decomposition)",
                    output_names=[o.name for o in spec.outputs])


class OrtRunner:
    """An ONNX Runtime session of an :class:`OrtGraph`, bound to fixed inputs and outputs."""

    def __init__(
        self,
        graph: OrtGraph,
        inputs: Sequence[np.ndarray | None],
        outputs: Sequence[np.ndarray],
        threads: int,
    ) -> None:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(
                graph.model.SerializeToString(), so, providers=["CPUExecutionProvider"]
            )
        except Exception as e:  # ORT raises its own exception types (no kernel, bad graph)
            raise OpsdkError(f"ONNX Runtime cannot run the equivalent: {_first_line(e)}") from e
        self.feeds = {n: a for n, a in zip(graph.feeds, inputs) if n is not None and a is not None}
        self.outputs = list(outputs)
        self.output_names = graph.output_names or [o.name for o in self.session.get_outputs()]
        self._binding = self._bind()

    def _bind(self) -> Any:
        try:
            binding = self.session.io_binding()
            for name, arr in self.feeds.items():
                binding.bind_cpu_input(name, arr)
            for name, arr in zip(self.output_names, self.outputs):
                binding.bind_output(name, "cpu", 0, arr.dtype.type, list(arr.shape),
                                    arr.ctypes.data)
            return binding
        except Exception:  # e.g. a dtype IOBinding cannot describe: fall back to run()
            return None

    def __call__(self) -> None:
        if self._binding is not None:
            self.session.run_with_iobinding(self._binding)
        else:
            results = self.session.run(self.output_names, self.feeds)
            for dst, src in zip(self.outputs, results):
                dst[...] = src


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[-1] if text else type(e).__name__
