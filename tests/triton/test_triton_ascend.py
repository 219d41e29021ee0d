"""`opsdk triton build --target ascend`: the model file, config and checks npu_ge needs.

Ground truth is the GE backend's source (see opsdk/triton/_npu_ge.py). The model file is
run by a real ONNX Runtime 1.23.2 (the version the backend links) in its own venv, made by
scripts/setup.d/30-onnxruntime-1.23.2.sh (or by the fixture below); without it those tests
skip with the reason. Goldens: tests/golden/triton/, regenerate with OPSDK_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from opsdk.ascend import check_parser_rules, default_origin_op_type
from opsdk.ascend.versions import parse_cann_version
from opsdk.cli import main
from opsdk.errors import DeviceUnavailable
from opsdk.onnx import Session
from opsdk.registry import find_operator
from opsdk.triton import (
    AscendOptions,
    RepositoryOptions,
    TritonConfigError,
    TritonConfigWarning,
    build_repository,
    check_npu_ge_folder,
    ensure_ort_env,
    read_graph_io,
    render_model,
    run_like_npu_ge,
)
from tests._helpers.ascend_repo import build, two_op_model
from tests._helpers.golden import check_golden
from tests._helpers.triton_models import mlp_model, parse_config

CANN8 = parse_cann_version("8.1.RC1")
CANN10 = parse_cann_version("10.0")






# --------------------------------------------------------------------- the model file
def test_two_custom_ops_build_golden_and_pass_parser_rules(tmp_path: Path) -> None:
    folder = build(tmp_path, two_op_model(), max_batch_size=8)
    config = (folder / "config.pbtxt").read_text()
    check_golden("triton/ascend_two_ops/config.pbtxt", config)
    parsed = parse_config(config)
    assert list(parsed.dynamic_batching.preferred_batch_size) == [2, 4, 8]  # type: ignore[attr-defined]
    model = onnx.load(str(folder / "1" / "model.onnx"))
    check_golden("triton/ascend_two_ops/model.txt", onnx.printer.to_text(model))
    assert sorted(f.name for f in model.functions) == ["Softmax", "ThresholdedRelu"]
    assert "do not edit" in {p.key: p.value for p in model.metadata_props}["opsdk"]
    keys = {op: [default_origin_op_type(find_operator(f"com.opsdk::{op}").spec)]
            for op in ("Softmax", "ThresholdedRelu")}
    assert keys == {"Softmax": ["com.opsdk::1::Softmax"],
                    "ThresholdedRelu": ["com.opsdk::1::ThresholdedRelu"]}
    assert check_parser_rules(model, CANN8, keys) == []
    assert {n.domain for n in model.graph.node} == {"ai.onnx", "com.opsdk"}
    assert [f for f in folder.rglob("*") if f.suffix in (".onnx", ".pb")] == [
        folder / "1" / "model.onnx"]


def test_model_file_runs_in_onnxruntime_1_23_2_like_opsdk(tmp_path: Path, ort_1232: Path) -> None:
    folder = build(tmp_path, two_op_model(), max_batch_size=8)
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    run = run_like_npu_ge(folder / "1" / "model.onnx", {"x": x}, python=ort_1232)
    assert run.version == "1.23.2"
    assert run.outputs == [("y", "tensor(float)", ["N", 8])]  # the backend reads "N"
    (expected,) = Session(str(tmp_path / "src.onnx")).run(None, {"x": x})
    np.testing.assert_allclose(run.results["y"], expected, rtol=1e-6, atol=1e-6)
    # what opsdk wrote before: the bare custom node, which the backend's ORT cannot open
    with pytest.raises(TritonConfigError, match="ThresholdedRelu.*not a registered function/op"):
        run_like_npu_ge(tmp_path / "src.onnx", {"x": x}, python=ort_1232)


def test_domain_forms_onnx_checker_vs_onnxruntime(tmp_path: Path, ort_1232: Path) -> None:
    """Through CANN 9.1 standard nodes must say ai.onnx (E16005). ONNX Runtime 1.23.2 loads
    that form (ai.onnx imported beside ""); onnx's checker has no ai.onnx alias for nodes and
    rejects it, so the form is written only where GE needs it; later CANN keeps ""."""
    old = build(tmp_path / "a", two_op_model(), cann="8.1.RC1")
    new = build(tmp_path / "b", two_op_model(), cann="10.0")
    old_m = onnx.load(str(old / "1" / "model.onnx"))
    new_m = onnx.load(str(new / "1" / "model.onnx"))
    assert {(o.domain, o.version) for o in old_m.opset_import} == {
        ("", 17), ("ai.onnx", 17), ("com.opsdk", 1)}
    with pytest.raises(onnx.checker.ValidationError, match="No Op registered for MatMul"):
        onnx.checker.check_model(old_m)
    onnx.checker.check_model(new_m)
    assert check_parser_rules(new_m, CANN10) == []
    assert [p.op_type for p in check_parser_rules(new_m, CANN8)] == ["MatMul", "Add", "Mul"]
    x = np.ones((2, 16), np.float32)
    a = run_like_npu_ge(old / "1" / "model.onnx", {"x": x}, python=ort_1232).results["y"]
    b = run_like_npu_ge(new / "1" / "model.onnx", {"x": x}, python=ort_1232).results["y"]
    np.testing.assert_array_equal(a, b)


def test_triton_check_command(tmp_path: Path, ort_1232: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    folder = build(tmp_path, two_op_model(), max_batch_size=8)
    assert main(["triton", "check", str(folder), "--cann", "8.1.RC1", "--dim", "N=5"]) == 0
    out = capsys.readouterr().out
    assert "CANN 8.1.RC1 parser rules, ONNX Runtime 1.23.2" in out and out.endswith("ok\n")
    report = check_npu_ge_folder(folder, cann="8.1.RC1")
    assert report.ok and report.max_abs_error["y"] <= 1e-6
    assert check_npu_ge_folder(folder, cann="10.0").ok  # explicit domains suit later parsers
    onnx.save(two_op_model(), str(folder / "1" / "model.onnx"))  # the bare custom nodes
    bad = check_npu_ge_folder(folder, cann="8.1.RC1")
    assert any("E16005" in p for p in bad.problems)
    assert any("not a registered function/op" in p for p in bad.problems)
    assert main(["triton", "check", str(folder), "--cann", "8.1.RC1"]) == 1
    (folder / "1" / "model.onnx").unlink()
    assert "model.onnx is missing" in check_npu_ge_folder(folder).problems[0]
    cpu = build_repository(tmp_path / "src.onnx", tmp_path / "cpu", RepositoryOptions("c"))
    with pytest.raises(TritonConfigError, match="is not an npu_ge model folder"):
        check_npu_ge_folder(cpu)


def test_custom_opset_version_follows_the_plugin_key(tmp_path: Path) -> None:
    notes: list[str] = []
    src = tmp_path / "src.onnx"
    onnx.save(two_op_model(custom_version=3), str(src))
    folder = build_repository(src, tmp_path / "repo", RepositoryOptions(
        "net", target="ascend", ascend=AscendOptions(cann="8.1.RC1")), report=notes.append)
    model = onnx.load(str(folder / "1" / "model.onnx"))
    assert ("com.opsdk", 1) in {(o.domain, o.version) for o in model.opset_import}
    assert any("opset_import com.opsdk 3 -> 1" in n for n in notes)
    assert any("embedded fallback functions" in n for n in notes)


_NO_FALLBACK = """
from opsdk.spec import Input, OpSpec, Output
SPEC = OpSpec("NoFallback", domain="com.test", version=1, inputs=[Input("x", "float32")],
              outputs=[Output("y", "float32")])
