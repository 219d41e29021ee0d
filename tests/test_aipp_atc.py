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
from opsdk.preprocess import load_preprocess

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
    assert any(n.startswith("AIPP emulator vs CPU preprocessing: uint8 stages within ")
               and "model outputs equal" in n for n in plan.notes), plan.notes
    assert write_aipp_config(plan) == Path(cfg)
    assert Path(cfg).read_text() == plan.aipp_config
    Path(cfg).write_text("# edited by hand\n")
    with pytest.raises(CannArgError, match="net.insert_op.cfg exists and is not the AIPP "
                       "config ATC needs now; remove it or pass --force"):
        write_aipp_config(plan)
    write_aipp_config(plan, force=True)
    assert Path(cfg).read_text() == plan.aipp_config


def test_a_model_that_sees_every_difference_blocks(tmp_path: Path, decl: Path) -> None:
    """The check can fail: a model that keeps the fraction of image * 4096 separates AIPP's
    float16 input from the CPU step's float32 one, and the conversion is blocked."""
    plan = plan_atc(_net(tmp_path / "net.onnx", sensitive=True), output=str(tmp_path / "o"),
                    aipp=decl, **KW)
    assert any("model outputs DIFFER" in b and "image 0 y: " in b for b in plan.blocking)


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
    assert check.passed and check.stage_lsb <= 1
    assert len(check.outputs) == 3 and all(": ok" in line or "ok" in line
                                           for line in check.outputs)
