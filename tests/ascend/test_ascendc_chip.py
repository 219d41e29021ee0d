"""The Ascend C model behaves like the chip where the real implementation headers of CANN
8.1.RC1 go beyond the API documentation: Select's scratch at TMP_UB_OFFSET, the tmp-buffer
stack of Erf/Erfc/Tanh, the truncating scalar ToBfloat16, the algorithms of Tanh/Erf/Erfc,
unsupported Cast modes, per-SoC API availability, and the less common APIs."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc.model import _arch_macros, model_include_dir
from opsdk.build import toolchain

KERNEL = Path(__file__).parents[1] / "data" / "ascendc" / "chip_kernel.cpp"
DRIVER = """#include "kernel_operator.h"
#include "register/tilingdata_base.h"
namespace optiling {{
BEGIN_TILING_DATA_DEF(ChipTilingData)
    TILING_DATA_FIELD_DEF(uint32_t, mode);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(Chip, ChipTilingData)
}}
#include "{kernel}"
#include "opsdk_model_launch.h"
extern "C" int launch(uint8_t** gm, const uint64_t* bytes, const char** names, uint8_t* tiling, char* err) {{
    return opsdk_ascendc::Run("chip", [](uint8_t** g, uint8_t* w, uint8_t* t) {{ chip(g[0], g[1], w, t); }},
                              gm, bytes, names, 2, tiling, 1, 196608, "Ascend910B1", 0, 1, err, 2048);
}}
"""
X = np.random.default_rng(1).uniform(-3, 3, 256).astype(np.float32)


def _compile(folder: Path, macros: list[str]) -> subprocess.CompletedProcess[str]:
    (folder / "driver.cpp").write_text(DRIVER.format(kernel=KERNEL.as_posix()))
    cmd = [toolchain().cxx, "-std=c++17", "-O0", "-shared", "-fPIC", "-pthread",
           f"-I{model_include_dir()}", *macros, "driver.cpp", "-o", "k.so"]
    return subprocess.run(cmd, cwd=folder, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    tmp = tmp_path_factory.mktemp("chip")
    proc = _compile(tmp, _arch_macros("Ascend910B1"))
    assert proc.returncode == 0, proc.stderr
    return ctypes.CDLL(str(tmp / "k.so"))


def _run(lib: ctypes.CDLL, mode: int, x: np.ndarray = X) -> tuple[np.ndarray, str]:
    out = np.zeros(256, np.float32)
    arrays = [x.astype(np.float32).copy(), out]
    gm = (ctypes.c_void_p * 2)(*[a.ctypes.data for a in arrays])
    sizes = (ctypes.c_uint64 * 2)(*[a.nbytes for a in arrays])
    names = (ctypes.c_char_p * 2)(b"x", b"y")
    tiling = ctypes.create_string_buffer(np.uint32(mode).tobytes() + b"\0" * 12)
    err = ctypes.create_string_buffer(2048)
    rc = lib.launch(gm, sizes, names, tiling, err)
    return out, err.value.decode() if rc else ""


def test_select_over_its_scratch_region_fails_with_the_reason(lib: ctypes.CDLL) -> None:
    _, err = _run(lib, 0)
    assert "Select" in err and "TMP_UB_OFFSET = 188416" in err and "__CCE_AICORE__ = 220" in err
    out, err = _run(lib, 7)  # the same Select with the buffers below TMP_UB_OFFSET
    assert not err
    np.testing.assert_array_equal(out, np.where(X > 0, X, 0))


def test_erf_without_tmp_space_fails_with_the_reason(lib: ctypes.CDLL) -> None:
    _, err = _run(lib, 1)
    assert "Erf" in err and "256 bytes of tmp space" in err and "at least 384 bytes" in err
    assert "sharedTmpBuffer" in err


def _erf_chip(x: float) -> float:
    f = np.float32
    c = f(min(max(x, -3.92), 3.92))
    x2 = c * c
    p = x2 * f(0.053443748819) + f(0.75517016694e1)
    for k in (0.10162808918e3, 0.13938061484e4, 0.50637915060e4, 0.29639384698e5):
        p = x2 * p + f(k)
    q = x2 + f(0.31212858877e2)
    for k in (0.39856963806e3, 0.30231248150e4, 0.13243365831e5, 0.26267224157e5):
        q = x2 * q + f(k)
    return float(c * p / q)


def test_erf_follows_the_real_algorithm(lib: ctypes.CDLL) -> None:
    out, err = _run(lib, 2)
    assert not err
    np.testing.assert_allclose(out, [_erf_chip(v) for v in X], rtol=2e-7, atol=1e-7)


def test_scalar_tobfloat16_truncates(lib: ctypes.CDLL) -> None:
    x = np.full(256, 1.005859375, np.float32)  # 3/4 of the way to the next bfloat16
    x[1] = -1.005859375
    out, err = _run(lib, 3, x)
    assert not err
    assert out[0] == 1.0 and out[1] == -1.0  # round-to-nearest would give 1.0078125


def test_cast_float_to_bfloat16_with_cast_none_is_an_error(lib: ctypes.CDLL) -> None:
    _, err = _run(lib, 4)
    assert "CAST_NONE for float -> bfloat16_t" in err and "CAST_RINT" in err


def test_tanh_is_the_chips_formula_near_zero(lib: ctypes.CDLL) -> None:
    x = np.full(256, 1e-5, np.float32)
    out, err = _run(lib, 5, x)
    assert not err
    e = np.exp(np.float32(2e-5))
    assert out[0] == (e - np.float32(1)) / (e + np.float32(1))
    assert abs(out[0] / np.tanh(1e-5) - 1) > 1e-4  # its relative error near 0, as on the chip


def test_less_common_apis(lib: ctypes.CDLL) -> None:
    out, err = _run(lib, 6)
    assert not err
    want = np.zeros(256, np.float32)
    want[0:64], want[128:192] = X[0:64], X[128:192]
    want[1] = 7.0
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("soc, api", [("Ascend310B1", "Erf"), ("Ascend910A", "CompareScalar")])
def test_an_api_the_soc_lacks_does_not_compile(tmp_path: Path, soc: str, api: str) -> None:
    proc = _compile(tmp_path, _arch_macros(soc))
    assert proc.returncode != 0
    assert f"{api} is not in the Ascend C of this SoC family" in proc.stderr
