"""The npu executor's symbol loader, against small shared libraries built here.

Each library exports a subset of the names CANN's libraries export; the tests check that
every symbol is bound from the library that exports it, that whatever is missing is named
with the reason, and that ``npu_available`` then says ``npu unavailable: <reason>``. No
function of these libraries is ever called: this is a test of the loader, not of an NPU.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from opsdk.ascend.npu import _acl
from opsdk.ascend.npu._acl import SYMBOLS, find_op_api, load_libraries, op_api_dirs
from opsdk.ascend.npu.executor import NpuOperator, _Acl, npu_available
from opsdk.errors import DeviceUnavailable

CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler to build the test libraries")


def stub_library(path: Path, names: list[str]) -> Path:
    """A shared library exporting ``names`` (never called)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_suffix(".cpp")
    src.write_text("".join(f'extern "C" int {n}() {{ return 0; }}\n' for n in names))
    subprocess.run([str(CXX), "-shared", "-fPIC", str(src), "-o", str(path)], check=True)
    return path


@pytest.fixture
def toolkit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A toolkit root whose lib64/libascendcl.so lacks aclrtCreateStream and whose
    libacl_op_compiler.so and libnnopbase.so do not exist."""
    names = [n for n, s in SYMBOLS.items() if s.library == "ascendcl" and n != "aclrtCreateStream"]
    stub_library(tmp_path / "lib64" / "libascendcl.so", names)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    monkeypatch.setattr(_Acl, "_instance", None)
    monkeypatch.setattr(_Acl, "_failure", None)
    return tmp_path


def test_symbols_bound_from_their_library_missing_ones_named(toolkit: Path) -> None:
    bound = load_libraries(toolkit)
    lib = toolkit / "lib64" / "libascendcl.so"
    fn = bound.functions["aclrtMalloc"]
    assert fn.restype is ctypes.c_int and list(fn.argtypes) == list(SYMBOLS["aclrtMalloc"].argtypes)
    assert bound.aclInit is bound.functions["aclInit"]
    assert bound.missing["aclrtCreateStream"] == f"{lib} does not export it"
    assert bound.missing["aclopCompileAndExecute"].startswith(
        f"libacl_op_compiler.so not found under {toolkit}/lib64")
    assert bound.missing["aclCreateTensor"].startswith("libnnopbase.so not found")
    assert bound.lacking(["aclInit", "aclrtCreateStream"]) == [
        f"aclrtCreateStream: {lib} does not export it"]


def test_each_library_gives_only_its_own_symbols(toolkit: Path) -> None:
    # aclopCompileAndExecute lives in libacl_op_compiler, not libascendcl: a libascendcl
    # that happens to export it must not be where it is bound from.
    stub_library(toolkit / "lib64" / "libascendcl.so",
                 [n for n, s in SYMBOLS.items() if s.library == "ascendcl"] + ["aclopCompileAndExecute"])
    stub_library(toolkit / "lib64" / "libacl_op_compiler.so", ["aclopCompileAndExecute"])
    bound = load_libraries(toolkit)
    assert "aclopCompileAndExecute" in bound.functions and not bound.missing.get("aclInit")
    compiler = ctypes.CDLL(str(toolkit / "lib64" / "libacl_op_compiler.so"))
    got = ctypes.cast(bound.functions["aclopCompileAndExecute"], ctypes.c_void_p).value
    assert got == ctypes.cast(compiler.aclopCompileAndExecute, ctypes.c_void_p).value


def test_a_missing_symbol_is_npu_unavailable_not_a_traceback(toolkit: Path) -> None:
    ok, reason = npu_available()
    lib = toolkit / "lib64" / "libascendcl.so"
    assert not ok and reason == f"the ACL runtime: aclrtCreateStream: {lib} does not export it"
    with pytest.raises(DeviceUnavailable, match=r"^npu unavailable: the ACL runtime: aclrtCreateStream"):
        NpuOperator(_spec())


def test_a_library_that_does_not_load_is_named(toolkit: Path) -> None:
    (toolkit / "lib64" / "libascendcl.so").write_text("not an ELF file")
    ok, reason = npu_available()
    assert not ok and reason.startswith(f"the ACL runtime: aclInit: cannot load {toolkit}/lib64/libascendcl.so")


def _spec():  # type: ignore[no-untyped-def]
    from tests._helpers.specs import thresholded_relu

    return thresholded_relu()


# ------------------------------------------------------------------ vendor op_api search
def op_api(vendor_dir: Path, *names: str) -> Path:
    return stub_library(vendor_dir / "op_api" / "lib" / "libcust_opapi.so", list(names))


def test_op_api_found_in_load_priority_order(tmp_path: Path) -> None:
    vendors = tmp_path / "opp" / "vendors"
    op_api(vendors / "first", "aclnnOtherGetWorkspaceSize", "aclnnOther")
    second = op_api(vendors / "second", "aclnnThresholdedReluGetWorkspaceSize",
                    "aclnnThresholdedRelu")
    op_api(vendors / "third", "aclnnThresholdedReluGetWorkspaceSize", "aclnnThresholdedRelu")
    (vendors / "config.ini").write_text("load_priority=first,second,third\n")
    dirs = op_api_dirs(custom_path="", opp_path=tmp_path / "opp")
    assert dirs == [vendors / "first", vendors / "second", vendors / "third"]
    api, why = find_op_api("ThresholdedRelu", dirs)
    assert api is not None and why == "" and api.path == second
    assert api.get_workspace_size.__name__ == "aclnnThresholdedReluGetWorkspaceSize"


def test_custom_opp_path_comes_first_and_takes_vendor_or_parent_folders(tmp_path: Path) -> None:
    vendor = tmp_path / "installed" / "vendors" / "mine"
    op_api(vendor, "aclnnXGetWorkspaceSize", "aclnnX")
    other = tmp_path / "direct"
    op_api(other, "aclnnXGetWorkspaceSize", "aclnnX")
    opp = tmp_path / "opp"
    op_api(opp / "vendors" / "builtin_like", "aclnnXGetWorkspaceSize", "aclnnX")
    dirs = op_api_dirs(custom_path=f"{other}:{tmp_path / 'installed'}", opp_path=opp)
    assert dirs == [other, vendor, opp / "vendors" / "builtin_like"]
    api, _ = find_op_api("X", dirs)
    assert api is not None and api.path == other / "op_api" / "lib" / "libcust_opapi.so"


def test_op_api_without_the_pair_says_where_it_looked(tmp_path: Path) -> None:
    lib = op_api(tmp_path / "v", "aclnnXGetWorkspaceSize")  # the launch function is missing
    api, why = find_op_api("X", [tmp_path / "v"])
    assert api is None
    assert why == f"no vendor library exports both aclnnXGetWorkspaceSize and aclnnX: {lib} (no aclnnX)"
    api, why = find_op_api("X", [tmp_path / "empty"])
    assert api is None and "no vendor op_api library (libcust_opapi.so)" in why


def test_every_symbol_has_a_known_library() -> None:
    assert {s.library for s in SYMBOLS.values()} == set(_acl.LIBRARY_FILES)


# ------------------------------------------------------------------ aclnn prototypes
def test_aclnn_prototype_follows_inputs_attributes_outputs() -> None:
    from opsdk.ascend.npu.executor import aclnn_prototype
    from opsdk.registry import find_operator

    assert aclnn_prototype(find_operator("GridSample").spec) == (
        "aclnnStatus(const aclTensor*, const aclTensor*, char*, char*, int64_t, "
        "const aclTensor*, uint64_t*, aclOpExecutor**)")
    assert aclnn_prototype(find_operator("FusedConvBnRelu").spec).startswith(
        "aclnnStatus(const aclTensor*, const aclTensor*, const aclTensor*, "
        "const aclIntArray*, const aclIntArray*, const aclIntArray*, int64_t")


def _toolkit_include() -> Path | None:
    home = _acl.cann_home()
    inc = home / "include" if home else None
    return inc if inc is not None and (inc / "aclnn" / "acl_meta.h").is_file() else None


@pytest.mark.skipif(_toolkit_include() is None, reason=(
    "needs an installed CANN toolkit: aclnn/acl_meta.h is not in the torch-npu headers"))
def test_nnopbase_signatures_match_the_toolkit_headers(tmp_path: Path) -> None:
    inc = _toolkit_include()
    lines = ["#include <type_traits>", '#include "aclnn/acl_meta.h"']
    lines += [f'static_assert(std::is_same<decltype({n}), {s.ctype}>::value, "{n}");'
              for n, s in SYMBOLS.items() if s.library == "nnopbase"]
    src = tmp_path / "nnopbase.cpp"
    src.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([str(CXX), "-std=c++17", "-fsyntax-only", f"-I{inc}", str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _installed_aclnn_headers() -> list[tuple[Path, str]]:
    from opsdk.registry import find_operators

    found = []
    for info in find_operators():
        for d in op_api_dirs():
            header = d / "op_api" / "include" / f"aclnn_{info.spec.snake_name}.h"
            if header.is_file():
                found.append((header, info.name))
    return found


@pytest.mark.skipif(not _installed_aclnn_headers(), reason=(
    "needs an operator package built by `opsdk cann --engine aicore` installed on a CANN host"))
def test_aclnn_prototype_matches_the_generated_headers(tmp_path: Path) -> None:
    from opsdk.ascend.npu.executor import aclnn_prototype
    from opsdk.registry import find_operator

    inc = _toolkit_include()
    for header, name in _installed_aclnn_headers():
        ctype = aclnn_prototype(find_operator(name).spec)
        src = tmp_path / f"{name}.cpp"
        src.write_text(f'#include <type_traits>\n#include "{header}"\nstatic_assert(std::is_same<'
                       f'decltype(aclnn{name}GetWorkspaceSize), {ctype}>::value, "{name}");\n')
        cmd = [str(CXX), "-std=c++17", "-fsyntax-only", str(src)] + ([f"-I{inc}"] if inc else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]


def test_cann_op_type_only_for_the_npu() -> None:
    import opsdk
    from opsdk.errors import SpecError

    with pytest.raises(SpecError, match="ThresholdedRelu: cann_op_type names the CANN operator"):
        opsdk.load("ThresholdedRelu", cann_op_type="ThresholdedReluCustom")


def test_unknown_engine_is_refused_before_touching_cann() -> None:
    from opsdk.errors import SpecError

    with pytest.raises(SpecError, match=r"ThresholdedRelu: unknown engine 'fast'; use one of"):
        NpuOperator(_spec(), engine="fast")
