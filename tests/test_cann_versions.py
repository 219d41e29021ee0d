"""CANN version parsing and toolkit detection, and the shared machine-target table."""

from __future__ import annotations

from pathlib import Path

import pytest

from opsdk import _cross
from opsdk.ascend.socs import CannArgError
from opsdk.ascend.versions import (
    DEFAULT_CANN,
    parse_cann_version,
    resolve_cann,
    toolkit_version,
)


@pytest.mark.parametrize(
    ("text", "major", "minor", "layout", "e16005"),
    [
        ("8", 8, 0, "msopgen", True),
        ("8.1.RC1", 8, 1, "msopgen", True),
        ("8.5.0", 8, 5, "msopgen", True),
        ("9", 9, 0, "cmake-modules", True),
        ("9.1.T10", 9, 1, "cmake-modules", True),
        ("9.2", 9, 2, "cmake-modules", False),
        ("10.0", 10, 0, "cmake-modules", False),
    ],
)
def test_parse_and_rules(text: str, major: int, minor: int, layout: str, e16005: bool) -> None:
    v = parse_cann_version(text)
    assert (v.major, v.minor, str(v)) == (major, minor, text)
    assert v.project_layout == layout
    assert v.rejects_mixed_default_domain is e16005


@pytest.mark.parametrize("bad", ["", "latest", "3.0", "abc.1", "8 1"])
def test_bad_versions_are_refused_with_the_forms(bad: str) -> None:
    with pytest.raises(CannArgError, match=r"--cann .* is not a CANN version; use auto"):
        parse_cann_version(bad)


def test_auto_without_toolkit_uses_the_default(tmp_path: Path) -> None:
    r = resolve_cann("auto", env={"ASCEND_HOME_PATH": str(tmp_path / "none")})
    if r.toolkit is not None:
        pytest.skip(f"a CANN toolkit is installed at the default prefix ({r.toolkit})")
    assert str(r.version) == DEFAULT_CANN and "no CANN toolkit found" in r.reason


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("compiler/version.info", "Version=8.1.RC1\nversion_dir=8.1.RC1\n"),
        ("version.cfg", "# comment\nversion=[9.0.0]\n"),
    ],
)
def test_toolkit_version_files(tmp_path: Path, rel: str, text: str) -> None:
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(text)
    r = resolve_cann("auto", env={"ASCEND_HOME_PATH": str(tmp_path)})
    assert r.toolkit == tmp_path
    assert r.version == toolkit_version(tmp_path)
    assert r.version.major in (8, 9) and str(tmp_path) in r.reason


def test_toolkit_without_version_file_says_so(tmp_path: Path) -> None:
    r = resolve_cann("auto", env={"ASCEND_HOME_PATH": str(tmp_path)})
    assert r.toolkit == tmp_path and "does not say its version" in r.reason


def test_cross_targets() -> None:
    a = _cross.target("arm64")
    assert a is _cross.target("aarch64")
    assert a.zig_target == "aarch64-linux-gnu.2.17"
    assert a.sysroot == Path("/usr/aarch64-linux-gnu")
    with pytest.raises(ValueError, match="unknown machine target 'riscv64'; use one of"):
        _cross.target("riscv64")
    assert _cross.qemu_command(_cross.host_target()) == []


@pytest.mark.parametrize("module", ["opsdk._cross", "opsdk.ascend.versions"])
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0
