"""Every name a rewrite invents is fresh against every name the model already holds: graph
inputs, outputs, initializers, sparse initializers, value_info, node inputs, outputs and
names, and the same in every subgraph (opsdk.onnx._names.FreshNames)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk.onnx import Session, add_node, check_model, fuse_conv_bn_relu, insert_after, replace_ops
from opsdk.onnx._names import FreshNames, graph_names

RNG = np.random.default_rng(5)


def two_block_model() -> onnx.ModelProto:
    """x -> Conv 'a_conv' -> BatchNormalization -> Relu -> Conv 'b_conv' -> ... -> y."""
    nodes, inits, x = [], [], "x"
    for p, cin, cout in (("a_", 3, 8), ("b_", 8, 4)):
        inits += [numpy_helper.from_array(v.astype(np.float32), p + k) for k, v in (
            ("w", RNG.normal(size=(cout, cin, 3, 3)) * 0.3), ("scale", RNG.random(cout) + 0.5),
            ("beta", RNG.normal(size=cout)), ("mean", RNG.normal(size=cout)),
            ("var", RNG.random(cout) + 0.1))]
        nodes += [helper.make_node("Conv", [x, p + "w"], [p + "c"], name=p + "conv", pads=[1] * 4),
                  helper.make_node("BatchNormalization", [p + "c", p + "scale", p + "beta",
                                   p + "mean", p + "var"], [p + "n"], name=p + "bn"),
                  helper.make_node("Relu", [p + "n"], [p + "r"], name=p + "relu")]
        x = p + "r"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("b_r", T.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)


def _fused_inputs(model: onnx.ModelProto) -> list[str]:
    return [i for n in model.graph.node if n.op_type == "FusedConvBnRelu" for i in n.input[1:]]


def test_graph_names_reach_every_part_and_subgraphs() -> None:
    inner = helper.make_graph([helper.make_node("Relu", ["x"], ["deep"], name="deep_node")],
                              "body", [], [helper.make_tensor_value_info("deep", T.FLOAT, [2])],
                              value_info=[helper.make_tensor_value_info("deep_vi", T.FLOAT, [2])])
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.ones(1, np.float32), "sp_values"),
        numpy_helper.from_array(np.zeros(1, np.int64), "sp_indices"), [4])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=inner, else_branch=inner)],
        "g", [helper.make_tensor_value_info("c", T.BOOL, [])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2])],
        [numpy_helper.from_array(np.ones(2, np.float32), "w")],
        value_info=[helper.make_tensor_value_info("vi", T.FLOAT, [2])])
    g.sparse_initializer.append(sparse)
    assert graph_names(g) == {"c", "y", "w", "vi", "if", "sp_values", "sp_indices", "x",
                              "deep", "deep_node", "deep_vi"}
    fresh = FreshNames(helper.make_model(g))
    assert [fresh("deep_vi"), fresh("sp_values"), fresh("new")] == [
        "deep_vi_1", "sp_values_1", "new"]


def test_folded_bias_is_fresh_against_a_declared_graph_input() -> None:
    """A graph input named like the folded bias stayed an input, and the new initializer
    of its name became its default: the fused conv's bias was overridable by the caller."""
    m = two_block_model()
    m.graph.input.append(helper.make_tensor_value_info("a_conv_b_folded", T.FLOAT, [8]))
    out = fuse_conv_bn_relu(m, force=True).model
    declared = {v.name for v in out.graph.input}
    assert not declared & set(_fused_inputs(out)), _fused_inputs(out)
    check_model(out)


