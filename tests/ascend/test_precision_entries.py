"""--keep_dtype op types and --modify_mixlist entries that name no op type of the model are
refused, naming the close match (ATC matches CANN's op type, Conv2D for ONNX Conv, and
ignores an entry that matches nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from opsdk.ascend import CannArgError, plan_atc
from opsdk.ascend.model_precision import analyze_model
from opsdk.cli import main
from opsdk.errors import SpecError

F = TensorProto.FLOAT


def conv_model(path: Path) -> Path:
    """Conv -> Relu -> MatMul, fixed shapes."""
    rng = np.random.default_rng(3)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("Reshape", ["r", "shape"], ["f"], name="flat"),
         helper.make_node("MatMul", ["f", "m"], ["y"], name="mm")],
        "g", [helper.make_tensor_value_info("x", F, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", F, [1, 5])],
        [numpy_helper.from_array(rng.standard_normal((2, 3, 3, 3)).astype(np.float32), "w"),
         numpy_helper.from_array(np.array([1, 32], np.int64), "shape"),
         numpy_helper.from_array(rng.standard_normal((32, 5)).astype(np.float32), "m")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


# entry -> words of the refusal
KEEP = {
    "OpType::Conv": "OpType::Conv names no op type of the model (ATC would ignore it); did you "
                    "mean OpType::Conv2D (Conv2D, CANN's name for ONNX Conv)?",
    "OpType::matmul": "did you mean OpType::BatchMatMulV2 (BatchMatMulV2, CANN's name for ONNX "
                      "MatMul)?",
    "OpType::Conv2d": "did you mean OpType::Conv2D (Conv2D, CANN's name for ONNX Conv)?",
    "OpType::Softmax": "OpType::Softmax names no op type of the model (ATC would ignore it); "
                       "The model's CANN op types: BatchMatMulV2, Conv2D, Relu, Reshape",
}


@pytest.mark.parametrize("line", sorted(KEEP))
def test_keep_dtype_op_type_that_matches_nothing_is_refused(tmp_path: Path, line: str) -> None:
    model = conv_model(tmp_path / "m.onnx")
    keep = tmp_path / "keep.cfg"
    keep.write_text(f"relu\n{line}\n")
    with pytest.raises(SpecError) as e:
        analyze_model(model, "allow_mix_precision", keep_dtype=keep)
    assert KEEP[line] in str(e.value) and f"--keep-dtype file {keep}" in str(e.value)


def test_mixlist_entry_that_matches_nothing_is_refused(tmp_path: Path) -> None:
    model = conv_model(tmp_path / "m.onnx")
    mix = tmp_path / "ops_info.json"
    mix.write_text(json.dumps({"black-list": {"to-add": ["Relu"]},
                               "white-list": {"to-add": ["Conv"]}}))
    with pytest.raises(SpecError, match=r"--modify-mixlist file .*ops_info.json: 'Conv' names no "
                       r"op type of the model .*did you mean 'Conv2D' \(Conv2D, CANN's name for "
                       r"ONNX Conv\)"):
        analyze_model(model, "allow_mix_precision", modify_mixlist=mix)


def test_entries_that_match_are_taken(tmp_path: Path) -> None:
    model = conv_model(tmp_path / "m.onnx")
    keep, mix = tmp_path / "keep.cfg", tmp_path / "ops_info.json"
    keep.write_text("OpType::Conv2D\n")
    mix.write_text(json.dumps({"black-list": {"to-add": ["BatchMatMulV2"]}}))
    report = analyze_model(model, "allow_mix_precision", keep_dtype=keep, modify_mixlist=mix)
    runs = {d.name: (d.run, d.why) for d in report.nodes}
    assert runs["conv"][1] == "--keep_dtype" and "black" in runs["mm"][1], runs


def test_atc_refuses_them_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = conv_model(tmp_path / "m.onnx")
    keep = tmp_path / "keep.cfg"
    keep.write_text("OpType::Conv\n")
    kw = {"soc_version": "Ascend910B3", "output": str(tmp_path / "out"), "skip_doctor": True}
    with pytest.raises(CannArgError, match=r"OpType::Conv names no op type .*OpType::Conv2D"):
        plan_atc(model, precision_mode="allow_mix_precision", keep_dtype=keep, **kw)
    keep.write_text("nope\n")
    with pytest.raises(CannArgError, match=r"--keep-dtype names node\(s\) nope"):
        plan_atc(model, precision_mode="allow_mix_precision", keep_dtype=keep, **kw)
    argv = ["atc", str(model), "--soc-version", "Ascend910B3", "--output", str(tmp_path / "o"),
            "--precision-mode", "allow_mix_precision", "--keep-dtype", str(keep), "--dry-run"]
    assert main(argv) != 0
    assert "nope" in capsys.readouterr().err
