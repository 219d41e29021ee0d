"""Issue 33 item 4: the commands that write user files go through opsdk/_written.py.

For each command, at its output path: a symlink is refused (its target untouched, --force
or not), an existing file without --force is refused naming the fix, and with --force it is
replaced and recorded in the folder's .opsdk-outputs.json.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk._written import OUTPUT_RECORD, sha256
from opsdk.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _conv_bn_relu(path: Path) -> Path:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w", (4, 3, 3, 3)), ("sc", (4,)), ("bi", (4,)), ("mu", (4,)))]
    inits.append(numpy_helper.from_array(np.ones(4, np.float32), "var"))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "sc", "bi", "mu", "var"], ["b"]),
             helper.make_node("Relu", ["b"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT,
                                                                     [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [1, 4, 8, 8])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _export(tmp_path: Path) -> Callable[[Path, bool], int]:
    def run(out: Path, force: bool) -> int:
        return main(["export", "ThresholdedRelu", "--shape", "x=2,3", "-o", str(out)]
                    + (["--force"] if force else []))
    return run


def _rewrite(tmp_path: Path) -> Callable[[Path, bool], int]:
    src = _conv_bn_relu(tmp_path / "src.onnx")

    def run(out: Path, force: bool) -> int:
        return main(["rewrite", str(src), "--fuse", "conv-bn-relu", "--force-fuse", "-o",
                     str(out)] + (["--force"] if force else []))
    return run


COMMANDS = {"export": _export, "rewrite": _rewrite}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_symlink_at_the_output_is_refused_and_its_target_untouched(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = COMMANDS[command](tmp_path)
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "out" / "m.onnx"
    link.parent.mkdir()
    link.symlink_to(target)
    for force in (False, True):
        assert run(link, force) == 1
        err = capsys.readouterr().err
        assert f"{link} is a symlink (to {target}); opsdk never writes through a symlink" in err
        assert "remove the link or choose another -o" in err
        assert target.read_text() == "keep me" and link.is_symlink()
    assert not (link.parent / OUTPUT_RECORD).exists()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_existing_file_needs_force_then_is_replaced_and_recorded(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = COMMANDS[command](tmp_path)
    out = tmp_path / "out" / "m.onnx"
    out.parent.mkdir()
    out.write_text("the user's file")
    assert run(out, False) == 1
    err = capsys.readouterr().err
    assert f"{out} exists; pass --force (force=True) to replace it, or choose another -o" in err
    assert out.read_text() == "the user's file"
    assert run(out, True) == 0
    data = out.read_bytes()
    onnx.checker.check_model(onnx.load_from_string(data))
    record = json.loads((out.parent / OUTPUT_RECORD).read_text())
    assert record["files"] == {"m.onnx": sha256(data)}
    assert record["generator"] == "opsdk"


def test_new_refuses_a_symlinked_operator_folder(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`opsdk new` never writes through a symlink where the operator folder goes (a
    dangling one included: the rename would replace the link, not fill its target)."""
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "link_op").symlink_to(elsewhere)
    assert main(["new", "LinkOp", "--dir", str(tmp_path / "ops")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'ops' / 'link_op'} is a symlink (to {elsewhere})" in err
    assert not elsewhere.exists() and os.path.islink(tmp_path / "ops" / "link_op")


def _wheel(path: Path, body: bytes) -> Path:
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pkg/__init__.py", body)
    return path


def test_package_publishes_its_wheel_through_the_writer(tmp_path: Path) -> None:
    """`opsdk package` moves the built wheel into --out-dir: a symlink there is refused
    (target untouched, even with --force), a different wheel needs --force, and the
    published wheel is recorded."""
    from opsdk._written import UnsafePath
    from opsdk.errors import BuildError
    from opsdk.package._package import _publish

    name = "ops-1.0-py3-none-any.whl"
    built = _wheel(tmp_path / "build" / name, b"new = 1\n")
    out = tmp_path / "dist"
    out.mkdir()
    target = _wheel(tmp_path / "precious.whl", b"keep = 1\n")
    (out / name).symlink_to(target)
    for force in (False, True):
        with pytest.raises(UnsafePath, match=r"is a symlink .* choose another --out-dir"):
            _publish(built, out, force)
    assert b"keep" in target.read_bytes()
    (out / name).unlink()
    _wheel(out / name, b"old = 1\n")
    with pytest.raises(BuildError, match="pass --force to replace it"):
        _publish(built, out, False)
    assert _publish(built, out, True) == (out / name, False)
    assert (out / name).read_bytes() == built.read_bytes()
    record = json.loads((out / OUTPUT_RECORD).read_text())
    assert record["files"] == {name: sha256(built.read_bytes())}


def _opsdk_test(report: Path) -> Any:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "opsdk", "test", "ThresholdedRelu", "--report",
                           str(report), "-k", "float32-odd", "-q", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_opsdk_test_report_goes_through_the_writer(tmp_path: Path) -> None:
    """`opsdk test --report` (no --force): a symlink or a file opsdk did not write is refused
    before the run, naming the fix; its own report of an earlier run is replaced."""
    target = tmp_path / "precious.json"
    target.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    p = _opsdk_test(link)
    assert p.returncode != 0 and f"{link} is a symlink (to {target})" in p.stderr, p.stderr
    assert target.read_text() == "keep me"
    p = _opsdk_test(target)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert (f"{target} exists and opsdk did not write it (or it changed since, see "
            f"{tmp_path / OUTPUT_RECORD}); remove it yourself or choose another --report"
            in p.stderr), p.stderr
    assert target.read_text() == "keep me"


def test_a_report_replaces_only_the_report_opsdk_wrote(tmp_path: Path) -> None:
    from opsdk.testing import Report

    path = tmp_path / "r.json"
    Report(title="first").write(path)
    Report(title="second").write(path)  # its own, unchanged: replaced without --force
    assert json.loads(path.read_text())["title"] == "second"
    assert json.loads((tmp_path / OUTPUT_RECORD).read_text())["files"] == {
        "r.json": sha256(path.read_bytes())}
    path.write_text(path.read_text() + " ")  # the user edited it: kept
    with pytest.raises(FileExistsError, match="opsdk did not write it .or it changed since"):
        Report(title="third").write(path)


def test_package_keep_project_refuses_a_symlink(tmp_path: Path) -> None:
    """`opsdk package --keep-project DIR` copies the project there: never through a symlink,
    dangling or not."""
    from opsdk._written import UnsafePath
    from opsdk.package._project import copy_tree

    src = tmp_path / "project"
    (src / "src").mkdir(parents=True)
    (src / "src" / "a.cpp").write_text("int a;\n")
    for target in (tmp_path / "elsewhere", tmp_path / "missing"):
        link = tmp_path / f"keep-{target.name}"
        if target.name == "elsewhere":
            target.mkdir()
        link.symlink_to(target)
        with pytest.raises(UnsafePath, match=r"--keep-project .* is a symlink"):
            copy_tree(src, link)
        assert not (target / "src").exists()
    copy_tree(src, tmp_path / "kept")
    assert (tmp_path / "kept" / "src" / "a.cpp").read_text() == "int a;\n"
