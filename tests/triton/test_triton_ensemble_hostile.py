"""`opsdk triton check` on ensembles broken after they were written: a step asking for a
version that is not there, a step that is the ensemble itself, a config that is not text.
Each is a problem (or a one-line error) naming the step and the fix, never a pass or a
traceback."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from opsdk.cli import main
from opsdk.triton import build_pipeline, check_ensemble, load_pipeline
from tests._helpers.pipelines import build_cpu_repo, write_pipeline


@pytest.fixture(scope="module")
def cpu_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_cpu_repo(tmp_path_factory)


def _edit(repo: Path, old: str, new: str) -> None:
    cfg = repo / "scaled_mlp" / "config.pbtxt"
    text = cfg.read_text()
    assert old in text
    cfg.write_text(text.replace(old, new))


BROKEN = {
    "missing version": ('model_name: "top"\n      model_version: -1',
                        'model_name: "top"\n      model_version: 9',
                        r"step 'top' asks for version 9, but .*top holds versions 1; set "
                        r"model_version: -1"),
    "runs itself": ('model_name: "top"', 'model_name: "scaled_mlp"',
                    r"step 'scaled_mlp' is the ensemble itself; Triton refuses"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_ensemble_is_a_problem_naming_the_step(
        case: str, cpu_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new, message = BROKEN[case]
    repo = tmp_path / "repo"
    shutil.copytree(cpu_repo, repo, symlinks=True)
    _edit(repo, old, new)
    problems = check_ensemble(repo / "scaled_mlp").problems
    assert any(re.search(message, p) for p in problems), problems
    assert main(["triton", "check", str(repo / "scaled_mlp")]) == 1
    assert re.search(message, capsys.readouterr().out)


def test_a_step_without_a_version_folder_is_named(cpu_repo: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(cpu_repo, repo, symlinks=True)
    shutil.rmtree(repo / "top" / "1")
    problems = check_ensemble(repo / "scaled_mlp").problems
    assert any("step 'top' asks for any version, but" in p and "no version folder" in p
               for p in problems), problems


def test_a_binary_config_is_a_one_line_error(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.pbtxt").write_bytes(b"\x00\xff\xfe binary")
    assert main(["triton", "check", str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err
    assert "is not an npu_ge model folder" in err and "Traceback" not in err, err


def test_a_pipeline_that_does_not_wire_up_leaves_nothing_written(tmp_path: Path) -> None:
    """A step that feeds only some of its model's inputs fails the wiring check of the
    written ensemble; what this build wrote is removed again (and the -o folder it made)."""
    pipeline = write_pipeline(tmp_path / "pipeline")
    text = pipeline.read_text()
    assert 'inputs = { x = "x", z = "z" }' in text
    pipeline.write_text(text.replace('inputs = { x = "x", z = "z" }', 'inputs = { x = "x" }'))
    repo = tmp_path / "out" / "repo"
    with pytest.raises(Exception, match=r"(?s)mlp.*\bz\b"):
        build_pipeline(load_pipeline(pipeline), repo, operators_path=())
    assert not repo.exists(), sorted(p.name for p in repo.iterdir())
    assert main(["triton", "pipeline", str(pipeline), "-o", str(repo)]) == 1  # the CLI too
    assert not repo.exists(), sorted(p.name for p in repo.iterdir())
    keep = tmp_path / "kept"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    with pytest.raises(Exception, match=r"(?s)mlp.*\bz\b"):
        build_pipeline(load_pipeline(pipeline), keep, operators_path=())
    assert sorted(p.name for p in keep.iterdir()) == ["notes.txt"]
