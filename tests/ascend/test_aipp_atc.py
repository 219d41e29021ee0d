"""`opsdk atc --aipp FILE`: the declaration's AIPP config goes to OUTPUT.insert_op.cfg and
--insert_op_conf, after ONNX Runtime runs the model on the AIPP emulator's output and on the
CPU step's, and the two agree under the model's precision standard (issue 31, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnx.helper as oh
import pytest
from onnx import numpy_helper

from opsdk.ascend import CannArgError, plan_atc
from opsdk.ascend.atc._atc import write_aipp_config
from opsdk.ascend.atc.aipp import AippError, check_aipp_model
from opsdk.cli import main
from opsdk.preprocess import PreprocessError, load_preprocess

DECL = """\
format = "YUV420SP_U8"
source_size = [48, 40]
color_standard = "BT-601NARROW"
[crop]
start = [6, 4]
size = [32, 32]
[normalize]
mean = [123.675, 116.28, 103.53]
std = [58.395, 57.12, 57.375]
"""


def _net(path: Path, sensitive: bool = False) -> Path:
    """image [1, 3, 32, 32] -> Conv 3x3 -> Relu -> GlobalAveragePool -> [1, 4, 1, 1]; the
    sensitive variant keeps the fraction of image * 4096, which is 0 for every float16 input
    (|x| < 4 has at most 12 fractional bits) and not for the float32 one."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(size=(4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [oh.make_node("Conv", ["image", "w"], ["c"], pads=[1, 1, 1, 1]),
             oh.make_node("Relu", ["c"], ["r"]), oh.make_node("GlobalAveragePool", ["r"], ["y"])]
    inits = [w]
    if sensitive:
        inits.append(numpy_helper.from_array(np.float32(4096.0).reshape(1), "k"))
        nodes = [oh.make_node("Mul", ["image", "k"], ["m"]), oh.make_node("Floor", ["m"], ["f"]),
                 oh.make_node("Sub", ["m", "f"], ["y"])]
        inits = inits[1:]
    graph = oh.make_graph(
        nodes, "net", [oh.make_tensor_value_info("image", onnx.TensorProto.FLOAT, [1, 3, 32, 32])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], inits)
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]), path)
    return path


@pytest.fixture
def decl(tmp_path: Path) -> Path:
    path = tmp_path / "preprocess.toml"
    path.write_text(DECL)
    return path


KW = {"soc_version": "Ascend310P3", "cann": "8.1.RC1"}


def test_atc_gets_the_cfg_and_the_check_passes(tmp_path: Path, decl: Path) -> None:
    plan = plan_atc(_net(tmp_path / "net.onnx"), output=str(tmp_path / "net"), aipp=decl,
                    input_shape="image:1,3,32,32", **KW)
    cfg = str(tmp_path / "net.insert_op.cfg")
    assert f"--insert_op_conf={cfg}" in plan.command and not plan.blocking
    assert plan.aipp_config and "    matrix_r0c2: 409" in plan.aipp_config
    assert any(n.startswith("AIPP emulator vs CPU preprocessing: equal within float16 (uint8 "
                            "stages within ") for n in plan.notes), plan.notes
    assert write_aipp_config(plan) == Path(cfg)
    assert Path(cfg).read_text() == plan.aipp_config
    Path(cfg).write_text("# edited by hand\n")
    with pytest.raises(CannArgError, match="net.insert_op.cfg exists and is not the AIPP "
                       "config ATC needs now; remove it or pass --force"):
        write_aipp_config(plan)
    write_aipp_config(plan, force=True)
    assert Path(cfg).read_text() == plan.aipp_config


def test_a_model_that_sees_float16_rounding_is_noted_not_blocked(tmp_path: Path,
                                                                decl: Path) -> None:
    """A model that keeps the fraction of image * 4096 separates AIPP's float16 input from
    the CPU step's float32 one; that is the model's sensitivity to the float16 the chip
    feeds it, not a preprocessing error: noted with its size, not blocked."""
    plan = plan_atc(_net(tmp_path / "net.onnx", sensitive=True), output=str(tmp_path / "o"),
                    aipp=decl, **KW)
    assert not plan.blocking, plan.blocking
    assert any("model outputs on the two inputs (informational: the chip feeds it float16): "
               "y differs by at most 0.9" in n for n in plan.notes), plan.notes


DOCS_DECL = """\
input = "image"
format = "YUV420SP_U8"
source_size = [640, 480]
color_standard = "BT-601NARROW"
channels = "RGB"
mode = "static"
[crop]
start = [208, 128]
size = [224, 224]
[normalize]
mean = [123.675, 116.28, 103.53]
std = [58.395, 57.12, 57.375]
[padding]
left = 0
right = 0
top = 0
bottom = 0
value = 0.0
[output]
layout = "NCHW"
dtype = "float32"
"""


