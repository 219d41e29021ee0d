"""Graph rewrites: BN folding math, graph surgery, before (ONNX Runtime) vs after (Session)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from opsdk.errors import SpecError
from opsdk.onnx import (
    Session,
    check_model,
    fold_batch_norm,
    fuse_conv_bn_relu,
    replace_ops,
    rewrite,
)

RNG = np.random.default_rng(11)


def ort_run(m, feeds):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


# ------------------------------------------------------------------- the math
def batch_norm(y, scale, bias, mean, var, eps):
    shape = (1, -1, 1, 1)
    return (y - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(
        shape
    ) + bias.reshape(shape)


def conv_1x1(x, w, b):
    return np.einsum("nchw,mc->nmhw", x, w[:, :, 0, 0]) + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("with_bias", [True, False])
def test_folding_equals_batch_norm_after_conv(with_bias):
    c, m = 3, 5
    x = RNG.normal(size=(2, c, 4, 4))
    w = RNG.normal(size=(m, c, 1, 1))
    b = RNG.normal(size=m) if with_bias else None
    scale, bias, mean = RNG.normal(size=m), RNG.normal(size=m), RNG.normal(size=m)
    var = RNG.uniform(0.1, 2.0, size=m)
    w2, b2 = fold_batch_norm(w, b, scale, bias, mean, var, 1e-3)
    expected = batch_norm(conv_1x1(x, w, b if b is not None else np.zeros(m)), scale, bias, mean, var, 1e-3)
    np.testing.assert_allclose(conv_1x1(x, w2, b2), expected, rtol=1e-12, atol=1e-12)


def test_folding_keeps_the_weight_dtype():
    w = np.ones((2, 1, 3, 3), np.float16)
    w2, b2 = fold_batch_norm(w, None, np.ones(2), np.zeros(2), np.zeros(2), np.ones(2), 0.0)
    assert w2.dtype == b2.dtype == np.float16


# ------------------------------------------------------------------ the models
def conv_bn_relu(prefix, x, cin, cout, *, bias=True, conv_attrs=None, eps=1e-3, dtype=np.float32):
    w = RNG.normal(size=(cout, cin, 3, 3)).astype(dtype) * 0.3
    params = [
        numpy_helper.from_array(w, prefix + "w"),
        numpy_helper.from_array((RNG.random(cout) + 0.5).astype(dtype), prefix + "scale"),
        numpy_helper.from_array(RNG.normal(size=cout).astype(dtype), prefix + "beta"),
        numpy_helper.from_array(RNG.normal(size=cout).astype(dtype), prefix + "mean"),
        numpy_helper.from_array((RNG.random(cout) + 0.1).astype(dtype), prefix + "var"),
    ]
    conv_in = [x, prefix + "w"]
    if bias:
        params.append(numpy_helper.from_array(RNG.normal(size=cout).astype(dtype), prefix + "b"))
        conv_in.append(prefix + "b")
    attrs = {"pads": [1, 1, 1, 1]} if conv_attrs is None else conv_attrs
    nodes = [
        helper.make_node("Conv", conv_in, [prefix + "c"], name=prefix + "conv", **attrs),
        helper.make_node(
            "BatchNormalization",
            [prefix + "c", prefix + "scale", prefix + "beta", prefix + "mean", prefix + "var"],
            [prefix + "n"],
            name=prefix + "bn",
            epsilon=eps,
        ),
        helper.make_node("Relu", [prefix + "n"], [prefix + "r"], name=prefix + "relu"),
    ]
    return nodes, params


def two_block_model(**kwargs):
    n1, p1 = conv_bn_relu("a_", "x", 3, 8, **kwargs)
    n2, p2 = conv_bn_relu("b_", "a_r", 8, 4, bias=False, conv_attrs={"strides": [2, 2]})
    graph = helper.make_graph(
        n1 + n2 + [helper.make_node("GlobalAveragePool", ["b_r"], ["y"], name="pool")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=p1 + p2,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)], ir_version=8)


def test_fusion_rewrites_the_graph():
    m = two_block_model()
    result = fuse_conv_bn_relu(m, force=True)
    out = result.model
    assert result.changed == 2
    assert [r.action for r in result.records] == ["fused", "fused"]
    assert [(n.domain, n.op_type, n.name) for n in out.graph.node] == [
        ("com.opsdk", "FusedConvBnRelu", "a_conv"),
        ("com.opsdk", "FusedConvBnRelu", "b_conv"),
        ("", "GlobalAveragePool", "pool"),
    ]
    assert list(out.graph.node[0].input) == ["x", "a_conv_w_folded", "a_conv_b_folded"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in out.graph.node[1].attribute}
    assert attrs == {"strides": [2, 2], "pads": [0, 0, 0, 0], "dilations": [1, 1], "group": 1}
    assert sorted(t.name for t in out.graph.initializer) == [
        "a_conv_b_folded", "a_conv_w_folded", "b_conv_b_folded", "b_conv_w_folded"
    ]
    assert ("com.opsdk", 1) in [(o.domain, o.version) for o in out.opset_import]
    assert len(m.graph.node) == 7  # the input model is untouched
    check_model(out)


def test_fused_model_matches_onnxruntime_on_the_same_inputs_reference_kernel():
    m = two_block_model()
    fused = fuse_conv_bn_relu(m, force=True).model
    x = RNG.normal(size=(2, 3, 16, 16)).astype(np.float32)
    (before,) = ort_run(m, {"x": x})
    (after,) = Session(fused, reference=True).run(None, {"x": x})
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-5)


def test_fused_model_matches_onnxruntime_on_the_same_inputs_kernel():
    m = two_block_model()
    fused = fuse_conv_bn_relu(m, force=True).model
    x = RNG.normal(size=(2, 3, 16, 16)).astype(np.float32)
    (before,) = ort_run(m, {"x": x})
    sess = Session(fused)
    assert [s.kind for s in sess.steps] == ["opsdk", "opsdk", "onnxruntime"]
    (after,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-4)


def skipped_reason(m):
    """The first block must stay as it is (with the reason); the second is still fused."""
    result = fuse_conv_bn_relu(m, force=True)
    assert result.changed == 1
    assert [n.name for n in result.model.graph.node][:3] == ["a_conv", "a_bn", "a_relu"]
    (record,) = [r for r in result.records if "a_relu" in r.node]
    assert record.action == "skipped"
    return record.detail


def test_no_fusion_when_an_intermediate_has_another_reader():
    m = two_block_model()
    m.graph.node.append(helper.make_node("Identity", ["a_c"], ["peek"]))
    m.graph.output.append(helper.make_tensor_value_info("peek", TensorProto.FLOAT, None))
    assert "'a_c' has 2 readers" in skipped_reason(m)


def test_no_fusion_when_an_intermediate_is_a_graph_output():
    m = two_block_model()
    m.graph.output.append(helper.make_tensor_value_info("a_n", TensorProto.FLOAT, None))
    assert "'a_n' is a graph output" in skipped_reason(m)


def test_no_fusion_with_auto_pad_same():
    m = two_block_model(conv_attrs={"auto_pad": "SAME_UPPER"})
    assert "auto_pad=SAME_UPPER" in skipped_reason(m)


def test_no_fusion_when_statistics_are_computed():
    m = two_block_model()
    (var,) = [t for t in m.graph.initializer if t.name == "a_var"]
    m.graph.initializer.remove(var)
    m.graph.input.append(helper.make_tensor_value_info("a_var", TensorProto.FLOAT, [8]))
    assert "input_var 'a_var' is computed at run time" in skipped_reason(m)


def test_no_fusion_in_training_mode():
    m = two_block_model()
    bn = m.graph.node[1]
    bn.attribute.append(helper.make_attribute("training_mode", 1))
    assert "training mode" in skipped_reason(m)


def test_valid_auto_pad_is_fused_with_zero_pads():
    m = two_block_model(conv_attrs={"auto_pad": "VALID"})
    result = fuse_conv_bn_relu(m, force=True)
    assert result.changed == 2
    x = RNG.normal(size=(1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_allclose(
        Session(result.model, reference=True).run(None, {"x": x})[0],
        ort_run(m, {"x": x})[0],
        rtol=1e-4,
        atol=1e-5,
    )


# ----------------------------------------------------------------- replacement
def grid_sample_model(dtype=TensorProto.FLOAT, **attrs):
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("GridSample", ["r", "grid"], ["s"], name="gs", **attrs),
            helper.make_node("Sigmoid", ["s"], ["y"]),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", dtype, [1, 3, 6, 7]),
            helper.make_tensor_value_info("grid", dtype, [1, 4, 5, 2]),
        ],
        [helper.make_tensor_value_info("y", dtype, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)


@pytest.mark.parametrize("reference", [True, False], ids=["reference", "kernel"])
@pytest.mark.parametrize(
    "attrs",
    [{}, {"mode": "nearest", "padding_mode": "border"}, {"mode": "bicubic", "align_corners": 1}],
)
def test_replaced_grid_sample_matches_onnxruntime(attrs, reference):
    m = grid_sample_model(**attrs)
    result = replace_ops(m, ["GridSample"])
    assert [(r.node, r.action) for r in result.records] == [("'gs' (GridSample)", "replaced")]
    node = result.model.graph.node[1]
    assert (node.domain, node.op_type, node.name) == ("com.opsdk", "GridSample", "gs")
    written = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert written["mode"] == attrs.get("mode", "bilinear").encode()  # ONNX-16 default kept
    check_model(result.model)
    x = RNG.normal(size=(1, 3, 6, 7)).astype(np.float32)
    grid = RNG.uniform(-1.1, 1.1, size=(1, 4, 5, 2)).astype(np.float32)
    (before,) = ort_run(m, {"x": x, "grid": grid})
    sess = Session(result.model, reference=reference)
    assert [s.kind for s in sess.steps] == ["onnxruntime", "opsdk", "onnxruntime"]
    (after,) = sess.run(None, {"x": x, "grid": grid})
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)


def test_replacement_skips_unsupported_dtypes_with_the_reason():
    result = replace_ops(grid_sample_model(TensorProto.DOUBLE), ["GridSample"])
    (record,) = result.records
    assert record.action == "skipped"
    assert "input 'x' is float64; GridSample takes float16, float32" in record.detail


def test_replacing_an_op_without_operator_points_to_opsdk_new():
    with pytest.raises(SpecError, match=r"no opsdk operator implements ONNX Det.*--like onnx:Det"):
        replace_ops(grid_sample_model(), ["Det"])


def test_rewrite_runs_fusions_then_replacements():
    m = two_block_model()
    result = rewrite(m, fuse=["conv-bn-relu"], replace=["GridSample"], force=True)
    assert result.changed == 2
    with pytest.raises(SpecError, match=r"unknown fusion 'conv-bn'; known: conv-bn-relu"):
        rewrite(m, fuse=["conv-bn"])


def as_constant_nodes(m, *, via=None):
    """The model with every initializer moved into a Constant node, as paddle2onnx writes
    weights; ``via`` puts an Identity or Cast node between the Constant and its readers."""
    out = onnx.ModelProto()
    out.CopyFrom(m)
    g = out.graph
    nodes = []
    for t in g.initializer:
        if via is None:
            nodes.append(helper.make_node("Constant", [], [t.name], value=t))
            continue
        raw = numpy_helper.to_array(t)
        src = raw.astype(np.float64) if via == "Cast" else raw
        nodes.append(helper.make_node("Constant", [], [t.name + "_raw"], value=numpy_helper.from_array(src)))
        attrs = {"to": TensorProto.FLOAT} if via == "Cast" else {}
        nodes.append(helper.make_node(via, [t.name + "_raw"], [t.name], **attrs))
    rest = list(g.node)
    del g.node[:], g.initializer[:]
    g.node.extend(nodes + rest)
    return out


@pytest.mark.parametrize("via", [None, "Identity", "Cast"])
def test_weights_in_constant_nodes_are_fused_and_folded(via):
    m = as_constant_nodes(two_block_model(), via=via)
    result = fuse_conv_bn_relu(m, force=True)
    out = result.model
    assert [r.action for r in result.records] == ["fused", "fused"]
    # every Constant (and Identity/Cast of one) the chains consumed is gone
    assert [n.op_type for n in out.graph.node] == ["FusedConvBnRelu", "FusedConvBnRelu", "GlobalAveragePool"]
    check_model(out)
    x = RNG.normal(size=(2, 3, 16, 16)).astype(np.float32)
    (before,) = ort_run(m, {"x": x})
    (after,) = Session(out).run(None, {"x": x})
    np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-4)


def test_a_constant_read_elsewhere_stays():
    m = as_constant_nodes(two_block_model())
    m.graph.node.append(helper.make_node("Identity", ["a_mean"], ["mean_out"]))
    m.graph.output.append(helper.make_tensor_value_info("mean_out", TensorProto.FLOAT, [8]))
    out = fuse_conv_bn_relu(m, force=True).model
    assert [n.output[0] for n in out.graph.node if n.op_type == "Constant"] == ["a_mean"]


def test_softmax_before_opset_13_is_not_replaced():
    """Softmax-11 normalises over every axis from `axis` on; the operator over one axis."""
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])])
    old = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)
    result = replace_ops(old, ["Softmax"])
    assert [r.action for r in result.records] == ["skipped"]
    assert "opset >= 13" in result.records[0].detail
    new = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    assert [r.action for r in replace_ops(new, ["Softmax"]).records] == ["replaced"]
