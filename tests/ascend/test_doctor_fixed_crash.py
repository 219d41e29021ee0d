"""`opsdk doctor` opens every model in ONNX Runtime, in a child process, and runs it once:
a fixed-shape model too (issue 33, item 2), so a model that crashes ONNX Runtime at load is
an ``onnxruntime-crash`` finding naming the model, the version and the node, not "fine".
The crash is real: an interpreter whose ONNX Runtime dies (SIGSEGV) opening any model with
a Softsign node (tests/_helpers/crashing_ort.py); the models are built with onnx.helper."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import onnx
from onnx import TensorProto as T
from onnx import helper

from opsdk.ascend.atc.doctor import diagnose
from opsdk.cli import main
from tests._helpers.crashing_ort import crashing_python


def _fixed_model(path: Path) -> Path:
    """x[2,4] -> Relu -> Softsign -> y[2,4]: no dynamic input."""
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", T.FLOAT, [2, 4])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Softsign", ["r"], ["y"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(path))
    return path


def test_a_fixed_shape_model_that_crashes_onnx_runtime_is_a_finding(
        tmp_path: Path, capsys: object) -> None:
    model = _fixed_model(tmp_path / "fixed.onnx")
    assert diagnose(str(model), cann="8.1.RC1") == []  # this ONNX Runtime runs it: no finding
    python = str(crashing_python(tmp_path))
    found = diagnose(str(model), cann="8.1.RC1", python=python)
    assert [f.code for f in found] == ["onnxruntime-crash"], found
    assert found[0].node == "#1 (Softsign)"
    assert found[0].reason.startswith(
        f"{model}: ONNX Runtime {version('onnxruntime')} crashed with SIGSEGV (signal 11) "
        "opening the model, run once on inputs of the model's shapes; the crash is node #1 "
        "(Softsign): the graph cut right after it crashes, cut right before it loads")
    assert main(["doctor", str(model), "--cann", "8.1.RC1", "--ort-python", python]) == 1
    assert diagnose(str(model), cann="8.1.RC1", python=python, ort=False) == []


def test_the_crash_check_runs_the_input_shape_sizes(tmp_path: Path) -> None:
    """With --input-shape, ONNX Runtime runs the model on those sizes, the ones ATC will get:
    an ONNX Runtime that crashes only on a batch of 7 is found with x=7,4 and not without."""
    x = helper.make_tensor_value_info("x", T.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", T.FLOAT, ["N", 4])
    model = tmp_path / "dynamic.onnx"
    onnx.save(helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])],
                                                  "g", [x], [y]),
                                opset_imports=[helper.make_opsetid("", 13)]), str(model))
    python = str(crashing_python(
        tmp_path, when="    return False",
        run_when="    return any(v.shape[:1] == (7,) for v in feeds.values())"))
    found = diagnose(str(model), cann="8.1.RC1", python=python)
    assert "onnxruntime-crash" not in [f.code for f in found], found  # probed at N=1
    found = diagnose(str(model), cann="8.1.RC1", python=python, input_shapes={"x": [7, 4]})
    assert [f.code for f in found] == ["onnxruntime-crash"], found
    assert "crashed with SIGSEGV (signal 11)" in found[0].reason
    assert "run once on the --input-shape sizes (x=7,4)" in found[0].reason
