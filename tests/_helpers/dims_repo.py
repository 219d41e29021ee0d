"""A one-graph model builder and the ascend build used by the dim-propagation tests."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto as T
from onnx import helper

from opsdk.triton import (
    build_repository,
)
from tests._helpers.triton_options import options


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, list[object]], out: str = "y",
           inits: list[onnx.TensorProto] | None = None, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(k, T.FLOAT, v) for k, v in inputs.items()],
        [helper.make_tensor_value_info(out, T.FLOAT, None)], inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def build(tmp_path: Path, model: onnx.ModelProto, **kw: object) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(tmp_path / "src.onnx"))
    opts = options(**{"name": "net", "target": "ascend", "cann": "8.1.RC1", **kw})
    return build_repository(tmp_path / "src.onnx", tmp_path / "repo", opts)


def out_dims(folder: Path) -> list[object]:
    out = onnx.load(str(folder / "1" / "model.onnx")).graph.output[0]
    return [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim]
