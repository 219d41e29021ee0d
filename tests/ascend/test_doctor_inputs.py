"""The doctor on initializers without data and on --input-shape against the model
(issue 23 item 12)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from opsdk.ascend.atc.doctor import diagnose
from opsdk.cli import main
from opsdk.errors import SpecError
from opsdk.triton import AscendOptions, RepositoryOptions, TritonConfigError, build_repository
from tests._helpers.doctor_models import build, x_input


def _empty_initializer_model(path: Path) -> Path:
    w = numpy_helper.from_array(np.ones((4,), np.float32), "w")
    w.ClearField("raw_data")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    m = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                                            [x], [y], [w]),
                          opset_imports=[helper.make_opsetid("", 15)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def test_initializer_without_data_is_a_finding(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Item 12: ONNX's checker rejects the model; the doctor no longer says no problems."""
    path = _empty_initializer_model(tmp_path / "m.onnx")
    with pytest.raises(onnx.checker.ValidationError, match="one and only one value field"):
        onnx.checker.check_model(onnx.load(str(path)))
    findings = diagnose(str(path))
    assert [f.code for f in findings] == ["invalid-model"]
    assert "initializer 'w' (shape [4]) has no data: 4 values expected" in findings[0].reason
    assert main(["doctor", str(path)]) == 1
    assert "no problems" not in capsys.readouterr().out


@pytest.mark.parametrize("target", ["ascend", "cpu"])
def test_triton_build_names_the_empty_initializer(tmp_path: Path, target: str) -> None:
    """Item 12: `triton build --target ascend` gives a clear error, not a raw ValueError."""
    path = _empty_initializer_model(tmp_path / "m.onnx")
    with pytest.raises(TritonConfigError, match=rf"{path}: initializer 'w' \(shape \[4\]\) has "
                                                r"no data.*re-export it"):
        build_repository(path, tmp_path / "repo", RepositoryOptions(
            "m", target=target, max_batch_size=0, operators_path=(),
            ascend=AscendOptions(cann="8.1.RC1")))
    assert not (tmp_path / "repo" / "m").exists()


def test_input_shape_rank_and_fixed_dims_are_checked(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Item 12: wrong rank or a dim contradicting a fixed one is an error naming the input,
    what the model has and what was given."""
    path = tmp_path / "m.onnx"
    onnx.save(build([helper.make_node("Relu", ["x"], ["y"])], [x_input(("N", 3))]), str(path))
    with pytest.raises(SpecError, match=r"--input-shape x=1,3,8: input 'x' has 2 dims \[N,3\] in "
                                        r"the model, the shape gives 3.*--input-shape x=1,3"):
        diagnose(str(path), input_shapes={"x": (1, 3, 8)})
    assert main(["doctor", str(path), "--input-shape", "x=1,4"]) == 1
    err = capsys.readouterr().err
    assert "--input-shape x=1,4: input 'x' dim 1 is fixed to 3 in the model [N,3], the shape " \
           "gives 4" in err and "Traceback" not in err
    assert main(["doctor", str(path), "--input-shape", "x=7,3"]) == 0
