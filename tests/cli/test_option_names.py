"""Options that name an input, a dim or a value of the model are refused when they name
nothing in it, naming what there is (they used to be ignored, and the command ran on what
the user did not ask for)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from opsdk.cli import main
from tests._helpers.triton_models import mlp_model


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("m") / "mlp.onnx"
    onnx.save(mlp_model(), str(path))  # inputs x [batch,16] and z [batch,8]
    return path


@pytest.fixture(scope="module")
def repo(mlp: Path) -> Path:
    out = mlp.parent / "repo"
    assert main(["triton", "build", str(mlp), "-o", str(out), "--name", "m"]) == 0
    assert main(["triton", "build", str(mlp), "-o", str(out), "--name", "ge",
                 "--target", "ascend"]) == 0
    return out


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    for w in words:
        assert w in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_triton_bench_shape_of_an_input_the_model_lacks(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before tritonserver starts (the report used to run on the config's shapes and
    exit 0)."""
    _fails(capsys, ["triton", "bench", str(repo), "--model", "m", "--shape", "images=16"],
           "--shape images=16 names no input of the model; its inputs are 'x', 'z'")


def test_triton_bench_input_file_for_an_input_the_model_lacks(
        repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "a.npy", np.zeros((1, 16), np.float32))
    _fails(capsys, ["triton", "bench", str(repo), "--model", "m", "--input",
                    f"images={tmp_path / 'a.npy'}"],
           "--input images=FILE names no input of the model; its inputs are 'x', 'z'")
    _fails(capsys, ["triton", "bench", str(repo), "--model", "m", "--input",
                    f"x={tmp_path / 'a.npy'}", "--shape", "x=16"],
           "input 'x' is given by --input and by --shape", "drop --shape x")


@pytest.mark.parametrize("option, words", [
    ("--probe-values=sr=16000", "--probe-values sr=... names no input of the model; its inputs "
                                "are x, z"),
    ("--probe-dims=seq=64", "--probe-dims seq=... names no variable input dim of the model; "
                            "its dim names are batch"),
])
def test_triton_build_probe_names_the_model_lacks(
        mlp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str,
        words: str) -> None:
    _fails(capsys, ["triton", "build", str(mlp), "-o", str(tmp_path / "r"), "--name", "m",
                    "--target", "ascend", option], words)
    assert not (tmp_path / "r" / "m").exists()


@pytest.mark.parametrize("option, words", [
    (["--dim", "seq=64"], "--dim seq=64 names no symbolic input dim of the model; its dim "
                          "names are batch"),
    (["--probe-values", "sr=16000"], "--probe-values sr=16000 names no input of the model; "
                                     "its inputs are x, z"),
])
def test_triton_check_names_the_model_lacks(
        repo: Path, capsys: pytest.CaptureFixture[str], option: list[str], words: str) -> None:
    _fails(capsys, ["triton", "check", str(repo / "ge"), *option], words)
