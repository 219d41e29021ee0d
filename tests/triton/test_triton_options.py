"""`opsdk triton build` refuses at build time what the server could not parse or what would
contradict opsdk's own parameters (issue 23 item 14)."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import onnx.helper as oh
import pytest

from opsdk.cli import main
from tests._helpers.triton_models import mlp_model

TR = str(Path(__file__).resolve().parents[2] / "operators" / "thresholded_relu")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    return path


@pytest.mark.parametrize(("args", "message"), [
    (["--max-batch-size", "99999999999"],
     "argument --max-batch-size: 99999999999 is above 2147483647 (a Triton max_batch_size)"),
    (["--max-queue-delay-us", str(10**21)],
     f"argument --max-queue-delay-us: {10**21} is above 18446744073709551615 (Triton's uint64 "
     "max_queue_delay_microseconds)"),
    (["--instances", str(2**31)], "argument --instances: 2147483648 is above 2147483647"),
    (["--parameter", "onnx_model=other.onnx"],
     "--parameter onnx_model=...: opsdk writes the parameter 'onnx_model' itself"),
    (["--parameter", "threads=4"], "opsdk writes the parameter 'threads' itself"),
])
def test_unparseable_or_duplicate_values_are_refused(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
    message: str,
) -> None:
    """Item 14: values outside Triton's int32/uint64 fields (refused by the option's type,
    exit 2) and keys opsdk writes."""
    repo = tmp_path / "repo"
    try:
        rc = main(["triton", "build", str(model), "-o", str(repo), "--name", "m", *args])
    except SystemExit as e:
        rc = e.code  # type: ignore[assignment]
    assert rc == (2 if message.startswith("argument") else 1)
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (repo / "m").exists()


def test_huge_version_in_an_op_project_names_the_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 14: a manifest key with a huge opset is an error naming the file, not a bare
    ValueError ("Value out of range")."""
    prj = tmp_path / "prj"
    assert main(["cann", TR, "-o", str(prj), "--cann", "8", "--engine", "aicpu"]) == 0
    record = prj / ".opsdk-manifest.json"
    data = json.loads(record.read_text())
    huge = ["com.opsdk::99999999999999999999999999::ThresholdedRelu"]
    data["origin_op_types"] = data["ops"][0]["origin_op_types"] = huge
    record.write_text(json.dumps(data))
    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 4])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n", 4])
    node = oh.make_node("ThresholdedRelu", ["x"], ["y"], domain="com.opsdk", alpha=0.5)
    m = oh.make_model(oh.make_graph([node], "g", [x], [y]),
                      opset_imports=[oh.make_opsetid("", 17), oh.make_opsetid("com.opsdk", 1)])
    m.ir_version = 9
    onnx.save(m, str(tmp_path / "t.onnx"))
    capsys.readouterr()
    argv = ["triton", "build", str(tmp_path / "t.onnx"), "-o", str(tmp_path / "repo"), "--name",
            "m", "--target", "ascend", "--op-project", str(prj)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"--op-project {prj}: {record}: key 'com.opsdk::99999999999999999999999999::" in err
    assert "Value out of range" not in err and "Traceback" not in err


def test_empty_strings_are_not_taken_as_not_given(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 14: --precision-mode-v2 '' and `opsdk cann --op-type ''` are errors."""
    argv = ["triton", "build", str(model), "-o", str(tmp_path / "r"), "--name", "m", "--target",
            "ascend", "--cann", "8.1.RC1", "--precision-mode-v2", ""]
    assert main(argv) == 1
    assert "--precision-mode-v2 '' is not a GE mode" in capsys.readouterr().err
    argv = ["cann", TR, "-o", str(tmp_path / "p"), "--cann", "8", "--engine", "aicpu",
            "--op-type", ""]
    assert main(argv) == 1
    assert "--op-type '' is not a CANN operator type" in capsys.readouterr().err
    assert not (tmp_path / "p").exists()
