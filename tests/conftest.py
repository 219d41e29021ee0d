"""Shared fixtures of opsdk's own tests."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


def build_model_kernel(where: Path, kernel: str, driver: str, opt: str = "-O0") -> ctypes.CDLL:
    """Write ``kernel.cpp`` and ``driver.cpp`` into ``where`` and build them against opsdk's
    Ascend C model (the driver includes kernel.cpp and opsdk_model_launch.h)."""
    from opsdk.ascend.ascendc.model import model_include_dir
    from opsdk.build import toolchain

    where.mkdir(parents=True, exist_ok=True)
    (where / "kernel.cpp").write_text(kernel)
    (where / "driver.cpp").write_text(driver)
    lib = where / "k.so"
    cmd = [toolchain().cxx, "-std=c++17", opt, "-shared", "-fPIC", "-pthread",
           f"-I{model_include_dir()}", f"-I{where}", "driver.cpp", "-o", str(lib)]
    proc = subprocess.run(cmd, cwd=where, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return ctypes.CDLL(str(lib))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def probe():
    """The test-only Probe operator (tests/data/probe), built once per session."""
    import opsdk

    return opsdk.load(str(DATA / "probe"))


@pytest.fixture
def setuptools_keeps_stdlib_distutils(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.compile's inductor probes the CPU's vector ISA through setuptools, whose
    distutils shim asserted in the full suite (the standard library's distutils.core was
    already loaded there); on Pythons that still have distutils the shim is told to keep it."""
    if sys.version_info < (3, 12):
        monkeypatch.setenv("SETUPTOOLS_USE_DISTUTILS", "stdlib")


def _ort_1232() -> tuple[Path | None, str]:
    from opsdk.errors import DeviceUnavailable
    from opsdk.triton import ensure_ort_env

    try:
        return ensure_ort_env(), ""
    except DeviceUnavailable as e:
        return None, str(e)


@pytest.fixture(scope="session")
def ort_1232_if_any() -> Path | None:
    """The venv of ONNX Runtime 1.23.2, as inside npu_ge, or None without it
    (scripts/setup.d/30-onnxruntime-1.23.2.sh installs it)."""
    return _ort_1232()[0]


@pytest.fixture(scope="session")
def ort_1232() -> Path:
    """That venv; the test skips with the reason without it."""
    path, why = _ort_1232()
    if path is None:
        pytest.skip(why)
    return path
