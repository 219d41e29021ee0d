"""Hostile pipeline descriptions for `opsdk triton pipeline` (issue 33, item 5): each is
refused with an error naming the pipeline, the step and the fix, never a traceback or a
file system's error. (Cycles, missing tensors, duplicate or reserved names, empty step
lists and missing models are already in test_triton_pipeline.py's table or refused by
the same checks; these are the ones the probe round found unclear.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomllib

from opsdk.cli import main
from opsdk.triton import PipelineError, pipeline_from_dict
from tests._helpers.pipelines import PIPELINE_TOML, write_pipeline


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_pipeline(tmp_path_factory.mktemp("pipeline")).parent


def _data(**steps: Any) -> dict[str, Any]:
    """The test pipeline with step fields changed: ``{index: {key: value}}`` as s0=..."""
    data = tomllib.loads(PIPELINE_TOML % {"extra": "", "top_input": "y"})
    for key, change in steps.items():
        data["steps"][int(key[1:])].update(change)
    return data


HOSTILE = {
    "model path is a folder": (_data(s1={"onnx": "."}),
                               r"step 'mlp': ONNX model .* is a folder, not an \.onnx file; "
                               r"give the path of its \.onnx file"),
    "name longer than a folder name": (_data(s2={"name": "t" * 300}),
                                       r"step name 'tttttttttttttttttttttttt'\.\.\. has 300 "
                                       r"characters, a model folder's name at most 255; give "
                                       r"it a shorter name"),
    "two steps write one tensor": (_data(s1={"outputs": {"y": "x"}}),
                                   r"step 'mlp': output 'y' writes tensor 'x', which step "
                                   r"'scale' already produces; name it differently"),
    "a step writes a pipeline input": (_data(s0={"outputs": {"z": {"dtype": "float32",
                                                                   "dims": [16]}}}),
                                       r"step 'scale': output 'z' writes tensor 'z', which "
                                       r"the pipeline's inputs already produce; name it"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_description_is_refused_with_the_fix(case: str, folder: Path) -> None:
    data, message = HOSTILE[case]
    with pytest.raises(PipelineError, match=message):
        pipeline_from_dict(data, folder, source="pipeline.toml")


def test_the_cli_names_the_long_step_not_the_file_system(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = folder / "pipeline.toml"
    long = tmp_path / "long.toml"
    long.write_text(toml.read_text().replace('name = "top"', f'name = "{"t" * 300}"'))
    (tmp_path / "steps.py").write_text((folder / "steps.py").read_text())
    (tmp_path / "mlp.onnx").write_bytes((folder / "mlp.onnx").read_bytes())
    assert main(["triton", "pipeline", str(long), "-o", str(tmp_path / "repo")]) == 1
    err = capsys.readouterr().err
    assert "has 300 characters, a model folder's name at most 255" in err, err
    assert "File name too long" not in err
    assert not (tmp_path / "repo").exists()


def test_a_latin1_steps_file_is_refused_naming_the_file_and_byte(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Latin-1 steps.py (a comment with 'é') was a bare UnicodeDecodeError, no file."""
    for name in ("pipeline.toml", "mlp.onnx"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    text = "# caf\xe9: written in Latin-1\n" + (folder / "steps.py").read_text()
    (tmp_path / "steps.py").write_bytes(text.encode("latin-1"))
    assert main(["triton", "pipeline", str(tmp_path / "pipeline.toml"), "-o",
                 str(tmp_path / "repo")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("opsdk triton pipeline: error: ") and err.count("\n") == 1, err
    assert f"step file {tmp_path / 'steps.py'}: byte 5 (0xe9) is not UTF-8 (invalid " \
           "continuation byte); save the file as UTF-8" in err
    assert "UnicodeDecodeError" not in err and not (tmp_path / "repo").exists()
