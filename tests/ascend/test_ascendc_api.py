"""opsdk's Ascend C model computes what the Ascend C documentation says: mask/repeat forms,
strides, Cast round modes, Compare/Select, reductions, strided and padded copies."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc.model import model_include_dir
from opsdk.build import toolchain

KERNEL = Path(__file__).parents[1] / "data" / "ascendc" / "api_kernel.cpp"
DRIVER = """#include "kernel_operator.h"
#include "register/tilingdata_base.h"
namespace optiling {{
BEGIN_TILING_DATA_DEF(ApiTilingData)
    TILING_DATA_FIELD_DEF(uint32_t, mode);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(Api, ApiTilingData)
}}
#include "{kernel}"
#include "opsdk_model_launch.h"
extern "C" int launch(uint8_t** gm, const uint64_t* bytes, const char** names, uint8_t* tiling, char* err) {{
    return opsdk_ascendc::Run("api", [](uint8_t** g, uint8_t* w, uint8_t* t) {{ api(g[0], g[1], g[2], w, t); }},
                              gm, bytes, names, 3, tiling, 1, 196608, "ascend910b", 0, 1, err, 2048);
}}
"""
RNG = np.random.default_rng(0)
X = RNG.uniform(-4, 4, 256).astype(np.float32)
Y = RNG.uniform(-4, 4, 256).astype(np.float32)


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    tmp = tmp_path_factory.mktemp("api")
    (tmp / "driver.cpp").write_text(DRIVER.format(kernel=KERNEL.as_posix()))
    cmd = [toolchain().cxx, "-std=c++17", "-O0", "-shared", "-fPIC", "-pthread",
           f"-I{model_include_dir()}", "driver.cpp", "-o", "k.so"]
    proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return ctypes.CDLL(str(tmp / "k.so"))


def _run(lib: ctypes.CDLL, mode: int) -> np.ndarray:
    out = np.zeros(256, np.float32)
    arrays = [X.copy(), Y.copy(), out]
    gm = (ctypes.c_void_p * 3)(*[a.ctypes.data for a in arrays])
    sizes = (ctypes.c_uint64 * 3)(*[a.nbytes for a in arrays])
    names = (ctypes.c_char_p * 3)(b"x", b"y", b"out")
    tiling = ctypes.create_string_buffer(np.uint32(mode).tobytes() + b"\0" * 12)
    err = ctypes.create_string_buffer(2048)
    assert lib.launch(gm, sizes, names, tiling, err) == 0, err.value.decode()
    return out


def _rounded(v: np.ndarray, how: str) -> np.ndarray:
    """float32 -> float16 with a rounding direction, exactly (via the two neighbours)."""
    near = v.astype(np.float16)
    nf = near.astype(np.float32)
    up = np.where(nf >= v, nf, np.nextafter(near, np.float16(np.inf)).astype(np.float32))
    down = np.where(nf <= v, nf, np.nextafter(near, np.float16(-np.inf)).astype(np.float32))
    if how == "floor":
        return down
    if how == "ceil":
        return up
    if how == "trunc":
        return np.where(v >= 0, down, up)
    if how == "round":
        tie = (v - down) == (up - v)
        return np.where(tie, np.where(v > 0, up, down), np.where(v - down < up - v, down, up))
    return nf


def _expected(mode: int) -> np.ndarray:
    d = np.full(256, -1.0, np.float32)
    if mode == 0:
        d[:128] = X[:128] + Y[:128]
    elif mode == 1:
        d[0:64:2] = X[0:64:2] * Y[0:64:2]
    elif mode == 2:
        for rep in range(2):
            for blk in range(8):
                s = (rep * 16 + blk * 2) * 8
                d[s:s + 8] = X[s:s + 8] * 3
    elif mode == 3:
        for i, how in enumerate(["floor", "ceil", "round", "trunc", "rint"]):
            d[i * 48:(i + 1) * 48] = _rounded(X[i * 48:(i + 1) * 48], how)
    elif mode == 4:
        d = np.where(X > 0.25, X, Y)
    elif mode == 5:
        d[0] = X[:100].sum(dtype=np.float32)
        d[8] = X[:100].max()
    elif mode == 6:
        d[:32] = np.concatenate([X[16 * k:16 * k + 8] for k in range(4)])
    elif mode == 7:
        d[:5] = Y[:5]
        d[5:8] = 7.0
    elif mode == 8:
        d[:200] = np.exp(np.sqrt(np.abs(X[:200])))
    elif mode == 9:
        d[0:4] = X.reshape(4, 64).sum(axis=1, dtype=np.float32)
        d[8:12] = X.reshape(4, 64).max(axis=1)
        d[16:18] = [Y[0:4].min(), Y[64:68].min()]
    return d


@pytest.mark.parametrize("mode", range(10), ids=["mask", "bitmask", "strides", "cast_modes",
                                                 "compare_select", "reduce", "copy_strided",
                                                 "copy_pad", "unary_chain", "whole_reduce"])
def test_api_semantics(lib: ctypes.CDLL, mode: int) -> None:
    np.testing.assert_allclose(_run(lib, mode), _expected(mode), rtol=1e-6, atol=1e-6)
