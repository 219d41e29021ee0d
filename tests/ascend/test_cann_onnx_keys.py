"""OriginOpType keys computed from models as CANN's ONNX parser builds them, and the checks."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx.helper as oh
import pytest

from opsdk.ascend import (
    check_plugin_keys,
    node_keys,
    normalize_default_domain,
    origin_op_types,
    parse_cann_version,
)


def _model(nodes: list, imports: dict[str, int]) -> onnx.ModelProto:
    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    graph = oh.make_graph(nodes, "g", [x], [y])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid(d, v) for d, v in imports.items()])


def test_custom_domain_key_uses_the_imported_version(tmp_path: Path) -> None:
    m = _model(
        [oh.make_node("ThresholdedRelu", ["x"], ["y"], domain="com.opsdk", alpha=0.5)],
        {"com.opsdk": 3},
    )
    onnx.save(m, tmp_path / "m.onnx")
    assert origin_op_types(tmp_path / "m.onnx") == {
        "ThresholdedRelu": ["com.opsdk::3::ThresholdedRelu"]
    }


def test_default_domain_single_import_is_ai_onnx() -> None:
    m = _model([oh.make_node("MyOp", ["x"], ["y"])], {"": 17})
    [nk] = node_keys(m)
    assert nk.key == "ai.onnx::17::MyOp" and nk.custom
    assert origin_op_types(m) == {"MyOp": ["ai.onnx::17::MyOp"]}


def test_standard_nodes_are_not_custom() -> None:
    m = _model([oh.make_node("Relu", ["x"], ["y"])], {"": 17})
    assert origin_op_types(m) == {} and node_keys(m)[0].key == "ai.onnx::17::Relu"


def test_version_mismatch_is_flagged_with_the_fix() -> None:
    m = _model(
        [oh.make_node("ThresholdedRelu", ["x"], ["y"], domain="com.opsdk")], {"com.opsdk": 2}
    )
    [p] = check_plugin_keys(m, {"ThresholdedRelu": ["com.opsdk::1::ThresholdedRelu"]})
    assert "needs the plugin key 'com.opsdk::2::ThresholdedRelu'" in p.message
    assert "different opset version" in p.message and "--onnx-model" in p.message
    assert check_plugin_keys(m, {"ThresholdedRelu": ["com.opsdk::2::ThresholdedRelu"]}) == []


def test_unimported_domain_and_mixed_default_domain_are_flagged() -> None:
    m = _model([oh.make_node("MyOp", ["x"], ["y"], domain="com.missing")], {"": 17})
    [p] = check_plugin_keys(m, {})
    assert "does not list" in p.message and "com.missing" in p.message
    mixed = _model(
        [
            oh.make_node("Relu", ["x"], ["t"]),
            oh.make_node("ThresholdedRelu", ["t"], ["y"], domain="com.opsdk"),
        ],
        {"": 17, "com.opsdk": 1},
    )
    problems = check_plugin_keys(mixed, {"ThresholdedRelu": ["com.opsdk::1::ThresholdedRelu"]})
    assert len(problems) == 1 and "E16005" in problems[0].message
    fixed = normalize_default_domain(mixed)
    assert check_plugin_keys(fixed, {"ThresholdedRelu": ["com.opsdk::1::ThresholdedRelu"]}) == []
    assert [k.key for k in node_keys(fixed)] == [
        "ai.onnx::17::Relu",
        "com.opsdk::1::ThresholdedRelu",
    ]
    assert mixed.opset_import[0].domain == ""  # the original is untouched
    later = parse_cann_version("9.2")  # parsers after 9.1 resolve it through ai.onnx
    assert check_plugin_keys(mixed, {}, parse_cann_version("9.1")) != []
    assert check_plugin_keys(mixed, {"ThresholdedRelu": ["com.opsdk::1::ThresholdedRelu"]},
                             later) == []
    assert [k.key for k in node_keys(mixed, later)][0] == "ai.onnx::17::Relu"


@pytest.mark.parametrize("version", [1, 4])
def test_keys_follow_opset_import(version: int) -> None:
    m = _model([oh.make_node("MyOp", ["x"], ["y"], domain="com.x")], {"com.x": version, "": 17})
    assert origin_op_types(m) == {"MyOp": [f"com.x::{version}::MyOp"]}
