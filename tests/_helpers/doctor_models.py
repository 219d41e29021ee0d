"""Small ONNX models for the doctor's tests."""

from __future__ import annotations

from onnx import TensorProto, helper


def build(nodes, inputs, outputs=None, opset=15, extra_imports=(), inits=()):
    graph = helper.make_graph(
        nodes,
        "g",
        inputs,
        outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=list(inits),
    )
    imports = [helper.make_opsetid("", opset), *(helper.make_opsetid(d, v) for d, v in extra_imports)]
    return helper.make_model(graph, opset_imports=imports, ir_version=8)


def x_input(shape=(1, 3, 8, 8)):
    return helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