def _conv_relu(path: Path, size: int = 224) -> Path:
    """image [1, 3, size, size] -> Conv 3x3 (bias) -> Relu: many outputs near 0."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(8, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.normal(size=(8,)).astype(np.float32), "b")]
    nodes = [oh.make_node("Conv", ["image", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             oh.make_node("Relu", ["c"], ["y"])]
    graph = oh.make_graph(nodes, "net", [oh.make_tensor_value_info(
        "image", onnx.TensorProto.FLOAT, [1, 3, size, size])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], inits)
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)]), path)
    return path


def test_the_docs_declaration_passes_a_conv_relu_model_at_224(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The ReLU's outputs near 0 failed a relative standard on AIPP's float16 input and the
    docs' own declaration was blocked; the preprocessing is judged in float16 ulps now."""
    (tmp_path / "p.toml").write_text(DOCS_DECL)
    rc = main(["atc", str(_conv_relu(tmp_path / "net.onnx")), "--soc-version", "Ascend310P3",
               "--output", str(tmp_path / "om"), "--input-shape", "image:1,3,224,224",
               "--aipp", str(tmp_path / "p.toml"), "--cann", "8.1.RC1", "--dry-run"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "AIPP emulator vs CPU preprocessing: equal within float16 (uint8 stages within 0 " \
           "LSB; normalisation within " in out


def test_a_normalisation_beyond_float16_blocks_naming_stage_pixel_and_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "p.toml").write_text(DOCS_DECL.replace("std = [58.395,", "std = [0.0005,"))
    rc = main(["atc", str(_conv_relu(tmp_path / "net.onnx")), "--soc-version", "Ascend310P3",
               "--output", str(tmp_path / "om"), "--input-shape", "image:1,3,224,224",
               "--aipp", str(tmp_path / "p.toml"), "--cann", "8.1.RC1", "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("opsdk atc: error: AIPP emulator vs CPU preprocessing DIFFER: stage "
                          "normalize (AIPP's DTC in float16), image 0, pixel (x=")
    assert "beyond float16's largest value 65504; lower var_reci (a larger std)" in err


def test_a_wrong_channel_swap_blocks_at_its_stage(tmp_path: Path, decl: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A real difference of the cfg (U and V swapped) is still caught, at its stage."""
    from opsdk.ascend.atc import _aipp_check

    real = _aipp_check.static_fields
    monkeypatch.setattr(_aipp_check, "static_fields",
                        lambda p: [(k, not v if k == "rbuv_swap_switch" else v)
                                   for k, v in real(p)])
    check = check_aipp_model(onnx.load(str(_net(tmp_path / "net.onnx"))),
                             load_preprocess(decl), "image")
    assert not check.passed
    assert check.summary().startswith("AIPP emulator vs CPU preprocessing DIFFER: stage crop, "
                                      "image 0, pixel (x=")
    assert "LSB apart (allowed 1); check format, crop.start and crop.size (the cfg's channel " \
        "swaps, which come first," in check.summary()


def test_padding_value_beyond_float16_is_refused_by_its_range(tmp_path: Path) -> None:
    """1e9 became inf in AIPP's float16 padding and surfaced as NaN output differences."""
    decl = tmp_path / "p.toml"
    decl.write_text(DOCS_DECL.replace("value = 0.0", "value = 1e9").replace(
        "left = 0", "left = 2").replace("size = [224, 224]", "size = [222, 224]"))
    with pytest.raises(AippError, match=r"padding_value \(declaration: padding.value\) is "
                       r"1000000000.0, expected \[-65504, 65504\]; AIPP fills padding in "
                       r"float16"):
        plan_atc(_conv_relu(tmp_path / "net.onnx"), output=str(tmp_path / "o"), aipp=decl,
                 input_shape="image:1,3,224,224", **KW)
    decl.write_text(DOCS_DECL.replace("value = 0.0", "value = 1e9").replace(
        'dtype = "float32"', 'dtype = "float16"'))
    with pytest.raises(PreprocessError, match=r"field 'padding.value' is 1000000000.0, expected "
                       r"a number within float16's range \(\|value\| <= 65504\)"):
        load_preprocess(decl)


def test_aipp_input_must_be_a_graph_input(tmp_path: Path, decl: Path) -> None:
    decl.write_text('input = "pixels"\n' + DECL)
    with pytest.raises(CannArgError, match=r"preprocess.toml: field 'input' names 'pixels', "
                       r"which is not a graph input; inputs are: image"):
        plan_atc(_net(tmp_path / "net.onnx"), output="o", aipp=decl, **KW)


def test_model_size_must_match_the_declaration(tmp_path: Path, decl: Path) -> None:
    decl.write_text(DECL.replace("size = [32, 32]", "size = [30, 32]"))
    with pytest.raises(AippError, match=r"dim 3 = 30, expected the model's 32"):
        plan_atc(_net(tmp_path / "net.onnx"), output="o", aipp=decl, **KW)


def test_cli_dry_run_writes_the_cfg(tmp_path: Path, decl: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "om" / "net"
    out.parent.mkdir()
    rc = main(["atc", str(_net(tmp_path / "net.onnx")), "--soc-version", "Ascend310P3",
               "--output", str(out), "--aipp", str(decl), "--cann", "8.1.RC1", "--dry-run",
               "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0, report
    assert report["aipp_config_path"] == f"{out}.insert_op.cfg"
    assert Path(f"{out}.insert_op.cfg").read_text().startswith(
        f"# generated by opsdk from {decl} (opsdk atc --aipp); do not edit")
    assert any(f"--insert_op_conf={out}.insert_op.cfg" in line for line in report["procedure"])


def test_check_reports_the_stage_difference(tmp_path: Path, decl: Path) -> None:
    model = onnx.load(str(_net(tmp_path / "net.onnx")))
    check = check_aipp_model(model, load_preprocess(decl), "image", images=3)
    assert check.passed and check.stage_lsb <= 1 and check.dtc_ulps <= check.budget_ulps
    assert check.outputs and all(line.startswith("y differs by at most ")
                                 for line in check.outputs)