"""


def test_op_without_decomposition_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ops" / "no_fallback").mkdir(parents=True)
    (tmp_path / "ops" / "no_fallback" / "spec.py").write_text(_NO_FALLBACK)
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(tmp_path / "ops"))
    g = helper.make_graph(
        [helper.make_node("NoFallback", ["x"], ["y"], domain="com.test")], "g",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["N", 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.test", 1)])
    assert find_operator("com.test::NoFallback").spec.function is None
    with pytest.raises(TritonConfigError, match=r"com.test::NoFallback has no fallback "
                       r"function.*@SPEC.register_function.*--target cpu"):
        build(tmp_path, m)
    assert not (tmp_path / "repo" / "net").exists()


def test_folder_holding_another_model_file_is_refused(tmp_path: Path) -> None:
    build(tmp_path, mlp_model())
    (tmp_path / "repo" / "net" / "2").mkdir()
    (tmp_path / "repo" / "net" / "2" / "old.onnx").write_bytes(b"")
    src = tmp_path / "src.onnx"
    with pytest.raises(TritonConfigError, match=r"holds 2/old.onnx: npu_ge loads the first"):
        build_repository(src, tmp_path / "repo", RepositoryOptions(
            "net", target="ascend", ascend=AscendOptions(cann="8.1.RC1")), force=True)
    assert (tmp_path / "repo" / "net" / "2" / "old.onnx").exists()


# --------------------------------------------------------------------------- batching
def test_preferred_batch_sizes_default_and_user_list() -> None:
    io = read_graph_io(mlp_model())
    auto = parse_config(render_model(io, RepositoryOptions(
        "m", target="ascend", ascend=AscendOptions(cann="8.1.RC1")))["config.pbtxt"])
    assert auto.max_batch_size == 32  # type: ignore[attr-defined]
    assert list(auto.dynamic_batching.preferred_batch_size) == [2, 4, 8, 16, 32]  # type: ignore[attr-defined]
    mine = parse_config(render_model(io, RepositoryOptions(
        "m", target="ascend", max_batch_size=12, preferred_batch_sizes=(3, 12),
        ascend=AscendOptions(cann="8.1.RC1")))["config.pbtxt"])
    assert list(mine.dynamic_batching.preferred_batch_size) == [3, 12]  # type: ignore[attr-defined]


def test_variable_output_dim_warns_that_npu_ge_will_not_merge(tmp_path: Path) -> None:
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", "seq"])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["N", "seq"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.warns(TritonConfigWarning, match=r"will not merge.*output 'y' has a variable"):
        folder = build(tmp_path, m, max_batch_size=4)
    assert "npu_ge will not merge requests" in (folder / "config.pbtxt").read_text()


def test_static_model_with_batching_runs_a_batch_one_graph() -> None:
    io = read_graph_io(mlp_model())
    cfg = parse_config(render_model(io, RepositoryOptions(
        "m", target="ascend", max_batch_size=8,
        ascend=AscendOptions(cann="8.1.RC1", static_model=True)))["config.pbtxt"])
    assert cfg.max_batch_size == 8  # type: ignore[attr-defined]
    params = {k: v.string_value for k, v in cfg.parameters.items()}  # type: ignore[attr-defined]
    assert params["static_model"] == "1"


# ------------------------------------------------------------------------ validation
@pytest.mark.parametrize(("elem", "name"), [(T.BFLOAT16, "TYPE_BF16"), (T.DOUBLE, "TYPE_FP64"),
                                            (T.STRING, "TYPE_STRING")])
def test_dtypes_npu_ge_cannot_run_are_refused(elem: int, name: str) -> None:
    io = read_graph_io(mlp_model(dtype=elem))
    with pytest.raises(TritonConfigError, match=rf"input 'x' is {name}, which npu_ge cannot "
                       r"serve.*add a Cast"):
        render_model(io, RepositoryOptions("m", target="ascend",
                                           ascend=AscendOptions(cann="8.1.RC1")))


def test_unnamed_variable_output_dim_is_named_from_the_graph_or_refused(tmp_path: Path) -> None:
    named = build(tmp_path / "a", two_op_model(out_dims=("N", None)), max_batch_size=0)
    out = onnx.load(str(named / "1" / "model.onnx")).graph.output[0]
    assert [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim] == ["N", 8]
    g = helper.make_graph(  # NonZero's count is data-dependent: no input dim names it
        [helper.make_node("NonZero", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", T.FLOAT, [4])],
        [helper.make_tensor_value_info("y", T.INT64, [1, None])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(TritonConfigError, match=r"output 'y' dim 1 is variable but .*"
                       r"dynamic_axes"):
        build(tmp_path / "b", m, max_batch_size=0)


@pytest.mark.parametrize("ids", ["0,,1", "a", "1,1", "0;1", " 0", "0,"])
def test_device_ids_format(ids: str) -> None:
    with pytest.raises(TritonConfigError, match=r"device_ids .* is not a list of distinct NPU"):
        RepositoryOptions("m", target="ascend", ascend=AscendOptions(device_ids=ids)).check()


def test_static_model_input_name_with_separator_is_refused() -> None:
    g = helper.make_graph(
        [helper.make_node("Relu", ["in:0"], ["y"])], "g",
        [helper.make_tensor_value_info("in:0", T.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, [1, 4])])
    io = read_graph_io(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    with pytest.raises(TritonConfigError, match=r"input 'in:0' contains one of ':', ';', ','"):
        render_model(io, RepositoryOptions("m", target="ascend",
                                           ascend=AscendOptions(static_model=True)))


@pytest.mark.parametrize(("key", "match"), [
    ("ge.aicoreNum", r"--backend-config=npu_ge,ge.aicoreNum=12\|10"),
    ("global.ge.x", r"--backend-config=npu_ge,ge.x=12\|10"),
    ("onnx_model", r"not read by npu_ge"),
])
def test_parameters_npu_ge_ignores_are_refused(key: str, match: str) -> None:
    opts = RepositoryOptions("m", target="ascend", extra_parameters=((key, "12|10"),))
    with pytest.raises(TritonConfigError, match=match):
        opts.check()


# ------------------------------------------------------------------------ parameters
def test_backend_parameters_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(mlp_model(), str(src))
    rc = main(["triton", "build", str(src), "-o", str(tmp_path / "repo"), "--name", "m",
               "--target", "ascend", "--cann", "8.1.RC1", "--device-ids", "0,1",
               "--device-exec-blocks", "2", "--instance-exec-blocks", "3",
               "--precision-mode-v2", "mixed_float16",
               "--session-option", "ge.exec.enableDump=0", "--shape-gears", "1,1;4,4;8,8",
               "--dump-graph", "--profiling", "dynamic", "--dump-data",
               "--parameter", "graph.ge.exec.x=1"])
    assert rc == 0
    text = (tmp_path / "repo" / "m" / "config.pbtxt").read_text()
    check_golden("triton/ascend_parameters/config.pbtxt", text)
    params = {k: v.string_value for k, v in parse_config(text).parameters.items()}  # type: ignore[attr-defined]
    assert params == {
        "device_ids": "0,1", "device_exec_blocks": "2", "instance_exec_blocks": "3",
        "dump_graph": "1", "dump_data": "1", "profiling": "dynamic",
        "session.ge.exec.precision_mode_v2": "mixed_float16",
        "session.ge.exec.enableDump": "0",
        "graph.ge.inputShape": "x:-1,16;z:-1,8", "graph.ge.dynamicDims": "1,1;4,4;8,8",
        "graph.ge.dynamicNodeType": "1", "graph.ge.exec.x": "1",
    }
    assert "GE parser rules of CANN 8.1.RC1 (--cann 8.1.RC1)" in capsys.readouterr().out


def test_shape_gears_need_one_value_per_variable_dim() -> None:
    with pytest.raises(TritonConfigError, match=r"shape gear 4 must give 2 positive values, "
                       r"one per -1 in x:-1,16;z:-1,8"):
        render_model(read_graph_io(mlp_model()), RepositoryOptions(
            "m", target="ascend", ascend=AscendOptions(shape_gears=((1, 1), (4,)), cann="8.1.RC1")))
    with pytest.raises(TritonConfigError, match=r"shape gears need variable input dims"):
        render_model(read_graph_io(mlp_model(batch=2)), RepositoryOptions(
            "m", target="ascend", ascend=AscendOptions(shape_gears=((1,),), cann="8.1.RC1")))


def test_precision_mode_v2_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "m.onnx"
    onnx.save(mlp_model(), str(src))
    assert main(["triton", "build", str(src), "-o", str(tmp_path / "r"), "--name", "m",
                 "--target", "ascend", "--precision-mode-v2", "fast"]) != 0
    assert "--precision-mode-v2 'fast' is not a GE mode; use one of fp16, origin" in (
        capsys.readouterr().err)


def test_ascend_options_are_refused_for_cpu() -> None:
    with pytest.raises(TritonConfigError, match="dump_graph is an npu_ge option"):
        RepositoryOptions("m", ascend=AscendOptions(dump_graph=True)).check()


def test_config_names_the_library_triton_loads() -> None:
    text = render_model(read_graph_io(mlp_model()), RepositoryOptions(
        "m", target="ascend", ascend=AscendOptions(cann="8.1.RC1")))["config.pbtxt"]
    assert "backends/npu_ge/libtriton_npu_ge.so" in text
    assert "libnpu_ge.so" not in text.replace("libtriton_npu_ge.so", "")


# ---------------------------------------------------------------- parser rules, per rule
def _m(nodes: list[onnx.NodeProto], imports: dict[str, int]) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [], [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid(d, v)
                                               for d, v in imports.items()])


def test_rule_domain_must_be_imported() -> None:
    m = _m([helper.make_node("MyOp", ["x"], ["y"], domain="com.x")], {"": 17})
    (p,) = check_parser_rules(m, CANN8)
    assert "domain 'com.x', which the model's opset_import does not list" in p.message


def test_rule_empty_domain_with_several_imports_is_e16005_through_9_1() -> None:
    m = _m([helper.make_node("Relu", ["x"], ["y"]),
            helper.make_node("MyOp", ["y"], ["z"], domain="com.x")], {"": 17, "com.x": 1})
    (p,) = check_parser_rules(m, parse_cann_version("9.1"))
    assert p.op_type == "Relu" and "E16005" in p.message
    assert check_parser_rules(m, parse_cann_version("9.2")) == []


def test_rule_single_import_resolves_an_empty_domain() -> None:
    m = _m([helper.make_node("Relu", ["x"], ["y"])], {"": 17})
    assert check_parser_rules(m, CANN8) == []


def test_rule_custom_key_must_be_registered() -> None:
    m = _m([helper.make_node("MyOp", ["x"], ["y"], domain="com.x")], {"com.x": 2})
    (p,) = check_parser_rules(m, CANN8, {"MyOp": ["com.x::1::MyOp"]})
    assert "needs the plugin key 'com.x::2::MyOp'" in p.message
    assert check_parser_rules(m, CANN8, {"MyOp": ["com.x::2::MyOp"]}) == []


def test_rule_applies_inside_subgraphs() -> None:
    inner = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "then", [],
                              [helper.make_tensor_value_info("y", T.FLOAT, [1])])
    node = helper.make_node("If", ["c"], ["o"], name="if", domain="ai.onnx",
                            then_branch=inner, else_branch=inner)
    m = _m([node], {"": 17, "ai.onnx": 17, "com.x": 1})
    assert [p.node for p in check_parser_rules(m, CANN8)] == ["if/Relu_0", "if/Relu_0"]


def test_no_warning_for_a_plain_mergeable_model() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        render_model(read_graph_io(mlp_model()), RepositoryOptions(
            "m", target="ascend", ascend=AscendOptions(cann="8.1.RC1")))


def test_ort_venv_never_replaces_a_folder_that_is_not_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.setenv("OPSDK_ORT_VENV", str(tmp_path))
    with pytest.raises(DeviceUnavailable, match="is not a venv; opsdk will not replace it"):
        ensure_ort_env()
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(DeviceUnavailable, match=r"no ONNX Runtime 1.23.2 venv at .*setup.d"):
        run_like_npu_ge(tmp_path / "m.onnx", {})


def test_op_project_keys_set_the_custom_opset_version(
        tmp_path: Path, ort_1232: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prj = tmp_path / "cann_trelu"
    assert main(["cann", "ThresholdedRelu", "-o", str(prj),
                 "--origin-op-type", "com.opsdk::11::ThresholdedRelu"]) == 0
    g = helper.make_graph(
        [helper.make_node("ThresholdedRelu", ["x"], ["y"], domain="com.opsdk", alpha=0.5)],
        "g", [helper.make_tensor_value_info("x", T.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["N", 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.opsdk", 1)])
    folder = build(tmp_path / "one", m, op_projects=(str(prj),))
    model = onnx.load(str(folder / "1" / "model.onnx"))
    assert ("com.opsdk", 11) in {(o.domain, o.version) for o in model.opset_import}
    assert "com.opsdk::11::ThresholdedRelu" in (folder / "config.pbtxt").read_text()
    keys = {"ThresholdedRelu": ["com.opsdk::11::ThresholdedRelu"]}
    assert check_parser_rules(model, CANN8, keys) == []
    assert main(["triton", "check", str(folder), "--cann", "8.1.RC1", "--op-project", str(prj),
                 "--json"]) == 0
    assert '"ok": true' in capsys.readouterr().out
    without = check_npu_ge_folder(folder, cann="8.1.RC1")  # the spec's key: version 1
    assert [p for p in without.problems if "needs the plugin key 'com.opsdk::11::" in p]
    with pytest.raises(TritonConfigError, match=r"ThresholdedRelu and Softmax share domain "
                       r"'com.opsdk' but their plugin keys need opset versions 11 and 1"):
        build(tmp_path / "two", two_op_model(), op_projects=(str(prj),))
