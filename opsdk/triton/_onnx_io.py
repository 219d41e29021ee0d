"""Inputs and outputs of an ONNX graph, as Triton sees them (dtype names, dims, batch axis)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx

from ..onnx import input_dims
from ._errors import TritonConfigError

__all__ = ["TensorIO", "GraphIO", "read_graph_io", "TRITON_DTYPES", "STANDARD_DOMAINS"]

#: ONNX TensorProto element type -> Triton config data_type.
TRITON_DTYPES: dict[int, str] = {
    onnx.TensorProto.FLOAT: "TYPE_FP32",
    onnx.TensorProto.FLOAT16: "TYPE_FP16",
    onnx.TensorProto.BFLOAT16: "TYPE_BF16",
    onnx.TensorProto.DOUBLE: "TYPE_FP64",
    onnx.TensorProto.INT8: "TYPE_INT8",
    onnx.TensorProto.INT16: "TYPE_INT16",
    onnx.TensorProto.INT32: "TYPE_INT32",
    onnx.TensorProto.INT64: "TYPE_INT64",
    onnx.TensorProto.UINT8: "TYPE_UINT8",
    onnx.TensorProto.UINT16: "TYPE_UINT16",
    onnx.TensorProto.UINT32: "TYPE_UINT32",
    onnx.TensorProto.UINT64: "TYPE_UINT64",
    onnx.TensorProto.BOOL: "TYPE_BOOL",
    onnx.TensorProto.STRING: "TYPE_STRING",
}

STANDARD_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml"})


@dataclass(frozen=True)
class TensorIO:
    """One graph input or output: ``shape`` holds ints, or None for a symbolic/unknown dim;
    ``names`` the ONNX symbolic dim names (``""`` where a dim has none)."""

    name: str
    data_type: str
    shape: tuple[int | None, ...]
    names: tuple[str, ...] = ()

    def dims(self, batched: bool) -> list[int]:
        """Triton ``dims``: -1 for variable dims, the leading (batch) dim dropped if batched;
        ``[1]`` for a scalar: Triton refuses ``dims: [ ]``, and an empty ``reshape`` outside
        batching models, so a scalar travels as one element and the target gives it back to
        the model as rank 0 (the cpu target in model.py, ascend in the model file)."""
        if not self.shape:
            return [1]
        dims = [-1 if d is None else d for d in self.shape]
        return dims[1:] if batched else dims


@dataclass(frozen=True)
class GraphIO:
    """What `opsdk triton build` needs to know about a model."""

    inputs: tuple[TensorIO, ...]
    outputs: tuple[TensorIO, ...]
    custom_ops: tuple[str, ...]  # "domain::OpType", sorted, for nodes outside the ONNX domains

    def batchable(self) -> bool:
        """True when every input and output has a variable leading dimension."""
        return all(t.shape and t.shape[0] is None for t in self.inputs + self.outputs)

    def check_batchable(self, max_batch_size: int) -> None:
        """Raise :class:`TritonConfigError` naming the first tensor without a batch axis."""
        for kind, tensors in (("input", self.inputs), ("output", self.outputs)):
            for t in tensors:
                if not t.shape:
                    raise TritonConfigError(
                        f"{kind} '{t.name}' is a scalar, so it has no batch axis for "
                        f"max_batch_size={max_batch_size}; build with --max-batch-size 0"
                    )
                if t.shape[0] is not None:
                    raise TritonConfigError(
                        f"{kind} '{t.name}' has a fixed leading dim {t.shape[0]} "
                        f"(shape {_fmt(t.shape)}), so it cannot be the batch axis for "
                        f"max_batch_size={max_batch_size}; export the model with a symbolic "
                        "batch dim (e.g. dynamic_axes={0: 'batch'}) or build with "
                        "--max-batch-size 0"
                    )


def _fmt(shape: tuple[int | None, ...]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _tensor(value: onnx.ValueInfoProto, kind: str, model: str) -> TensorIO:
    ttype = value.type
    if not ttype.HasField("tensor_type"):
        raise TritonConfigError(
            f"{model}: {kind} '{value.name}' is not a tensor (type {ttype.WhichOneof('value')}); "
            "Triton serves tensors only"
        )
    elem = ttype.tensor_type.elem_type
    if elem not in TRITON_DTYPES:
        raise TritonConfigError(
            f"{model}: {kind} '{value.name}' has ONNX element type "
            f"{onnx.TensorProto.DataType.Name(elem)}, which Triton has no data_type for; "
            f"supported: {', '.join(onnx.TensorProto.DataType.Name(e) for e in TRITON_DTYPES)}"
        )
    if not ttype.tensor_type.HasField("shape"):
        raise TritonConfigError(
            f"{model}: {kind} '{value.name}' has no shape (not even a rank); give it one in "
            "the graph (value_info / output type) so Triton knows its dims"
        )
    # dim_value -1/0 (paddle2onnx and other exporters) is dynamic, as in ONNX Runtime
    dims = tuple(d if isinstance(d, int) else None for d in input_dims(value) or ())
    names = tuple(d.dim_param for d in ttype.tensor_type.shape.dim)
    return TensorIO(value.name, TRITON_DTYPES[elem], dims, names)


def read_graph_io(model: str | Path | onnx.ModelProto) -> GraphIO:
    """Read the real (non-initializer) inputs, the outputs and the custom ops of a model.

    Output shapes missing from the graph are filled in by ONNX shape inference first.

    Example:
        >>> import onnx
        >>> from onnx import helper, TensorProto as T
        >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
        ...     [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        ...     [helper.make_tensor_value_info("y", T.FLOAT, ["n", 4])])
        >>> io = read_graph_io(helper.make_model(g))
        >>> io.inputs[0].dims(batched=True), io.batchable()
        ([4], True)
    """
    label = str(model) if not isinstance(model, onnx.ModelProto) else "model"
    proto = model if isinstance(model, onnx.ModelProto) else _load(Path(model))
    if any(not o.type.tensor_type.HasField("shape") for o in proto.graph.output):
        try:
            proto = onnx.shape_inference.infer_shapes(proto)
        except Exception:  # custom domains may defeat inference; the check below reports it
            pass
    inits = {i.name for i in proto.graph.initializer}
    inputs = tuple(_tensor(v, "input", label) for v in proto.graph.input if v.name not in inits)
    outputs = tuple(_tensor(v, "output", label) for v in proto.graph.output)
    custom = sorted(
        {f"{n.domain}::{n.op_type}" for n in _all_nodes(proto.graph)
         if n.domain not in STANDARD_DOMAINS}
    )
    return GraphIO(inputs, outputs, tuple(custom))


def _all_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    nodes = list(graph.node)
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                nodes += _all_nodes(attr.g)
            for g in attr.graphs:
                nodes += _all_nodes(g)
    return nodes


def _load(path: Path) -> onnx.ModelProto:
    if not path.is_file():
        raise TritonConfigError(f"ONNX model {path} does not exist; pass the path of a .onnx file")
    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as e:
        raise TritonConfigError(f"{path} is not a readable ONNX model: {e}") from e
