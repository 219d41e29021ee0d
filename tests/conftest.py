"""Shared fixtures of opsdk's own tests."""

from __future__ import annotations

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
