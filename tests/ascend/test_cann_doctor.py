"""``opsdk doctor``: findings for what ATC's ONNX parser rejects or mis-handles."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from opsdk.ascend.atc.doctor import TARGETS, diagnose, format_findings
from opsdk.cli import main
from opsdk.errors import SpecError
from opsdk.onnx import ModelError, export_model
from tests._helpers.doctor_models import build, x_input


def codes(findings):
    return [f.code for f in findings]


def test_clean_model_has_no_findings():
    m = build([helper.make_node("Relu", ["x"], ["y"])], [x_input()])
    assert diagnose(m) == []
    assert format_findings([], "ascend") == "no problems found for target ascend"


def grid_sample(opset=16):
    grid = helper.make_tensor_value_info("grid", TensorProto.FLOAT, [1, 4, 4, 2])
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="warp")
    return build([node], [x_input(), grid], opset=opset)


def test_grid_sample_points_to_the_shipped_operator_and_the_opset():
    findings = diagnose(grid_sample(), target="ascend")
    assert codes(findings) == ["opset-range", "unsupported-op"]
    opset, unsupported = findings
    assert opset.node is None and "opset 16" in opset.reason and "9-15" in opset.reason
    # GridSample has no earlier version: the converter cannot help, re-exporting comes first
    assert opset.fix.startswith("re-export at opset 15")
    assert "No Previous Version of GridSample exists" in opset.fix
    assert unsupported.node == "'warp' (GridSample)" and unsupported.severity == "error"
    assert "no GridSample converter" in unsupported.reason
    assert "com.opsdk::GridSample" in unsupported.fix
    assert "opsdk rewrite model.onnx -o fixed.onnx --replace GridSample" in unsupported.fix


def test_cann8_target_converts_grid_sample_at_opset_16():
    assert diagnose(grid_sample(), target="ascend-cann8") == []


def test_op_without_shipped_operator_points_to_opsdk_new_like():
    m = build([helper.make_node("Det", ["x"], ["y"], name="det")], [x_input((2, 3, 3))])
    (f,) = diagnose(m)
    assert (f.code, f.op) == ("unsupported-op", "Det")
    assert "opsdk new Det --like onnx:Det" in f.fix


def test_ops_newer_than_the_parser_are_unsupported():
    shape = helper.make_tensor("shape", TensorProto.INT64, [4], [1, 3, 4, 4])
    node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], name="crop")
    findings = diagnose(build([node], [x_input()], opset=18, inits=[shape]), target="ascend")
    assert codes(findings) == ["opset-range", "unsupported-op"]
    assert "since ai.onnx opset 18, after the 15 ATC reads" in findings[1].reason
    assert "opsdk new CenterCropPad --like onnx:CenterCropPad" in findings[1].fix


def test_fix_names_an_operator_implementing_the_onnx_op():
    from opsdk.spec import Input, OpSpec, Output

    det = OpSpec("MyDet", domain="com.acme", inputs=[Input("x", "float32")],
                 outputs=[Output("y", "float32")], onnx_op="Det")
    m = build([helper.make_node("Det", ["x"], ["y"], name="det")], [x_input((2, 3, 3))])
    (f,) = diagnose(m, extra=[det])
    assert "shipped operator com.acme::MyDet" in f.fix and "--replace Det" in f.fix


def test_custom_domain_without_opset_import():
    node = helper.make_node("ThresholdedRelu", ["x"], ["y"], domain="com.opsdk", alpha=0.5)
    findings = diagnose(build([node], [x_input()]))
    assert "missing-opset-import" in codes(findings)
    (f,) = [f for f in findings if f.code == "missing-opset-import"]
    assert "make_opsetid('com.opsdk', 1)" in f.fix


def resize(opset=13, **attrs):
    roi = helper.make_tensor("roi", TensorProto.FLOAT, [0], [])
    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])
    ins, inits = (["x", "roi", "scales"], [roi, scales]) if opset >= 11 else (["x", "scales"],
                                                                              [scales])
    node = helper.make_node("Resize", ins, ["y"], name="up", **attrs)  # Resize-10: no roi
    return build([node], [x_input()], opset=opset, inits=inits)


def test_resize_without_coordinate_mode_is_reported_as_mishandled():
    (f,) = diagnose(resize(mode="linear"))
    assert (f.code, f.severity, f.node) == ("resize-coordinate-mode", "warning", "'up' (Resize)")
    assert "not set (ONNX default 'half_pixel')" in f.reason and "asymmetric" in f.reason
    assert "pytorch_half_pixel" in f.fix


def test_resize_with_a_mode_atc_computes_is_clean():
    assert diagnose(resize(mode="linear", coordinate_transformation_mode="pytorch_half_pixel")) == []
    assert diagnose(resize(opset=10)) == []  # Resize-10 is asymmetric by definition


def test_resize_cubic_is_rejected():
    findings = diagnose(resize(mode="cubic", coordinate_transformation_mode="align_corners"))
    assert codes(findings) == ["resize-mode"]


def test_dynamic_dims_without_bounds():
    m = build([helper.make_node("Relu", ["x"], ["y"])], [x_input(("N", 3, 224, 224))])
    (f,) = diagnose(m)
    assert (f.code, f.node) == ("dynamic-shape", "graph input 'x'")
    assert '--input_shape="x:1,3,224,224"' in f.fix
    assert diagnose(m, input_shapes={"x": (1, 3, 224, 224)}) == []


def test_custom_node_without_operator_and_invalid_custom_node():
    unknown = helper.make_node("Warp", ["x"], ["y"], domain="com.acme", name="w")
    (f,) = diagnose(build([unknown], [x_input()], extra_imports=[("com.acme", 1)]))
    assert (f.code, f.op) == ("unknown-custom-op", "com.acme::Warp")
    assert "opsdk new Warp (domain com.acme)" in f.fix
    bad = helper.make_node("ThresholdedRelu", ["x"], ["y"], domain="com.opsdk", name="t", beta=1.0)
    f, clash = diagnose(build([bad], [x_input()], extra_imports=[("com.opsdk", 1)]))
    assert clash.code == "builtin-clash" and clash.severity == "warning"
    assert f.code == "invalid-custom-node" and "unknown attribute 'beta'" in f.reason


def test_exported_custom_model_is_clean_with_shapes():
    m = export_model("ThresholdedRelu", shapes={"x": (1, 16)})
    (clash,) = diagnose(m)  # only the warning that CANN ships a ThresholdedRelu of its own
    assert (clash.code, clash.severity, clash.op) == (
        "builtin-clash", "warning", "com.opsdk::ThresholdedRelu")
    assert "inputs match (x); outputs match (y); attributes match (alpha:Float)" in clash.reason
    assert clash.fix.startswith("opsdk cann --op-type ThresholdedReluCustom")


def test_nodes_inside_subgraphs_are_checked():
    then = helper.make_graph(
        [helper.make_node("Det", ["x"], ["t"], name="inner")],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"])],
        "else",
        [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)],
    )
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    findings = diagnose(build([node], [x_input((3, 3)), cond]))
    assert [(f.code, f.node) for f in findings] == [("unsupported-op", "'inner' (Det)")]


def test_unknown_target_and_unreadable_model(tmp_path):
    with pytest.raises(SpecError, match=r"unknown target 'gpu'; known: ascend, ascend-cann8"):
        diagnose(grid_sample(), target="gpu")
    bad = tmp_path / "bad.onnx"
    bad.write_text("this is not onnx")
    with pytest.raises(ModelError):
        diagnose(bad)


def test_findings_have_a_one_line_message():
    (f, _) = diagnose(grid_sample(), target="ascend")
    assert f.message.startswith("model: the model imports ai.onnx opset 16") and " -- fix: " in f.message
    assert str(f) == f.message


def test_targets_are_data():
    assert TARGETS["ascend"].opset_max == 15 and "GridSample" in TARGETS["ascend"].unsupported
    assert "GridSample" not in TARGETS["ascend-cann8"].unsupported


# ---------------------------------------------------------------------- CLI
def test_cli_exit_codes_and_json(tmp_path, capsys):
    clean = tmp_path / "clean.onnx"
    onnx.save(build([helper.make_node("Relu", ["x"], ["y"])], [x_input()]), str(clean))
    assert main(["doctor", str(clean)]) == 0
    assert "no problems found" in capsys.readouterr().out
    gs = tmp_path / "gs.onnx"
    onnx.save(grid_sample(), str(gs))
    assert main(["doctor", str(gs), "--json", "--target", "ascend"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in report["findings"]] == ["opset-range", "unsupported-op"]
    assert set(report["findings"][1]) == {"code", "severity", "node", "op", "reason", "fix"}
    assert main(["doctor", str(gs), "--target", "ascend-cann8"]) == 0
    capsys.readouterr()


def test_cli_input_shape_and_text_report(tmp_path, capsys):
    path = tmp_path / "dyn.onnx"
    onnx.save(build([helper.make_node("Relu", ["x"], ["y"])], [x_input(("N", 3))]), str(path))
    assert main(["doctor", str(path)]) == 1
    out = capsys.readouterr().out
    assert "[warning] dynamic-shape at graph input 'x'" in out and "fix:" in out
    assert main(["doctor", str(path), "--input-shape", "x=4,3"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("content", [b"", b"\x0a\x05garbage-truncated", b"plain text, not onnx\n"])
def test_cli_unreadable_model_exits_2(tmp_path, capsys, content):
    path = tmp_path / "broken.onnx"
    path.write_bytes(content)
    assert main(["doctor", str(path)]) == 2
    err = capsys.readouterr().err
    assert "opsdk doctor: error: " in err and "broken.onnx" in err and "Traceback" not in err
    assert main(["doctor", str(tmp_path / "missing.onnx")]) == 2
    assert "no such file" in capsys.readouterr().err


def _relu_chain():
    return [helper.make_node("Relu", ["x"], ["a"], name="r1"),
            helper.make_node("Relu", ["a"], ["y"], name="r2")]


@pytest.mark.parametrize(
    "damage, reason",
    [
        ("cycle", "input 'y' is used before the node that defines it"),
        ("duplicate", "output 'a' is defined twice"),
        ("undefined", "input 'ghost' is never defined"),
        ("no_opset", "the model imports no opset"),
        ("no_output", "the graph has no output"),
        ("input_twice", "a graph input 'x' is listed twice"),
        ("unnamed_output", "a graph output has an empty name"),
        ("future_ir", "the model has IR version 99, newer than any onnx"),
    ],
)
def test_models_onnx_checker_rejects_are_findings(damage, reason, capsys):
    nodes = _relu_chain()
    if damage == "cycle":
        nodes[0] = helper.make_node("Add", ["x", "y"], ["a"], name="r1")
    elif damage == "duplicate":
        nodes[1] = helper.make_node("Relu", ["x"], ["a"], name="r2")
        nodes.append(helper.make_node("Relu", ["a"], ["y"], name="r3"))
    elif damage == "undefined":
        nodes[1] = helper.make_node("Add", ["a", "ghost"], ["y"], name="r2")
    m = build(nodes, [x_input()])
    if damage == "no_opset":
        del m.opset_import[:]
    elif damage == "no_output":
        del m.graph.output[:]
    elif damage == "input_twice":
        m.graph.input.append(m.graph.input[0])
    elif damage == "unnamed_output":
        m.graph.output.append(helper.make_tensor_value_info("", onnx.TensorProto.FLOAT, [1]))
    elif damage == "future_ir":
        m.ir_version = 99
    if damage != "no_output":  # ONNX's checker allows it; nothing is left for ATC to build
        with pytest.raises(onnx.checker.ValidationError):
            onnx.checker.check_model(m)  # the same model, rejected by ONNX itself
    findings = diagnose(m)
    assert "invalid-model" in codes(findings)
    assert any(reason in f.reason for f in findings), findings


def test_input_shape_must_name_an_input_and_be_concrete(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(build([helper.make_node("Relu", ["x"], ["y"])], [x_input(("N", 3))]), str(path))
    assert main(["doctor", str(path), "--input-shape", "x=a,b"]) == 1
    assert "--input-shape x=a,b: ATC needs integer dims (e.g. --input-shape x=1,1)" in (
        capsys.readouterr().err)
    assert main(["doctor", str(path), "--input-shape", "z=1,3"]) == 1
    assert "the model has no input 'z'; its inputs are x" in capsys.readouterr().err
    assert main(["doctor", str(path), "--input-shape", "x=1,3"]) == 0


@pytest.mark.parametrize(
    "dims,form",
    [((-1, 3, 8, 8), "dim 0 is dim_value -1"), ((0, 3, 8, 8), "dim 0 is dim_value 0"),
     (("N", 3, 8, 8), "dim 0 is dim_param 'N'")],
)
def test_dynamic_dims_as_exporters_write_them(dims, form):
    """paddle2onnx writes -1 (some converters 0) as a dim_value for a dynamic dim."""
    m = build([helper.make_node("Relu", ["x"], ["y"])], [x_input(dims)])
    (f,) = diagnose(m)
    assert f.code == "dynamic-shape" and f"({form})" in f.reason
    assert "[?,3,8,8]" in f.reason or "[N,3,8,8]" in f.reason
    assert '--input_shape="x:1,3,8,8"' in f.fix


def test_unknown_rank_input_is_dynamic():
    m = build([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)])
    (f,) = diagnose(m)
    assert "unknown rank" in f.reason and "no shape" in f.reason


def test_mixed_default_domain_blocks_through_cann_9_1_and_warns_after(tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["t"], name="relu"),
        helper.make_node("ThresholdedRelu", ["t"], ["y"], domain="com.opsdk", alpha=0.5),
    ]
    m = build(nodes, [x_input()], extra_imports=[("com.opsdk", 1)])
    for cann in (None, "8.1.RC1", "9.1"):
        [f] = [f for f in diagnose(m, cann=cann) if f.code == "mixed-default-domain"]
        assert f.severity == "error" and f.node == "'relu' (Relu)"
        assert "E16005" in f.reason and "imports 2 (ai.onnx, com.opsdk)" in f.reason
        assert "opsdk.ascend.normalize_default_domain(model)" in f.fix
    [f] = [f for f in diagnose(m, cann="9.2") if f.code == "mixed-default-domain"]
    assert f.severity == "warning" and "CANN 9.2 accepts it" in f.reason
    assert f.fix.startswith("for hosts before CANN 9.2, opsdk atc and opsdk triton build "
                            "--target ascend convert such a copy themselves")
    from opsdk.ascend import normalize_default_domain

    assert "mixed-default-domain" not in codes(diagnose(normalize_default_domain(m)))
    path = tmp_path / "mixed.onnx"
    onnx.save(m, str(path))
    assert main(["doctor", str(path), "--cann", "9.2", "--json"]) == 1
    assert main(["doctor", str(path), "--cann", "nine"]) == 1


def test_the_atc_copy_spells_ai_onnx_inside_if_bodies_too(tmp_path):
    """A standard node inside an If body fails the GE parser as one at the top does: opsdk
    atc's copy respells both (it respelled only the top level, and stayed blocked)."""
    from opsdk.ascend import normalize_default_domain, plan_atc

    def branch(name, op):
        return helper.make_graph([helper.make_node(op, ["y"], [f"{name}_out"])], name, [],
                                 [helper.make_tensor_value_info(f"{name}_out",
                                                                TensorProto.FLOAT, [1, 4])])

    nodes = [
        helper.make_node("ThresholdedRelu", ["x"], ["y"], domain="com.opsdk", alpha=0.5),
        helper.make_node("ReduceSum", ["y"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"]),
        helper.make_node("If", ["c"], ["z"], then_branch=branch("then", "Relu"),
                         else_branch=branch("else", "Neg")),
    ]
    m = build(nodes, [x_input((1, 4))], [helper.make_tensor_value_info("z", TensorProto.FLOAT,
                                                                       [1, 4])],
              extra_imports=[("com.opsdk", 1)],
              inits=[onnx.numpy_helper.from_array(np.array(0.0, np.float32), "zero")])
    copy = normalize_default_domain(m)
    inner = [n.domain for n in copy.graph.node[3].attribute[0].g.node]
    assert inner == ["ai.onnx"]
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    plan = plan_atc(path, output=str(tmp_path / "m"), soc_version="Ascend910B1",
                    input_shape="x:1,4", cann="8.1.RC1")
    assert not [b for b in plan.blocking if "E16005" in b], plan.blocking
