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


@pytest.fixture(scope="session")
def ort_1232() -> Path | None:
    """The venv of ONNX Runtime 1.23.2, as inside npu_ge (None without it: the checks that
    need it skip with the reason; scripts/setup.d/30-onnxruntime-1.23.2.sh installs it)."""
    from opsdk.errors import DeviceUnavailable
    from opsdk.triton import ensure_ort_env

    try:
        return ensure_ort_env()
    except DeviceUnavailable:
        return None
