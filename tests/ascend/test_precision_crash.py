"""`opsdk precision` runs its analysis in a child process (issue 33, item 2): a crash of
ONNX Runtime on the float32 model, or on one of the lowered variants the attribution runs,
is an error naming the model, the ONNX Runtime version, what ran and the node, with exit
code 1, not the end of the command by a bare signal. The crashes are real SIGSEGVs of an
interpreter whose ONNX Runtime is made to die (tests/_helpers/crashing_ort.py); the models
are built with onnx.helper."""

from __future__ import annotations

import sys
from importlib.metadata import version
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from opsdk.cli import main
from tests._helpers.crashing_ort import NEVER, crashing_python

# the attribution's run with only the second lowerable node (#1, Softsign) lowered
SECOND_ALONE = ('    on = feeds.get("opsdk_lower")\n'
                '    return on is not None and on.tolist() == [False, True]')


def _model(path: Path) -> Path:
    """x[2,4] -> Relu -> Softsign -> y[2,4]."""
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", T.FLOAT, [2, 4])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Softsign", ["r"], ["y"])]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                                opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def _precision(model: Path, python: Path, monkeypatch: pytest.MonkeyPatch,
               capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr(sys, "executable", str(python))
    assert main(["precision", str(model), "--precision-mode", "force_fp16"]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err and out.out == ""
    return out.err


def test_a_crash_on_the_float32_model_is_an_error_naming_model_version_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path / "m.onnx")
    assert main(["precision", str(model), "--precision-mode", "force_fp16"]) == 0
    capsys.readouterr()
    err = _precision(model, crashing_python(tmp_path), monkeypatch, capsys)
    assert (f"opsdk precision: error: {model}: ONNX Runtime {version('onnxruntime')} crashed "
            "with SIGSEGV (signal 11) opening the float32 model; the crash is node #1 (Softsign) "
            "of the float32 model: the graph cut right after it crashes") in err, err


def test_a_crash_in_a_per_node_variant_names_the_variant_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path / "m.onnx")
    err = _precision(model, crashing_python(tmp_path, NEVER, SECOND_ALONE), monkeypatch,
                     capsys)
    assert "attribution 1/2 nodes" in err  # the first variant ran; the second crashed
    assert (f"opsdk precision: error: {model}: ONNX Runtime {version('onnxruntime')} crashed "
            "with SIGSEGV (signal 11) running the model with node #1 (Softsign) alone lowered "
            "to float16; the crash is node #1 (Softsign): the run with it alone lowered "
            "crashed") in err, err


# any model with a Cast to float16: the lowered ones, never the float32 model
FLOAT16_CAST = ('    return any(n.op_type == "Cast" and any(a.name == "to" and a.i == 10\n'
                '                                         for a in n.attribute)\n'
                '               for n in model.graph.node)')


def test_a_crash_on_the_lowering_is_isolated_in_the_lowered_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The float32 model runs, every lowered one crashes: the node is found by children in
    the model lowered under the mode (the first float16 Cast, which this ONNX Runtime
    dies on), and said to be of that model."""
    model = _model(tmp_path / "m.onnx")
    err = _precision(model, crashing_python(tmp_path, FLOAT16_CAST), monkeypatch, capsys)
    assert (f"opsdk precision: error: {model}: ONNX Runtime {version('onnxruntime')} crashed "
            "with SIGSEGV (signal 11) opening the model with each lowerable node switchable; "
            "the crash is node 'opsdk_precision/cast_") in err, err
    assert ("(Cast) of the model lowered under force_fp16: the graph cut right after it "
            "crashes") in err


def test_an_error_in_the_child_is_raised_as_itself(tmp_path: Path) -> None:
    """What the analysis refuses in the child comes back as the same error (type and
    message), not as a crash."""
    from opsdk.ascend.model_precision import analyze_model_in_child
    from opsdk.errors import SpecError

    keep = tmp_path / "keep.cfg"
    keep.write_text("OpName::nope\n")
    with pytest.raises(SpecError, match="--keep-dtype names node.s. OpName::nope that the "
                       "model does not have"):
        analyze_model_in_child(_model(tmp_path / "m.onnx"), "force_fp16", keep_dtype=keep)
