"""`opsdk rewrite --opset` compares the lowered model's outputs with the original's in
ONNX Runtime: that runs in a child process now (issue 33, item 2, the other command that
opened a user's model in ONNX Runtime in-process to judge it). A crash of ONNX Runtime on
the lowered model is an error naming the version, the stage and the node, and nothing is
written. The crash is made by an interpreter whose ONNX Runtime dies opening any opset-18
model (a real SIGSEGV in a real child; the models are built with onnx.helper)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from opsdk.cli import main
from tests._helpers.crashing_ort import OPSET_18, crashing_python


def test_a_crash_on_the_lowered_model_is_an_error_not_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    x = helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", T.FLOAT, ["n", 4])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])],
                                                "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 20)])
    src, dst = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, str(src))
    assert main(["rewrite", str(src), "-o", str(dst), "--opset", "18"]) == 0  # the real one
    dst.unlink()
    monkeypatch.setattr(sys, "executable", str(crashing_python(tmp_path, OPSET_18)))
    assert os.access(sys.executable, os.X_OK)
    assert main(["rewrite", str(src), "-o", str(dst), "--opset", "18"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert ("comparing the lowered model's outputs with the other's: ONNX Runtime "
            f"{onnx_runtime_version()} crashed with SIGSEGV (signal 11) opening the model"
            ) in err, err
    assert "; the crash is node #0 (Relu): " in err and "the lowered model is not kept" in err
    assert not dst.exists()


def onnx_runtime_version() -> str:
    from importlib.metadata import version

    return version("onnxruntime")
