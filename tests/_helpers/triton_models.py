"""ONNX models and readers the Triton tests share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto as T
from onnx import helper, numpy_helper


def mlp_model(batch: str | int = "batch", dtype: int = T.FLOAT) -> onnx.ModelProto:
    """y = Relu(x @ W + z): two inputs with a batch axis, one output."""
    w = np.arange(16 * 8, dtype=np.float32).reshape(16, 8) / 100.0
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["xw"]),
            helper.make_node("Add", ["xw", "z"], ["s"]),
            helper.make_node("Relu", ["s"], ["y"]),
        ],
        "mlp",
        [
            helper.make_tensor_value_info("x", dtype, [batch, 16]),
            helper.make_tensor_value_info("z", dtype, [batch, 8]),
        ],
        [helper.make_tensor_value_info("y", dtype, [batch, 8])],
        [numpy_helper.from_array(w, "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def parse_config(text: str) -> object:
    from tritonclient.grpc import model_config_pb2

    return text_format.Parse(text, model_config_pb2.ModelConfig())


def custom_op_model(domain: str, op: str) -> onnx.ModelProto:
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], domain=domain, alpha=1.0)], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("y", T.FLOAT, ["n", 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid(domain, 1)])


def graph_session(path: Path) -> Any:
    """opsdk's graph executor, the reference the server must match."""
    from opsdk.onnx import Session

    return Session(str(path))
