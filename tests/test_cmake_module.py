"""cmake/OpsdkOperator.cmake in a user's own CMake project: opsdk_add_operator() builds a
kernel module opsdk loads (as a prebuilt kernel next to spec.py), installs it, and stops
with a clear message on a wrong folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.package import cmake_dir
from opsdk.registry import find_operator
from opsdk.runtime import Operator, load_module

REPO = Path(__file__).resolve().parent.parent
EXT = sysconfig.get_config_var("EXT_SUFFIX")

PROJECT = """\
cmake_minimum_required(VERSION 3.18)
project(user_kernels LANGUAGES CXX)
list(APPEND CMAKE_MODULE_PATH "{cmake_dir}")
include(OpsdkOperator)
{calls}
"""


def cmake(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))
    env.pop("CMAKE_ARGS", None)
    return subprocess.run(["cmake", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True)


def configure(project: Path, calls: str) -> subprocess.CompletedProcess[str]:
    (project / "CMakeLists.txt").write_text(
        PROJECT.format(cmake_dir=cmake_dir().as_posix(), calls=calls))
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    return cmake("-S", project, "-B", project / "build", *gen, "-DCMAKE_BUILD_TYPE=Release",
                 f"-DPython_EXECUTABLE={sys.executable}", cwd=project)


@pytest.mark.slow
def test_opsdk_add_operator_builds_a_module_opsdk_loads(tmp_path, monkeypatch):
    op_dir = tmp_path / "ops" / "thresholded_relu"
    shutil.copytree(REPO / "operators" / "thresholded_relu", op_dir,
                    ignore=shutil.ignore_patterns("__pycache__"))
    proc = configure(tmp_path, """
opsdk_add_operator(trelu FOLDER ops/thresholded_relu
                   OUTPUT_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/ops/thresholded_relu"
                   INSTALL_DESTINATION lib/thresholded_relu)
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = cmake("--build", tmp_path / "build", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    module = op_dir / f"_opsdk_kernels{EXT}"
    assert module.is_file()

    spec = find_operator(str(op_dir)).spec
    op = Operator(spec, load_module(module), op_dir)  # checks the C++ registrations vs spec
    x = np.linspace(-2, 2, 33, dtype=np.float32)
    np.testing.assert_array_equal(op(x, alpha=0.5), spec.reference(x, alpha=0.5))

    # Next to spec.py the module is a prebuilt kernel: opsdk.load uses it, compiles nothing.
    cache = tmp_path / "empty-cache"
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(cache))
    assert find_operator(str(op_dir)).prebuilt == module
    loaded = opsdk.load(str(op_dir))
    np.testing.assert_array_equal(loaded(x.astype(np.float16)), spec.reference(x.astype(np.float16)))
    assert not cache.exists()

    proc = cmake("--install", tmp_path / "build", "--prefix", tmp_path / "prefix", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "prefix" / "lib" / "thresholded_relu" / module.name).is_file()


@pytest.fixture(scope="module")
def error_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project for the failing configures: CMake keeps the compiler and Python it found
    in the cache, so only the first configure pays for finding them."""
    return tmp_path_factory.mktemp("cmake-errors")


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ("opsdk_add_operator(bad FOLDER nowhere)",
         r"opsdk_add_operator\(bad\): \S*/nowhere is not an operator folder \(no spec.py\); "
         r"create one with `opsdk new`"),
        ("opsdk_add_operator(bad)", r"opsdk_add_operator\(bad\): no C\+\+ sources; give FOLDER"),
        ("opsdk_add_operator(bad FOLDRE ops/x)",
         r"opsdk_add_operator\(bad\): unknown arguments FOLDRE;ops/x"),
        ("opsdk_add_operator(bad SOURCES k.cpp ISA_VARIANTS avx9)",
         r"opsdk: ISA_VARIANTS avx9: known variants are x86-64-v3 and x86-64-v4"),
        ("opsdk_add_operator(bad SOURCES k.cpp ENTRY_OBJECTS ${CMAKE_CURRENT_LIST_FILE} "
         "ISA_VARIANTS x86-64-v3)",
         r"opsdk_add_operator\(bad\): ISA_VARIANTS and ENTRY_OBJECTS exclude each other"),
    ],
)
def test_mistakes_stop_the_configure_with_a_clear_message(error_project, calls, message):
    proc = configure(error_project, calls)
    assert proc.returncode != 0
    flowed = " ".join(proc.stderr.split())  # CMake wraps its messages
    assert re.search(message, flowed), proc.stderr
