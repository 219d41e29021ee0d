"""The host compilers the Ascend C model's tests run under: g++ and clang++.

A test module runs under both with ``pytestmark = pytest.mark.usefixtures("model_cxx")`` and
``from tests._helpers.compilers import model_cxx  # noqa: F401``: the fixture sets ``CXX`` (which
every model build reads) for each test. clang++ is installed by scripts/setup.d/25-clang.sh,
which .ci/run runs; without it the clang++ runs skip with that reason. A test marked
``mutants`` (mutation tests: many builds of one kernel, each refused the same way under both
compilers when this was written: 47 of 47 cube mutants under each) runs under g++ only, unless
``OPSDK_CLANG_MUTANTS=1``; the correct kernels run under both.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from opsdk.ascend.ascendc import find_clang

NO_CLANG = ("clang++ 16 or newer is not installed (scripts/setup.d/25-clang.sh installs Debian's "
            "clang-19; .ci/run runs it)")


def compiler_path(name: str) -> str | None:
    """The path of ``g++`` or of the newest clang++ (versioned Debian names included)."""
    return find_clang() if name == "clang++" else shutil.which(name)


COMPILERS = [pytest.param("g++", id="g++"),
             pytest.param("clang++", id="clang++",
                          marks=pytest.mark.skipif(compiler_path("clang++") is None, reason=NO_CLANG))]


@pytest.fixture(params=COMPILERS)
def model_cxx(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``CXX`` set to g++, then to clang++, for one test."""
    if (request.param == "clang++" and request.node.get_closest_marker("mutants") is not None
            and os.environ.get("OPSDK_CLANG_MUTANTS") != "1"):
        pytest.skip("mutation tests run under g++ in the suite (OPSDK_CLANG_MUTANTS=1: under "
                    "clang++ too)")
    path = compiler_path(request.param)
    if path is None:
        pytest.skip(f"{request.param} is not installed")
    monkeypatch.setenv("CXX", path)
    yield path
