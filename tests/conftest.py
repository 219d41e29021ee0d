"""Shared fixtures of opsdk's own tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


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
