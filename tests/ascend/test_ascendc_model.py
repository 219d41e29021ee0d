"""opsdk's CPU model of the Ascend C API: a correct kernel runs, and a kernel broken in one
documented way fails with the kernel, API, argument and limit named (one case per class)."""

from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc.model import model_include_dir
from opsdk.build import toolchain
from tests._helpers.compilers import model_cxx  # noqa: F401

KERNEL = Path(__file__).parents[1] / "data" / "ascendc" / "scale_kernel.cpp"
pytestmark = pytest.mark.usefixtures("model_cxx")  # each test under g++ and under clang++
TILING = """#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(ScaleTilingData)
    TILING_DATA_FIELD_DEF(uint64_t, perBlock);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(Scale, ScaleTilingData)
}
"""
DRIVER = """#include "kernel_operator.h"
#include "scale_tiling.h"
#include "{kernel}"
#include "opsdk_model_launch.h"
extern "C" int launch(uint8_t** gm, const uint64_t* bytes, const char** names, uint8_t* tiling,
                      uint32_t blocks, uint64_t seed, int threads, char* err) {{
    return opsdk_ascendc::Run("scale", [](uint8_t** g, uint8_t* w, uint8_t* t) {{ scale(g[0], g[1], w, t); }},
                              gm, bytes, names, 2, tiling, blocks, 196608, "ascend910b", seed, threads, err, 2048);
}}
"""


def _build(tmp: Path, macros: list[str]) -> tuple[ctypes.CDLL | None, str]:
    (tmp / "scale_tiling.h").write_text(TILING)
    (tmp / "driver.cpp").write_text(DRIVER.format(kernel=KERNEL.as_posix()))
    lib = tmp / "k.so"
    cmd = [toolchain().cxx, "-std=c++17", "-O0", "-shared", "-fPIC", "-pthread",
           f"-I{model_include_dir()}", f"-I{tmp}", "-DDTYPE_X=float", *macros,
           "driver.cpp", "-o", str(lib)]
    proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
    return (ctypes.CDLL(str(lib)) if proc.returncode == 0 else None), proc.stderr


def _run(lib: ctypes.CDLL, blocks: int = 4, per: int = 64, threads: int = 1,
         seed: int = 1) -> tuple[int, str, np.ndarray]:
    x = np.arange(blocks * per, dtype=np.float32)
    y = np.zeros_like(x)
    gm = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    sizes = (ctypes.c_uint64 * 2)(x.nbytes, y.nbytes)
    names = (ctypes.c_char_p * 2)(b"x", b"y")
    tiling = ctypes.create_string_buffer(np.uint64(per).tobytes() + b"\0" * 8)
    err = ctypes.create_string_buffer(2048)
    lib.launch.restype = ctypes.c_int
    rc = lib.launch(gm, sizes, names, tiling, ctypes.c_uint32(blocks), ctypes.c_uint64(seed),
                    ctypes.c_int(threads), err)
    return rc, err.value.decode(), y


def test_correct_kernel_runs_in_any_block_order(tmp_path: Path) -> None:
    lib, stderr = _build(tmp_path, [])
    assert lib is not None, stderr
    for seed, threads in ((1, 1), (7, 1), (3, 2)):
        rc, err, y = _run(lib, seed=seed, threads=threads)
        assert rc == 0, err
        np.testing.assert_array_equal(y, np.arange(256, dtype=np.float32) * 2)


# (macro, text the error must contain): one broken kernel per constraint class.
RUNTIME_BREAKS = [
    ("COPY_ALIGN", r"DataCopy: calCount is 63 float elements = 252 bytes; it must be a multiple of 32"),
    ("LOCAL_ALIGN", r"Muls: argument srcLocal starts at Unified Buffer byte 12, which is not 32-byte aligned"),
    ("UB_CAPACITY", r"TPipe::InitBuffer: a buffer of 204800 bytes does not fit: .* 196608 bytes \(ascend910b\)"),
    ("QUEUE_DEPTH", r"TQue::EnQue: the queue already holds 1 tensors, its depth .* is 1"),
    ("ALLOC_EXHAUSTED", r"TQue::AllocTensor: all 2 buffers of the queue are in use .*FreeTensor"),
    ("BUFFER_COUNT", r"TPipe::InitBuffer: num is 17; a queue takes 1 .* at most 16"),
    ("REDUCE_ORDER", r"WholeReduceMax: order other than ReduceOrder::ORDER_ONLY_VALUE .* not modelled"),
    ("DEQUE_EMPTY", r"TQue::DeQue: the queue is empty: DeQue without a matching EnQue"),
    ("USE_AFTER_FREE", r"Muls: argument srcLocal is used after FreeTensor"),
    ("MASK", r"Muls: mask is 300; for float a continuous mask is 1 to 64 elements"),
    ("REPEAT", r"Muls: argument srcLocal: accesses elements \[\d+, \d+\) of a LocalTensor<float> of 64"),
    ("COMPARE_COUNT", r"CompareScalar: calCount is 40 float elements = 160 bytes; it must be a multiple of 256"),
    ("BLOCK_RANGE", r"(writes|reads) byte \d+ of GM argument '(x|y)'.*|out of bounds"),
]


@pytest.mark.parametrize("macro,message", RUNTIME_BREAKS, ids=[m for m, _ in RUNTIME_BREAKS])
def test_broken_kernel_fails_naming_the_constraint(tmp_path: Path, macro: str, message: str) -> None:
    lib, stderr = _build(tmp_path, [f"-DOPSDK_BREAK_{macro}"])
    assert lib is not None, stderr
    rc, err, _ = _run(lib)
    assert rc == 1
    assert err.startswith("scale (block ")
    assert pytest.importorskip("re").search(message, err), err


def test_unsupported_dtype_is_a_compile_error(tmp_path: Path) -> None:
    lib, stderr = _build(tmp_path, ["-DOPSDK_BREAK_DTYPE"])
    assert lib is None
    assert "Exp supports half, float only" in stderr


def test_unmodelled_api_is_a_compile_error(tmp_path: Path) -> None:
    src = tmp_path / "k.cpp"
    src.write_text('#include "kernel_operator.h"\nusing namespace AscendC;\n'
                   "void f(LocalTensor<float> a) { Sinh(a, a, 64); }\n")
    proc = subprocess.run([toolchain().cxx, "-std=c++17", "-fsyntax-only",
                           f"-I{model_include_dir()}", str(src)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "Sinh" in proc.stderr


def test_blocks_writing_the_same_values_is_a_warning_with_the_bytes(tmp_path: Path) -> None:
    lib, stderr = _build(tmp_path, ["-DOPSDK_TAIL_SAME"])
    assert lib is not None, stderr
    for seed in (1, 2, 3):
        rc, err, y = _run(lib, seed=seed)
        assert rc == 0
        assert re.search(r"scale: 12 GM bytes are written by two blocks with the same value, first byte \d+ of "
                         r"GM argument 'y' \(blocks \d and \d, by (GlobalTensor::SetValue|DataCopy)\)", err), err
        np.testing.assert_array_equal(y, np.arange(256, dtype=np.float32) * 2)


def test_block_dim_above_the_launch_limit_fails(tmp_path: Path) -> None:
    lib, stderr = _build(tmp_path, [])
    assert lib is not None, stderr
    rc, err, _ = _run(lib, blocks=65536, per=8)
    assert rc == 1 and "launched with blockDim 65536; the launch takes at most 65535 blocks" in err, err
