"""Models and a build helper for the ascend (npu_ge) Triton target's tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk.triton import (
    build_repository,
)
from tests._helpers.triton_options import options


def two_op_model(custom_version: int = 1, out_dims: tuple[object, ...] = ("N", 8)) -> onnx.ModelProto:
    """x -> MatMul -> ThresholdedRelu -> Add -> Softmax -> Mul -> y: two custom ops."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
        helper.make_node("ThresholdedRelu", ["h"], ["t"], name="trelu", domain="com.opsdk",
                         alpha=0.25),
        helper.make_node("Add", ["t", "b"], ["a"], name="add"),
        helper.make_node("Softmax", ["a"], ["s"], name="softmax", domain="com.opsdk", axis=-1),
        helper.make_node("Mul", ["s", "two"], ["y"], name="scale"),
    ]
    graph = helper.make_graph(
        nodes, "two_ops", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 16])],
        [helper.make_tensor_value_info("y", T.FLOAT, list(out_dims))],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b"),
         numpy_helper.from_array(np.array(2.0, np.float32), "two")],
    )
    model = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.opsdk", custom_version)])
    model.ir_version = 9
    return model


def build(tmp_path: Path, model: onnx.ModelProto, **kw: object) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    src = tmp_path / "src.onnx"
    onnx.save(model, str(src))
    opts = options(**{"name": "net", "target": "ascend", "cann": "8.1.RC1", **kw})
    return build_repository(src, tmp_path / "repo", opts)
