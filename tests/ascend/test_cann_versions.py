"""CANN version parsing and toolkit detection, and the shared machine-target table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from opsdk import _cross
from opsdk.ascend.socs import CannArgError
from opsdk.ascend.versions import (
    DEFAULT_CANN,
    parse_cann_version,
    read_small_text,
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


#: The files as the CANN 8.1.RC1 toolkit (aarch64) installs them: ``Version=`` of
#: compiler/version.info is the compiler's inner version, the release is ``version_dir=``.
VERSION_INFO_81 = (
    "Version=7.7.0.1.238\nversion_dir=8.1.RC1\ntimestamp=20250428_203017761\n"
    'required_opp_abi_version=">=6.3, <=7.7"\nrequired_package_opp_version="7.7"\n'
)
INSTALL_INFO_81 = (
    "package_name=Ascend-cann-toolkit\nversion=8.1.RC1\ninnerversion=V100R001C21SPC001B238\n"
    "compatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21]\n"
    "arch=aarch64\nos=linux\npath=/usr/local/Ascend/ascend-toolkit/8.1.RC1/aarch64-linux\n"
)


@pytest.mark.parametrize(
    ("files", "release"),
    [
        ({"compiler/version.info": VERSION_INFO_81}, "8.1.RC1"),
        ({"aarch64-linux/ascend_toolkit_install.info": INSTALL_INFO_81}, "8.1.RC1"),
        ({"compiler/version.info": "Version=7.7.0.1.238\n",
          "aarch64-linux/ascend_toolkit_install.info": INSTALL_INFO_81}, "8.1.RC1"),
        ({"version.cfg": "# comment\nversion=[9.0.0]\n"}, "9.0.0"),
    ],
)
def test_toolkit_version_files(tmp_path: Path, files: dict[str, str], release: str) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    r = resolve_cann("auto", env={"ASCEND_HOME_PATH": str(tmp_path)})
    assert r.toolkit == tmp_path and str(r.version) == release
    assert r.version == toolkit_version(tmp_path)
    assert f"the toolkit at {tmp_path} is CANN {release}" == r.reason


def test_inner_version_alone_is_not_the_release(tmp_path: Path) -> None:
    (tmp_path / "compiler").mkdir()
    (tmp_path / "compiler" / "version.info").write_text("Version=7.7.0.1.238\n")
    assert toolkit_version(tmp_path) is None


def test_special_version_files_are_refused_not_read(tmp_path: Path) -> None:
    (tmp_path / "compiler").mkdir()
    info = tmp_path / "compiler" / "version.info"
    os.mkfifo(info)  # opening a FIFO for reading blocks without O_NONBLOCK
    with pytest.raises(CannArgError, match=f"{info} is not a regular file"):
        resolve_cann("auto", env={"ASCEND_HOME_PATH": str(tmp_path)})
    info.unlink()
    if Path("/dev/zero").exists():
        info.symlink_to("/dev/zero")  # endless: reading it whole would eat the memory
        with pytest.raises(CannArgError, match=f"{info} is not a regular file"):
            toolkit_version(tmp_path)
        info.unlink()
    info.write_text("version_dir=8.1.RC1\n" + "#" * (1 << 20))
    with pytest.raises(CannArgError, match=f"{info} is larger than 65536 bytes"):
        toolkit_version(tmp_path)
    assert read_small_text(info, limit=2 << 20).startswith("version_dir=8.1.RC1")


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
