"""`opsdk cann` and `opsdk atc` from the command line."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import onnx
import onnx.helper as oh
import pytest

from opsdk.ascend import CannArgError, compute_unit, parse_input_shape, plan_atc
from opsdk.cli import main

TR = str(Path(__file__).resolve().parents[2] / "operators" / "thresholded_relu")
GS = str(Path(__file__).resolve().parents[2] / "operators" / "grid_sample")
FC = str(Path(__file__).resolve().parents[2] / "operators" / "fused_conv_bn_relu")


def _model(path: Path, shape: list, domain_version: int = 1) -> Path:
    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, shape)
    node = oh.make_node("ThresholdedRelu", ["x"], ["y"], domain="com.opsdk", alpha=0.5)
    m = oh.make_model(
        oh.make_graph([node], "g", [x], [y]),
        opset_imports=[oh.make_opsetid("com.opsdk", domain_version)],
    )
    onnx.save(m, path)
    return path


def test_cann_writes_and_refuses_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "prj"
    cmd = ["cann", TR, "-o", str(out), "--cann", "9", "--engine", "both"]
    socs = ["--soc", "Ascend910B3", "--soc", "ascend310b"]  # 310P: no DataCopyPad
    assert main([*cmd, *socs]) == 0
    text = (out / "op_host" / "thresholded_relu.cpp").read_text()
    assert 'AddConfig("ascend910b")' in text and 'AddConfig("ascend310b")' in text
    assert main(cmd) == 1
    assert "is not empty; pass --force" in capsys.readouterr().err
    assert main([*cmd, "--force", "--json", *socs]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"] == [] and "build.sh" in report["unchanged"]
    assert main([*cmd, "--force", "--json"]) == 0  # one soc less
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["written"]) == ["CMakePresets.json", "op_host/thresholded_relu.cpp"]


def _no_toolkit(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        monkeypatch.delenv(var, raising=False)


def test_cann_default_engine_follows_the_ai_core_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_toolkit(monkeypatch)
    out = tmp_path / "fc"
    assert main(["cann", FC, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "CANN 8.1.RC1 (no CANN toolkit found" in text
    # a hand-written Cube kernel whose tiling is Python (op_kernel/tiling.py): AI CPU, saying why
    assert "engine aicpu (FusedConvBnRelu's AI Core kernel (" in text
    assert "which the generated op_host cannot run yet" in text
    assert not (out / "CMakeLists.txt").exists() and not (out / "op_host").exists()
    kernel = Path(FC) / "kernel.cpp"
    assert (out / "aicpu/opsdk/kernels/fused_conv_bn_relu.cpp").read_text() == kernel.read_text()
    assert (out / "aicpu" / "op_proto" / "fused_conv_bn_relu_shape.h").read_text() == (
        Path(FC) / "shape.h"
    ).read_text()
    build = (out / "build.sh").read_text()
    assert "gen aicpu aicpu" in build and "ai_core-" not in build
    out = tmp_path / "gs"  # a hand-written AI Core kernel, backed by the AI CPU kernel
    assert main(["cann", GS, "-o", str(out)]) == 0
    assert "engine both (GridSample has an AI Core kernel (hand-written" in capsys.readouterr().out
    out = tmp_path / "tr"
    assert main(["cann", TR, "-o", str(out), "--op-type", "ThresholdedReluCustom"]) == 0
    printed = capsys.readouterr().out
    assert "engine both (ThresholdedRelu has an AI Core kernel (generated)" in printed
    assert f"NPU tests: pytest --opsdk-device=npu {TR} --opsdk-cann-project {out}" in printed
    adapter = (out / "aicpu/cpukernel/impl/thresholded_relu_custom_kernels.cc").read_text()
    assert 'kKernel = "ThresholdedRelu"' in adapter
    assert "REGISTER_CPU_KERNEL(THRESHOLDED_RELU_CUSTOM, ThresholdedReluCustomCpuKernel)" in adapter
    assert (out / "op_kernel" / "thresholded_relu_custom.cpp").is_file()


def test_cann_auto_reads_the_toolkit_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    toolkit = tmp_path / "toolkit"
    (toolkit / "compiler").mkdir(parents=True)
    (toolkit / "compiler" / "version.info").write_text("Version=7.9.0.1.100\nversion_dir=9.0.0\n")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(toolkit))
    out = tmp_path / "prj"
    assert main(["cann", TR, "-o", str(out), "--engine", "aicore", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cann"] == "9.0.0" and report["layout"] == "cmake-modules"
    assert f"the toolkit at {toolkit} is CANN 9.0.0" == report["cann_reason"]
    assert "find_package(ASC" in (out / "CMakeLists.txt").read_text()
    assert not (out / "aicpu").exists()


def test_soc_is_checked_against_the_engine_and_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cmd = ["cann", TR, "--soc", "Ascend310", "--cann", "8"]
    assert main([*cmd, "-o", str(tmp_path / "a"), "--engine", "aicore"]) == 1
    err = capsys.readouterr().err
    assert "--soc ascend310: Ascend C on CANN 8 does not target ascend310" in err
    assert "valid: ascend910, ascend910b, ascend910_93, ascend310p, ascend310b" in err
    assert not (tmp_path / "a").exists()
    assert main([*cmd, "-o", str(tmp_path / "b"), "--engine", "aicpu"]) == 0  # AI CPU: any SoC
    assert main([*cmd, "-o", str(tmp_path / "c"), "--cann", "seven"]) == 1
    assert "is not a CANN version" in capsys.readouterr().err


def test_builtin_type_name_warns_and_op_type_maps_the_onnx_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cann", TR, "-o", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "warning: ThresholdedRelu is also the type of a CANN built-in operator" in err
    assert "--op-type ThresholdedReluCustom" in err
    out = tmp_path / "b"
    args = ["cann", TR, "-o", str(out), "--engine", "both", "--op-type", "ThresholdedReluCustom"]
    assert main(args) == 0
    assert "warning" not in capsys.readouterr().err
    plugin = (out / "framework/onnx_plugin/thresholded_relu_custom_plugin.cc").read_text()
    assert 'REGISTER_CUSTOM_OP("ThresholdedReluCustom")' in plugin
    assert '.OriginOpType("com.opsdk::1::ThresholdedRelu")' in plugin
    assert "OP_ADD(ThresholdedReluCustom);" in (
        out / "op_host/thresholded_relu_custom.cpp"
    ).read_text()
    assert '"op": "ThresholdedReluCustom"' in (out / "msopgen" / "aicpu.json").read_text()
    assert main(["cann", TR, "-o", str(tmp_path / "c"), "--op-type", "bad-name"]) == 1
    assert "--op-type 'bad-name' is not a CANN operator type" in capsys.readouterr().err


def test_cann_keys_from_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path / "m.onnx", [2, 3], domain_version=4)
    out = tmp_path / "prj"
    assert main(["cann", TR, "-o", str(out), "--onnx-model", str(model)]) == 0
    plugin = (out / "framework" / "onnx_plugin" / "thresholded_relu_plugin.cc").read_text()
    assert '.OriginOpType("com.opsdk::4::ThresholdedRelu")' in plugin
    assert main(["cann", TR, "-o", str(tmp_path / "p2"), "--origin-op-type", "bad"]) == 1
    assert "must be <domain>::<opset>::ThresholdedRelu" in capsys.readouterr().err


def test_unknown_soc_is_explained() -> None:
    with pytest.raises(CannArgError, match="unknown SoC 'Ascend999'.*ascend910b"):
        compute_unit("Ascend999")


def test_input_shape_syntax() -> None:
    assert parse_input_shape("x:1,3,224,224;m:1~8,-1") == {
        "x": ["1", "3", "224", "224"],
        "m": ["1~8", "-1"],
    }
    with pytest.raises(CannArgError, match="dim 'a' is not an int, -1 or a range"):
        parse_input_shape("x:1,a")
    with pytest.raises(CannArgError, match="range '8~1' has lo > hi"):
        parse_input_shape("x:8~1")


def test_atc_validates_against_the_graph(tmp_path: Path) -> None:
    model = _model(tmp_path / "m.onnx", ["N", 3])
    kw = {"soc_version": "Ascend910B3", "output": str(tmp_path / "out")}
    with pytest.raises(CannArgError, match="'x' has rank 3 but the model's input has rank 2"):
        plan_atc(model, input_shape="x:1,3,4", **kw)
    with pytest.raises(CannArgError, match="dim 1 is 4 but the model fixes it to 3"):
        plan_atc(model, input_shape="x:1,4", **kw)
    with pytest.raises(CannArgError, match="names 'z', which is not a graph input; inputs are: x"):
        plan_atc(model, input_shape="z:1,3", **kw)
    with pytest.raises(CannArgError, match="have dynamic dims and no --input-shape"):
        plan_atc(model, **kw)
    for dynamic in (-1, 0):  # as paddle2onnx and other converters write a dynamic dim
        exported = _model(tmp_path / f"m{dynamic}.onnx", [dynamic, 3])
        with pytest.raises(CannArgError, match='e.g. --input-shape "x:1,3"'):
            plan_atc(exported, **kw)
        assert "--input_shape=x:2,3" in plan_atc(exported, input_shape="x:2,3", **kw).command
    with pytest.raises(CannArgError, match="--precision-mode 'fast' is not accepted"):
        plan_atc(model, input_shape="x:1,3", precision_mode="fast", **kw)
    with pytest.raises(CannArgError, match="--soc 'Ascend910' is not a known SoC version"):
        plan_atc(model, input_shape="x:1,3", soc_version="Ascend910", output="o")
    plan = plan_atc(
        model,
        input_shape="x:1~8,3",
        precision_mode="allow_fp32_to_fp16",
        op_select_implmode="high_performance",
        **kw,
    )
    assert plan.command[:2] == ["atc", "--framework=5"]
    assert "--input_shape=x:1~8,3" in plan.command and "--soc_version=Ascend910B3" in plan.command
    assert "--precision_mode=allow_fp32_to_fp16" in plan.command
    assert any("dynamic-shape" in n for n in plan.notes)


def test_atc_precision_setting_as_atc_takes_it(tmp_path: Path) -> None:
    model = _model(tmp_path / "m.onnx", [2, 3])
    kw: dict[str, Any] = {"soc_version": "Ascend910B3", "output": str(tmp_path / "out"),
                          "skip_doctor": True}
    mixlist, keep = tmp_path / "ops_info.json", tmp_path / "keep.cfg"
    mixlist.write_text(json.dumps({"white-list": {"to-add": ["ThresholdedRelu"]}}))
    keep.write_text("OpType::ThresholdedRelu\n")  # the model's op type (an entry of none is refused)
    plan = plan_atc(model, precision_mode="mixed_float16", modify_mixlist=mixlist,
                    keep_dtype=keep, **kw)
    assert plan.command[-3:] == ["--precision_mode_v2=mixed_float16",
                                 f"--modify_mixlist={mixlist}", f"--keep_dtype={keep}"]
    plan = plan_atc(model, precision_mode="origin", keep_dtype=keep, **kw)
    assert any("--keep_dtype has no effect under origin" in n for n in plan.notes)
    with pytest.raises(CannArgError, match="--modify-mixlist applies to the mixed-precision"):
        plan_atc(model, precision_mode="force_fp16", modify_mixlist=mixlist, **kw)
    with pytest.raises(CannArgError, match="add --precision-mode"):
        plan_atc(model, keep_dtype=keep, **kw)
    mixlist.write_text(json.dumps({"whitelist": []}))
    with pytest.raises(CannArgError, match="expected an object with the keys black-list"):
        plan_atc(model, precision_mode="allow_mix_precision", modify_mixlist=mixlist, **kw)


def test_atc_without_atc_prints_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH", raising=False)
    model = _model(tmp_path / "m.onnx", [2, 3])
    vendor = tmp_path / "vendors" / "opsdk"
    (vendor / "op_proto").mkdir(parents=True)
    args = [
        "atc",
        str(model),
        "--soc-version",
        "Ascend910B3",
        "--output",
        str(tmp_path / "out"),
        "--precision-mode",
        "allow_fp32_to_fp16",
        "--op-select-implmode",
        "high_performance",
        "--input-shape",
        "x:2,3",
        "--custom-opp",
        str(vendor),
    ]
    assert main(args) == 3
    out = capsys.readouterr().out
    assert "atc is not on PATH here" in out and "--framework=5" in out
    assert f"export ASCEND_CUSTOM_OPP_PATH={vendor}" in out
    assert main(args + ["--json", "--dry-run"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "dry-run" and report["env"]["ASCEND_CUSTOM_OPP_PATH"] == str(vendor)
    assert isinstance(report["findings"], list)


def test_atc_blocks_on_plugin_key_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path / "m.onnx", [2, 3], domain_version=2)
    prj = tmp_path / "prj"
    assert main(["cann", TR, "-o", str(prj)]) == 0
    capsys.readouterr()
    code = main(
        [
            "atc",
            str(model),
            "--soc-version",
            "Ascend910B3",
            "--output",
            "o",
            "--skip-doctor",
            "--op-project",
            str(prj),
        ]
    )
    assert code == 1
    assert "needs the plugin key 'com.opsdk::2::ThresholdedRelu'" in capsys.readouterr().err


@pytest.mark.parametrize("content, reason", [
    (b"\x08\x07garbage\xff\xff", "not a readable ONNX model"),
    (b"", "the file is empty"),
])
def test_atc_names_an_unreadable_model(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       content: bytes, reason: str) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(content)
    code = main(["atc", "--dry-run", str(bad), "--soc-version", "Ascend910B3", "--output",
                 str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and f"opsdk atc: error: {bad}: {reason}" in err, err
    assert "re-export it" in err and "Traceback" not in err


@pytest.mark.skipif(sys.platform == "win32", reason="uses a shell script as atc")
def test_atc_runs_atc_when_present(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "atc"
    fake.write_text('#!/bin/sh\necho "args: $*"\necho "opp=$ASCEND_CUSTOM_OPP_PATH"\nexit 0\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    model = _model(tmp_path / "m.onnx", [2, 3])
    assert (
        main(
            [
                "atc",
                str(model),
                "--soc-version",
                "Ascend310P3",
                "--output",
                "out.om",
                "--skip-doctor",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "--framework=5" in out
        and "--output=out " in out + " "
        and "--soc_version=Ascend310P3" in out
    )


def test_builtin_names_come_from_the_toolkit_op_protos(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from opsdk.ascend import builtin_clash, builtin_op_types

    names, source = builtin_op_types(tmp_path / "none")
    assert "SoftmaxV2" in names and "Softmax" not in names and source.startswith("opsdk's table")
    inc = tmp_path / "toolkit" / "opp" / "built-in" / "op_proto" / "inc"
    inc.mkdir(parents=True)
    (inc / "nn_norm_ops.h").write_text(  # as the 8.1.RC1 op protos write them
        "/**\n*@brief Computes the softmax.\n*/\nREG_OP(SoftmaxV2)\n"
        "    .INPUT(x, TensorType({DT_DOUBLE, DT_FLOAT16, DT_BF16, DT_FLOAT}))\n"
        "    .OP_END_FACTORY_REG(SoftmaxV2)\n\n  REG_OP(MyVendorOp)\n"
        "    .OP_END_FACTORY_REG(MyVendorOp)\n")
    root = tmp_path / "toolkit"
    names, source = builtin_op_types(root)
    assert names == {"SoftmaxV2", "MyVendorOp"} and str(inc) in source
    assert builtin_clash("Gelu", root) is None  # not a built-in of this toolkit
    assert builtin_clash("Softmax", root) is None
    warning = builtin_clash("MyVendorOp", root)
    assert warning is not None and f"the toolkit's op protos ({inc})" in warning
    monkeypatch.setenv("ASCEND_HOME_PATH", str(root))
    out = tmp_path / "a"
    assert main(["cann", TR, "-o", str(out), "--cann", "8"]) == 0
    assert "warning" not in capsys.readouterr().err  # this toolkit has no ThresholdedRelu


def test_engine_both_without_an_ai_core_kernel_is_refused_by_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fc"
    assert main(["cann", FC, "-o", str(out), "--engine", "both"]) == 1
    err = capsys.readouterr().err
    assert "FusedConvBnRelu: --engine both builds an AI Core kernel, but the operator has none" in err
    assert "--aicore-skeleton" in err and not out.exists()
    assert main(["cann", FC, "-o", str(out), "--engine", "both", "--aicore-skeleton"]) == 0
    assert "TODO(author)" in (out / "op_kernel" / "fused_conv_bn_relu.cpp").read_text()
