"""Files opsdk writes and deletes stay inside the folder it was given (issue 23 items 1, 4, 6):
one writer (opsdk/_written.py) for Triton model folders, CANN projects and wheel projects."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from opsdk._written import (
    UnsafePath,
    check_relative,
    read_record,
    remove_file,
    walk_files,
    write_file,
)
from opsdk.cli import main
from opsdk.triton import RepositoryOptions, build_repository
from tests._helpers.triton_models import mlp_model


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(src))
    folder = build_repository(src, tmp_path / "repo", RepositoryOptions("m", operators_path=()))
    return src, folder


@pytest.mark.parametrize("listed", ["ABS", "../outside.txt", "1/../../outside.txt"])
def test_triton_force_refuses_a_record_path_outside_the_folder(
    repo: tuple[Path, Path], tmp_path: Path, listed: str
) -> None:
    """Item 1: an absolute or '..' path in .opsdk-files.json is refused, naming it, and the
    file it names is not deleted."""
    src, folder = repo
    victim = tmp_path / "outside.txt"
    victim.write_text("keep me")
    listed = str(victim) if listed == "ABS" else listed
    record = folder / ".opsdk-files.json"
    data = json.loads(record.read_text())
    files = data["files"]
    if isinstance(files, dict):
        files[listed] = None
    else:
        files.append(listed)
    record.write_text(json.dumps(data))
    with pytest.raises(UnsafePath, match=r"is not a path inside the folder") as e:
        build_repository(src, tmp_path / "repo", RepositoryOptions("m", operators_path=()),
                         force=True)
    assert repr(listed) in str(e.value) and str(record) in str(e.value)
    assert victim.read_text() == "keep me"
    assert (folder / "config.pbtxt").is_file()  # nothing of the folder deleted either


def test_triton_force_never_follows_a_symlinked_version_folder(
    repo: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 1: with 1/ a symlink to another folder, --force deletes nothing there."""
    src, folder = repo
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("model.onnx", "model.py"):
        (elsewhere / name).write_text("theirs")
        (folder / "1" / name).unlink()
    (folder / "1").rmdir()
    (folder / "1").symlink_to(elsewhere)
    argv = ["triton", "build", str(src), "-o", str(tmp_path / "repo"), "--name", "m", "--force"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{folder / '1'} is a symlink" in err and "Traceback" not in err
    assert sorted(p.read_text() for p in elsewhere.iterdir()) == ["theirs", "theirs"]


def test_triton_force_never_deletes_through_a_symlinked_file(
    repo: tuple[Path, Path], tmp_path: Path
) -> None:
    """Item 1: a listed file that became a symlink is refused, its target kept."""
    src, folder = repo
    victim = tmp_path / "precious.py"
    victim.write_text("mine")
    (folder / "1" / "model.py").unlink()
    (folder / "1" / "model.py").symlink_to(victim)
    with pytest.raises(UnsafePath, match="is a symlink"):
        build_repository(src, tmp_path / "repo", RepositoryOptions("m", operators_path=()),
                         force=True)
    assert victim.read_text() == "mine"


def test_helpers_refuse_paths_out_of_the_folder(tmp_path: Path) -> None:
    """The one writer: no absolute/'..' path, no write, delete or walk through a symlink."""
    for bad in ("/etc/passwd", "../x", "a/../../x", "", "a\\..\\x"):
        with pytest.raises(UnsafePath, match="not a path inside the folder"):
            check_relative(bad, "test")
    root = tmp_path / "root"
    out = tmp_path / "out"
    out.mkdir()
    root.mkdir()
    (root / "d").symlink_to(out, target_is_directory=True)
    with pytest.raises(UnsafePath, match="is a symlink"):
        write_file(root, "d/new.txt", "x")
    (out / "f.txt").write_text("theirs")
    (root / "f.txt").symlink_to(out / "f.txt")
    with pytest.raises(UnsafePath, match="is a symlink"):
        write_file(root, "f.txt", "x")
    with pytest.raises(UnsafePath, match="is a symlink"):
        remove_file(root, "f.txt")
    with pytest.raises(UnsafePath, match="is a symlink"):
        list(walk_files(root))
    assert list(out.iterdir()) == [out / "f.txt"] and (out / "f.txt").read_text() == "theirs"
    (root / ".rec.json").write_text(json.dumps({"files": {"/abs": "0"}}))
    with pytest.raises(UnsafePath, match=r"\.rec\.json: '/abs' is not a path inside"):
        read_record(root, ".rec.json")


TR = str(Path(__file__).resolve().parents[1] / "operators" / "thresholded_relu")


def _cann(out: Path, *extra: str) -> list[str]:
    return ["cann", TR, "-o", str(out), "--cann", "8", "--engine", "aicpu", "--force", *extra]


def test_cann_force_never_writes_through_a_symlinked_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 6: a symlinked folder inside -o is refused (named); nothing is created outside."""
    out = tmp_path / "prj"
    assert main(_cann(out)) == 0
    capsys.readouterr()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = out / "framework"
    moved.rename(tmp_path / "framework_was")
    moved.symlink_to(elsewhere, target_is_directory=True)
    assert main(_cann(out)) == 1
    err = capsys.readouterr().err
    assert f"{moved} is a symlink" in err and "Traceback" not in err
    assert list(elsewhere.iterdir()) == []


def test_cann_force_never_overwrites_a_symlinked_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 6: a generated file replaced by a symlink is refused; its target is untouched."""
    out = tmp_path / "prj"
    assert main(_cann(out)) == 0
    capsys.readouterr()
    victim = tmp_path / "victim.sh"
    victim.write_text("mine\n")
    (out / "build.sh").unlink()
    (out / "build.sh").symlink_to(victim)
    assert main(_cann(out)) == 1
    assert f"{out / 'build.sh'} is a symlink" in capsys.readouterr().err
    assert victim.read_text() == "mine\n"
    # and a manifest listing a path outside -o is refused, naming it
    (out / "build.sh").unlink()
    record = out / ".opsdk-manifest.json"
    data = json.loads(record.read_text())
    data["files"]["../victim.sh"] = data["files"]["build.sh"]
    record.write_text(json.dumps(data))
    assert main(_cann(out)) == 1
    assert "'../victim.sh' is not a path inside the folder" in capsys.readouterr().err
    assert victim.read_text() == "mine\n"