def test_folded_weight_is_fresh_against_value_info_and_subgraph_names() -> None:
    m = two_block_model()
    m.graph.value_info.append(helper.make_tensor_value_info("a_conv_w_folded", T.INT64, [1]))
    body = helper.make_graph([helper.make_node("Identity", ["x"], ["b_conv_w_folded"])], "b",
                             [], [helper.make_tensor_value_info("b_conv_w_folded", T.FLOAT, None)])
    m.graph.node.append(helper.make_node("If", ["flag"], ["z"], then_branch=body,
                                         else_branch=body))
    m.graph.input.append(helper.make_tensor_value_info("flag", T.BOOL, []))
    m.graph.output.append(helper.make_tensor_value_info("z", T.FLOAT, None))
    before = graph_names(m.graph)
    out = fuse_conv_bn_relu(m, force=True).model
    assert not before & set(_fused_inputs(out)), _fused_inputs(out)


def _layer_norm_model(clash: str) -> onnx.ModelProto:
    """LayerNormalization whose Mean output is left off, and an initializer named like the
    name the replacement gives that output."""
    g = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "scale"], ["y"], name="ln", axis=-1),
         helper.make_node("Add", ["y", clash], ["z"], name="add")],
        "g", [helper.make_tensor_value_info("x", T.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("z", T.FLOAT, [2, 4])],
        [numpy_helper.from_array(np.ones(4, np.float32), "scale"),
         numpy_helper.from_array(np.full((2, 4), 3.0, np.float32), clash)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_layer_norm_unused_outputs_are_fresh_against_an_initializer() -> None:
    m = _layer_norm_model("y_Mean_unused")
    result = replace_ops(m, ["LayerNormalization"])
    assert [r.action for r in result.records] == ["replaced"]
    node = result.model.graph.node[0]
    assert "y_Mean_unused" not in node.output[1:]
    check_model(result.model)  # was: shape inference refused opsdk's own node
    x = RNG.normal(size=(2, 4)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = Session(result.model, reference=True).run(None, {"x": x})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_add_node_and_insert_after_names_are_fresh_against_outputs_and_value_info() -> None:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", T.FLOAT, [2])],
                          [helper.make_tensor_value_info("r", T.FLOAT, [2])],
                          value_info=[helper.make_tensor_value_info("r_pre", T.INT64, [7])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)
    before = graph_names(m.graph)
    node = insert_after(m, "r", "ThresholdedRelu", {"alpha": 0.5})
    assert m.graph.node[0].output[0] not in before
    node2 = add_node(m, "ThresholdedRelu", ["x"], attrs={"alpha": 0.1})
    assert node2.output[0] not in before | {node.name}
    assert node2.name not in before | {node.name}


@pytest.mark.parametrize("taken", ["opsdk_shape_scalar", "s__rank0"])
def test_ascend_scalar_reshape_names_are_fresh(taken: str) -> None:
    from opsdk.triton._ascend_model import AscendModel, _scalars_as_vectors

    g = helper.make_graph(
        [helper.make_node("Add", ["s", taken], ["t"], name="add"),
         helper.make_node("Identity", ["t"], ["out"], name="id")],
        "g", [helper.make_tensor_value_info("s", T.FLOAT, [])],
        [helper.make_tensor_value_info("out", T.FLOAT, [])],
        [numpy_helper.from_array(np.array(2.0, np.float32), taken)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)
    out = AscendModel(m)
    _scalars_as_vectors(out)
    onnx.checker.check_model(out.proto, full_check=True)
    sess = ort.InferenceSession(out.proto.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"s": np.array([1.5], np.float32)})
    np.testing.assert_allclose(got, [3.5])


@pytest.mark.parametrize("taken", ["c__opsdk_f32", "opsdk_precision/min", "x__opsdk_float16"])
def test_precision_lowering_names_are_fresh(taken: str) -> None:
    """The float16 emulation's Cast pairs and saturation constants were named without
    looking: a value of the model with one of those names was defined twice."""
    from opsdk.ascend.model_precision import assign_dtypes, float_tensors, lower_model
    from opsdk.ascend.precision import PrecisionMode

    w = numpy_helper.from_array(RNG.normal(size=(4, 3, 3, 3)).astype(np.float32), "w")
    bias = numpy_helper.from_array(np.full((1, 4, 4, 4), 0.5, np.float32), taken)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Add", ["c", taken], ["y"], name="add")],
        "g", [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, [1, 4, 4, 4])], [w, bias])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    floats = float_tensors(m)
    assigned = assign_dtypes(m.graph.node, floats, PrecisionMode("force_fp16"), "ascend910b")
    lowered = lower_model(m, assigned, floats, saturate=True)
    onnx.checker.check_model(lowered, full_check=True)
    x = RNG.normal(size=(1, 3, 4, 4)).astype(np.float32)
    runs = [ort.InferenceSession(p.SerializeToString(), providers=["CPUExecutionProvider"])
            .run(None, {"x": x})[0] for p in (m, lowered)]
    np.testing.assert_allclose(runs[1], runs[0], rtol=0.02, atol=0.02)


def test_precision_bn_folding_names_are_fresh() -> None:
    from opsdk.ascend.model_precision._fusions import fold_conv_batch_norm

    m = two_block_model()
    m.graph.input.append(helper.make_tensor_value_info("opsdk_precision/a_conv/bn_folded_w",
                                                       T.FLOAT, [8, 3, 3, 3]))
    before = graph_names(m.graph)
    out, folded = fold_conv_batch_norm(m)
    assert folded == ["a_bn", "b_bn"]
    assert not before & {n.input[1] for n in out.graph.node if n.op_type == "Conv"}


def test_crash_isolation_names_left_off_outputs_freshly() -> None:
    """The copy that names a function call's left-off outputs (offered as the fixed model)
    used ``<y>__opsdk_<output>`` even where the model already had that value."""
    from opsdk.onnx._crash import _name_left_off, _Scope, _used

    fn = helper.make_function("com.x", "Two", ["a"], ["p", "q"],
                              [helper.make_node("Relu", ["a"], ["p"]),
                               helper.make_node("Neg", ["a"], ["q"])],
                              [helper.make_opsetid("", 15)])
    g = helper.make_graph(
        [helper.make_node("Two", ["x"], ["y"], domain="com.x"),
         helper.make_node("Add", ["y", "y__opsdk_q"], ["z"])],
        "g", [helper.make_tensor_value_info("x", T.FLOAT, [2])],
        [helper.make_tensor_value_info("z", T.FLOAT, [2])],
        [numpy_helper.from_array(np.ones(2, np.float32), "y__opsdk_q")])
    m = helper.make_model(g, functions=[fn], opset_imports=[
        helper.make_opsetid("", 15), helper.make_opsetid("com.x", 1)], ir_version=8)
    changed = _name_left_off(m.graph.node[0], m, _Scope(_used(m), FreshNames(m)))
    assert changed is not None
    new, _ = changed
    assert new.output[1] not in graph_names(m.graph)
    fixed = onnx.ModelProto()
    fixed.CopyFrom(m)
    fixed.graph.node[0].CopyFrom(new)
    (got,) = ort.InferenceSession(fixed.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(
        None, {"x": np.array([-1.0, 2.0], np.float32)})
    np.testing.assert_allclose(got, [1.0, 3.0])


def test_precision_switchboard_input_is_fresh(tmp_path) -> None:
    """The per-node attribution adds a bool graph input for its switches; it was always named
    ``opsdk_lower``, so a model with an input of that name had it twice."""
    from opsdk.ascend.model_precision import analyze_model

    g = helper.make_graph(
        [helper.make_node("Add", ["x", "opsdk_lower"], ["s"], name="add"),
         helper.make_node("Exp", ["s"], ["y"], name="exp")],
        "g", [helper.make_tensor_value_info("x", T.FLOAT, [2, 8]),
              helper.make_tensor_value_info("opsdk_lower", T.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", T.FLOAT, [2, 8])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "m.onnx")
    report = analyze_model(tmp_path / "m.onnx", "force_fp16")
    assert [d.run for d in report.nodes] == ["low", "low"]
    assert report.attribution  # the switched runs happened
