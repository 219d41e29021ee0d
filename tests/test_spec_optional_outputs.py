"""Optional outputs in the spec: ``Output(..., optional=True)`` may be left out of a node
(an empty name, or absent at the end); ONNX's checker, shape inference, opsdk's node checks
and Session accept such a node, and a required output left out is refused by name."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from opsdk.errors import SpecError
from opsdk.onnx import Session, check_custom_node, register_schema
from opsdk.onnx._schema import infer_shapes
from opsdk.onnx._session import ReferenceKernel
from opsdk.spec import Attr, Input, OpSpec, Output, TensorType


def _spec() -> OpSpec:
    spec = OpSpec("RowRms", domain="com.optout", inputs=[Input("x"), Input("gamma")],
                  outputs=[Output("y"), Output("rstd", "float32", optional=True)],
                  attrs=[Attr("epsilon", "float", 1e-6)], types={"T": ("float32",)})

    @spec.register_shape
    def _shape(x, gamma, *, epsilon):  # type: ignore[no-untyped-def]
        return [x, TensorType(tuple(x.shape[:-1]) + (1,), "float32")]

    @spec.register_reference
    def _ref(x, gamma, *, epsilon):  # type: ignore[no-untyped-def]
        rstd = 1 / np.sqrt(np.mean(x * x, -1, keepdims=True) + epsilon)
        return (x * rstd * gamma).astype(x.dtype), rstd.astype(np.float32)

    return spec


def _model(spec: OpSpec, outputs: list[str]) -> onnx.ModelProto:
    node = h.make_node(spec.name, ["x", "gamma"], outputs, domain=spec.domain, epsilon=1e-6)
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", T.FLOAT, [3, 8]),
                                   h.make_tensor_value_info("gamma", T.FLOAT, [8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [3, 8])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17),
                                          h.make_opsetid(spec.domain, 1)])


@pytest.mark.parametrize("outputs", [["y", ""], ["y"]])
def test_a_node_may_leave_an_optional_output_out(outputs):
    spec = _spec()
    register_schema(spec)
    model = _model(spec, outputs)
    onnx.checker.check_model(model, full_check=True)
    inferred = infer_shapes(model, [spec])
    assert [o.name for o in inferred.graph.output] == ["y"]
    assert check_custom_node(spec, model.graph.node[0], model) == {"epsilon": pytest.approx(1e-6)}
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    gamma = np.linspace(0.5, 1.5, 8, dtype=np.float32)
    (y,) = Session(model, kernels={spec.name: ReferenceKernel(spec)}).run(
        None, {"x": x, "gamma": gamma})
    want = x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-6) * gamma
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_a_required_output_left_out_is_refused_by_name():
    spec = OpSpec("TwoOut", domain="com.optout", inputs=[Input("x"), Input("gamma")],
                  outputs=[Output("y"), Output("z")], types={"T": ("float32",)})
    model = _model(spec, ["y"])
    with pytest.raises(SpecError, match=r"TwoOut produces 2 \(y, z;"):
        check_custom_node(spec, model.graph.node[0], model)
    model = _model(_spec(), ["", "rstd"])
    with pytest.raises(SpecError, match=r"RowRms produces 2 \(y, rstd\?"):
        check_custom_node(_spec(), model.graph.node[0], model)


def test_the_first_output_is_never_optional():
    with pytest.raises(SpecError, match="the first output 'y' is optional"):
        OpSpec("Bad", domain="com.optout", inputs=[Input("x")],
               outputs=[Output("y", optional=True)], types={"T": ("float32",)})


def test_the_schema_marks_optional_outputs():
    from opsdk.onnx._schema import make_schema

    schema = make_schema(_spec())
    options = [o.option for o in schema.outputs]
    assert options == [onnx.defs.OpSchema.FormalParameterOption.Single,
                       onnx.defs.OpSchema.FormalParameterOption.Optional]
