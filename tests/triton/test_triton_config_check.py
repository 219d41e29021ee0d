"""`opsdk triton check` compares config.pbtxt with its model; `--output-dims` with batching
(issue 23 items 9 and 14)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import helper

from opsdk.cli import main
from opsdk.errors import DeviceUnavailable
from opsdk.triton import ensure_ort_env
from opsdk.triton._config_check import config_problems, parse_config
from opsdk.triton._onnx_io import read_graph_io
from tests._helpers.dims_repo import _model, build, out_dims


def concat_model() -> onnx.ModelProto:
    """y[b, 2h] = Concat(x, x) along axis 1 of x[b, h]; y declared [?, ?]."""
    m = _model([helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], {"x": ["b", 8]})
    m.graph.output[0].type.tensor_type.shape.CopyFrom(
        helper.make_tensor_type_proto(1, [None, 16]).tensor_type.shape)
    return m


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return build(tmp_path, concat_model(), max_batch_size=4)


def _edit(folder: Path, old: str, new: str) -> None:
    config = folder / "config.pbtxt"
    text = config.read_text()
    assert old in text, text
    config.write_text(text.replace(old, new, 1))


def _problems(folder: Path) -> list[str]:
    io = read_graph_io(folder / "1" / "model.onnx")
    return config_problems(parse_config(folder / "config.pbtxt"), io)


def test_written_config_agrees_with_its_model(folder: Path) -> None:
    """Item 9: the config opsdk writes has no contradiction (the check can pass)."""
    assert _problems(folder) == []


@pytest.mark.parametrize(("old", "new", "message"), [
    ("dims: [ 8 ]", "dims: [ 9 ]", "config input 'x' dim 0 is 9 but the model's is 8"),
    ("dims: [ 8 ]", "dims: [ 8, 8 ]", "config input 'x' has dims [8, 8] (2 dims) but the model's "
                                      "input has 1 besides the batch axis"),
    ("data_type: TYPE_FP32", "data_type: TYPE_FP16",
     "config input 'x' has data_type TYPE_FP16 but the model's is TYPE_FP32"),
    ('name: "y"', 'name: "z"', "config output 'z' is not an output of the model (y)"),
    ("max_batch_size: 4", "max_batch_size: 0", "config input 'x' has dims [8] (1 dims) but the "
                                               "model's input has 2 ([-1, 8])"),
])
def test_contradictions_are_reported(folder: Path, old: str, new: str, message: str) -> None:
    """Item 9: dims, dtype, names and max_batch_size contradicting the model are reported."""
    _edit(folder, old, new)
    problems = _problems(folder)
    assert any(message in p for p in problems), problems


def test_fixed_batch_axis_contradicts_max_batch_size(tmp_path: Path) -> None:
    """Item 9: max_batch_size > 0 for a model whose leading dim is fixed."""
    folder = build(tmp_path, concat_model(), max_batch_size=0)
    m = onnx.load(str(folder / "1" / "model.onnx"))
    for v in [*m.graph.input, *m.graph.output]:
        v.type.tensor_type.shape.dim[0].dim_value = 1
    onnx.save(m, str(folder / "1" / "model.onnx"))
    _edit(folder, "max_batch_size: 0", "max_batch_size: 8")
    assert any("max_batch_size is 8 but the model's input 'x' has fixed leading dim 1" in p
               for p in _problems(folder))


def test_triton_check_reports_config_and_truncated_model(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Items 9 and 14: the check command fails on a contradicting config, and a truncated
    model is a problem naming the file, not a bare DecodeError."""
    try:
        ensure_ort_env()
    except DeviceUnavailable as e:
        pytest.skip(str(e))
    _edit(folder, "dims: [ 8 ]", "dims: [ 9 ]")
    assert main(["triton", "check", str(folder), "--cann", "8.1.RC1"]) == 1
    out = capsys.readouterr()
    assert "config input 'x' dim 0 is 9 but the model's is 8" in out.out + out.err
    path = folder / "1" / "model.onnx"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert main(["triton", "check", str(folder), "--cann", "8.1.RC1"]) == 1
    out = capsys.readouterr()
    assert f"{path} is not a readable ONNX model" in out.out + out.err
    assert "Traceback" not in out.err


def test_output_dims_in_the_helps_form_work_with_batching(tmp_path: Path) -> None:
    """Item 9: 'y=b,2*h' (the batch name first, as the help shows) with batching: the batch
    name is never written into another dim (it went to dim -1, the last)."""
    m = _model([helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], {"x": ["b", "h"]})
    m.graph.output[0].type.tensor_type.shape.CopyFrom(
        helper.make_tensor_type_proto(1, [None, None]).tensor_type.shape)
    with pytest.warns(Warning):  # npu_ge will not merge: a variable dim outside the batch axis
        plain = build(tmp_path / "a", m, max_batch_size=4)
    with pytest.warns(Warning):
        given = build(tmp_path / "b", m, max_batch_size=4, output_dims=(("y", ("b", "2*h")),))
    assert out_dims(plain) == out_dims(given) == ["2*h", "2*h"]


def test_config_subset_parses_without_tritonclient(folder: Path) -> None:
    """Item 9: the check reads opsdk's configs without tritonclient installed too."""
    from google.protobuf import text_format

    from opsdk.triton._config_check import _subset_class

    text = (folder / "config.pbtxt").read_text()
    config = text_format.Parse(text, _subset_class()(), allow_unknown_field=True)
    assert config.max_batch_size == 4 and [i.name for i in config.input] == ["x"]
    assert config_problems(config, read_graph_io(folder / "1" / "model.onnx")) == []
