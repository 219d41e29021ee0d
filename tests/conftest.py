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
