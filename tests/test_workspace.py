"""Where a user's operators live: `opsdk new` outside opsdk's checkout starts an operator
project (operators/ and a pyproject.toml whose wheel depends on opsdk), the registry finds
its operators from anywhere inside it or through OPSDK_OPERATORS_PATH, and inside the
checkout `opsdk new` says the operator joins the shipped set."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from opsdk._toml import read_toml
from opsdk._workspace import find_project, in_checkout, opsdk_checkout, start_project
from opsdk.errors import ScaffoldError

ROOT = Path(__file__).resolve().parents[1]


def opsdk(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    inherited = {k: v for k, v in os.environ.items() if k != "OPSDK_OPERATORS_PATH"}
    full = {**inherited, "PYTHONPATH": str(ROOT), **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "opsdk", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_new_outside_the_checkout_starts_a_project_found_from_inside(tmp_path: Path) -> None:
    work = tmp_path / "acme-ops"
    work.mkdir()
    out = opsdk(work, "new", "MyOp")
    assert f"started an operator project in {work}" in out
    assert (work / "operators" / "my_op" / "spec.py").is_file()
    meta = read_toml(work / "pyproject.toml", ValueError)
    assert meta["project"]["name"] == "acme-ops" and meta["tool"]["opsdk"] == {
        "operators": "operators"}
    assert any(d.startswith("opsdk>=0.1,<0.2") for d in meta["project"]["dependencies"])
    # below the project's top, the next operator joins the same operators/
    deep = work / "operators" / "my_op"
    assert "started" not in opsdk(deep, "new", "OtherOp")
    assert (work / "operators" / "other_op" / "spec.py").is_file()
    assert not (deep / "operators").exists()
    listed = opsdk(deep, "list", "--json")
    assert '"MyOp"' in listed and '"OtherOp"' in listed
    # from elsewhere, OPSDK_OPERATORS_PATH finds them
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert '"MyOp"' not in opsdk(elsewhere, "list", "--json")
    assert '"MyOp"' in opsdk(elsewhere, "list", "--json",
                             env={"OPSDK_OPERATORS_PATH": str(work / "operators")})


def test_a_pyproject_of_another_kind_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    out = opsdk(tmp_path, "new", "MyOp")
    assert "has no [tool.opsdk] table, so it was left as it is" in out
    assert (tmp_path / "pyproject.toml").read_text() == '[project]\nname = "mine"\n'
    assert (tmp_path / "operators" / "my_op" / "spec.py").is_file()
    assert find_project(tmp_path) is None


def test_inside_the_checkout_new_says_the_operator_ships(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from opsdk.cli.cmd_new import _where

    assert opsdk_checkout() == ROOT and in_checkout(ROOT / "tests")
    monkeypatch.chdir(ROOT / "tests")  # nothing is written: only where it would go
    assert _where("MyOp", None) == Path("operators")
    out = capsys.readouterr().out
    assert "is in opsdk's own checkout: MyOp joins the operators opsdk ships" in out
    assert "run opsdk new in a folder outside the checkout" in out
    with pytest.raises(ScaffoldError, match="inside opsdk's checkout"):
        start_project(ROOT / "tests", "MyOp")
    assert find_project(ROOT) is None  # the checkout is no user's project


def test_package_defaults_to_the_projects_operators_name_and_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opsdk.cli.cmd_package import _project_defaults

    assert start_project(tmp_path, "MyOp") == ["pyproject.toml"]
    for op in ("a_op", "b_op"):
        (tmp_path / "operators" / op).mkdir(parents=True)
        (tmp_path / "operators" / op / "spec.py").write_text("")
    monkeypatch.chdir(tmp_path / "operators")
    args = argparse.Namespace(ops=[], name=None, version=None)
    ops, name, version = _project_defaults(args)
    assert [Path(o).name for o in ops] == ["a_op", "b_op"]
    assert (name, version) == (tmp_path.resolve().name, "0.1.0")
    given = argparse.Namespace(ops=["x"], name="n", version="2.0")
    assert _project_defaults(given) == (["x"], "n", "2.0")


def test_package_here_builds_the_projects_wheel_which_depends_on_opsdk(tmp_path: Path) -> None:
    work = tmp_path / "acme-ops"
    work.mkdir()
    opsdk(work, "new", "AcmeClip")
    out = opsdk(work / "operators", "package", "-o", str(work / "dist"), "--platform", "native",
                "--isa-variants", "none", "--no-cann", "--no-onnx")
    [wheel] = (work / "dist").glob("acme_ops-0.1.0-*.whl")
    assert f"built: {wheel}" in out and "com.example::AcmeClip: kernel, spec, reference" in out
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read("acme_ops-0.1.0.dist-info/METADATA").decode()
    assert "Requires-Dist: opsdk<0.2,>=0.1" in meta or "Requires-Dist: opsdk>=0.1,<0.2" in meta
