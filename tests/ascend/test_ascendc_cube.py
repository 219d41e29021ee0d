"""The Cube unit of opsdk's Ascend C model: positions and capacities, the MTE1/M/FIX pipes in
the race checker, DataCopy with Nd2NzParams, LoadData 2D, Mmad and Fixpipe, held to NumPy and
to mutants.

Two matmuls in Huawei's basic-API style, written for these tests (tests/data/ascendc/cube/):
one with hand-written flags (half -> float), one with TQue hand-offs and a K loop (float). Each
passes and matches NumPy; each mutant (a sync removed, a position overflowed by one fractal, a
layout or dtype path swapped, a stale accumulator) must be reported. The counts are printed
(pytest -s) and in docs/ascendc_model.md.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests._helpers.compilers import model_cxx  # noqa: F401
from tests._helpers.cube_mutants import _edit, sync_mutants
from tests.conftest import build_model_kernel

CUBE = Path(__file__).parents[1] / "data" / "ascendc" / "cube"
pytestmark = pytest.mark.usefixtures("model_cxx")  # each test under g++ and under clang++
BLOCKS = 2

DRIVER_HEAD = '#include "kernel_operator.h"\n'
LAUNCH = """extern "C" int launch{k}(uint8_t** gm, const uint64_t* bytes, const char** names, uint32_t blocks, char* err,
                                 const char* costs, const char* trace) {{
    return opsdk_ascendc::Run("cube_kernel", [](uint8_t** g, uint8_t* w, uint8_t* t) {{ {ns}cube_kernel{k}(g[0], g[1], g[2], w, t); }},
                              gm, bytes, names, 3, nullptr, blocks, 196608, "ascend910b", 1, 1, err, 4096, costs, trace);
}}
"""


# the queues kernel's operand types: IN_T -> (OUT_T, NumPy's types for its inputs and output)
DTYPES = {"float": ("float", np.float32, np.float32), "half": ("float", np.float16, np.float32),
          "bfloat16_t": ("float", np.uint16, np.float32), "int8_t": ("int32_t", np.int8, np.int32)}


def _bf16(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values exact in bfloat16: (their bfloat16 bits, their float32 values)."""
    bits = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


def _inputs(name: str, dtype: str = "float") -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(7)
    if name == "matmul_flags.cpp":  # A[64][64] half, B[64][32] half -> C float
        a = rng.uniform(-1, 1, (BLOCKS * 32, 64)).astype(np.float16)
        b = rng.uniform(-1, 1, (64, 32)).astype(np.float16)
        return [a, b], a.astype(np.float32) @ b.astype(np.float32)
    if name == "conv_img2col.cpp":  # X[2][8][8][16] half, W[3][3][16][32] half -> Y[2][64][32] float
        x = rng.uniform(-1, 1, (BLOCKS, 8, 8, 16)).astype(np.float16)
        w = rng.uniform(-1, 1, (3, 3, 16, 32)).astype(np.float16)
        xp = np.pad(x.astype(np.float32), ((0, 0), (1, 1), (1, 1), (0, 0)))
        y = sum(np.einsum("nhwc,co->nhwo", xp[:, kh:kh + 8, kw:kw + 8, :], w[kh, kw].astype(np.float32))
                for kh in range(3) for kw in range(3))
        return [x, np.ascontiguousarray(w.reshape(144, 32))], y.reshape(BLOCKS, 64, 32).astype(np.float32)
    if name == "matmul_pingpong.cpp":  # A[64][32] half, B[32][128] half -> ReLU, half
        a = rng.uniform(-1, 1, (BLOCKS * 32, 32)).astype(np.float16)
        b = rng.uniform(-1, 1, (32, 128)).astype(np.float16)
        return [a, b], np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0).astype(np.float16)
    a, bt = rng.uniform(-1, 1, (BLOCKS * 32, 64)), rng.uniform(-1, 1, (32, 64))  # A, Bt[32][64]
    if dtype == "int8_t":
        a8, b8 = (rng.integers(-128, 128, x.shape).astype(np.int8) for x in (a, bt))
        return [a8, b8], a8.astype(np.int32) @ b8.astype(np.int32).T
    if dtype == "bfloat16_t":
        (abits, av), (bbits, bv) = _bf16(a), _bf16(bt)
        return [abits, bbits], av @ bv.T
    ta = DTYPES[dtype][1]
    return [a.astype(ta), bt.astype(ta)], a.astype(ta).astype(np.float32) @ bt.astype(ta).astype(np.float32).T


def _build(sources: list[str], where: Path) -> Callable[[int], Callable[..., int]]:
    """All ``sources`` in one library (one compile of the model), kernel k as launch{k}."""
    parts = [DRIVER_HEAD]
    for k, source in enumerate(sources):
        where.mkdir(parents=True, exist_ok=True)
        (where / f"m{k}.cpp").write_text(source)
        parts.append(f'#define cube_kernel cube_kernel{k}\nnamespace m{k} {{\n#include "m{k}.cpp"\n}}\n#undef cube_kernel\n')
    parts.append('#include "opsdk_model_launch.h"\n')
    parts += [LAUNCH.format(k=k, ns=f"m{k}::") for k in range(len(sources))]
    lib = build_model_kernel(where, "", "".join(parts).replace(
        '#include "kernel_operator.h"\n', "#define OPSDK_AIC 1\n#include \"kernel_operator.h\"\n", 1))
    return lambda k: getattr(lib, f"launch{k}")


def _run(launch: Any, name: str, costs: bytes | None = None, trace: bytes | None = None,
         dtype: str = "float") -> tuple[int, str, np.ndarray, np.ndarray]:
    ins, expect = _inputs(name, dtype)
    out = np.zeros(expect.shape, expect.dtype)
    arrays = [*ins, out]
    gm = (ctypes.c_void_p * 3)(*[x.ctypes.data for x in arrays])
    sizes = (ctypes.c_uint64 * 3)(*[x.nbytes for x in arrays])
    names = (ctypes.c_char_p * 3)(b"a", b"b", b"c")
    err = ctypes.create_string_buffer(4096)
    launch.restype = ctypes.c_int
    rc = launch(gm, sizes, names, ctypes.c_uint32(BLOCKS), err, costs, trace)
    return rc, err.value.decode(), out, expect


# The flags matmul with unitFlag 3 on its Mmad and Fixpipe instead of the M_FIX flag (as
# asc-devkit's mmad_unitflag sample hands L0C over).
UNIT_FLAG = ("        SetFlag<HardEvent::M_FIX>(EVENT_ID0);\n        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);\n",
             "mmad.cmatrixInitVal = true;", "fix.ndNum = 1;")
UNIT_FLAG_NEW = ("", "mmad.cmatrixInitVal = true;\n        mmad.unitFlag = 3;", "fix.ndNum = 1;\n        fix.unitFlag = 3;")


# kernel -> (description, text, its replacement, what the report must say)
EDITS: dict[str, list[tuple[str, str | tuple[str, ...], str | tuple[str, ...], str]]] = {
    "conv_img2col.cpp": [
        ("no SetFmatrix where the load takes it from there", "        SetFmatrix(H, W, padList, FmatrixMode::FMATRIX_LEFT);\n",
         "", "isSetFMatrix is false and no SetFmatrix described the feature map"),
        ("no SetLoadDataPaddingValue where the load takes it from there",
         "        SetLoadDataPaddingValue<half>(half(0));\n", "",
         "isSetPadding is false and no SetLoadDataPaddingValue set the padding value"),
        ("img2col one k-fractal short: the last k columns of A2 never written", "img2col.kExtension = KK;",
         "img2col.kExtension = KK - 16;", "which nothing wrote"),
        ("no padding: the output window runs past the img2col matrix", "uint8_t padList[PAD_SIZE] = {1, 1, 1, 1};",
         "uint8_t padList[PAD_SIZE] = {0, 0, 0, 0};", "is outside the img2col matrix of 36 x 144"),
        ("the img2col of A2 one fractal past L0A", "pipe.InitBuffer(a2Buf, MM * KK * sizeof(half));",
         "pipe.InitBuffer(a2Buf, OPSDK_L0A_BYTES + 512);", "position A2 asks for 1 x 66048"),
        ("the feature map copied to A1 with Nd2Nz (fractals where img2col reads [H][W][C0])",
         "DataCopy(a1, xGm, H * W * C);",
         "Nd2NzParams fm(1, H * W, C, 0, C, H * W, 1, 0);\n        DataCopy(a1, xGm, fm);",
         "as half ND data, but DataCopy with Nd2NzParams .* wrote half NZ fractals"),
    ],
    "matmul_flags.cpp": [
        ("A copied to A1 without Nd2Nz (ND data where LoadData takes NZ)", "DataCopy(a1, aGm, nd2nz);",
         "DataCopy(a1, aGm, M * K);", r"as half NZ fractals, but DataCopy .* wrote half ND data"),
        ("one LoadData of A short: the last fractal row of A2 never written", "for (uint32_t i = 0; i < M / 16; ++i)",
         "for (uint32_t i = 0; i < M / 16 - 1; ++i)", "which nothing wrote"),
        ("stale accumulator: the only Mmad accumulates onto L0C", "mmad.cmatrixInitVal = true;",
         "mmad.cmatrixInitVal = false;", "which nothing wrote.*cmatrixInitVal = true"),
        ("A2 one fractal past L0A", "pipe.InitBuffer(a2Buf, M * K * sizeof(half));",
         "pipe.InitBuffer(a2Buf, OPSDK_L0A_BYTES + 512);", r"position A2 asks for 1 x 66048 = 66048 bytes of L0A"),
        ("B2 one fractal past L0B", "pipe.InitBuffer(b2Buf, K * N * sizeof(half));",
         "pipe.InitBuffer(b2Buf, OPSDK_L0B_BYTES + 512);", "position B2 asks .* of L0B"),
        ("CO1 one fractal past L0C", "pipe.InitBuffer(c1Buf, M * N * sizeof(float));",
         "pipe.InitBuffer(c1Buf, OPSDK_L0C_BYTES + 512);", "position CO1 asks .* of L0C"),
        ("B1 one fractal past what A1 leaves of L1", "pipe.InitBuffer(b1Buf, K * N * sizeof(half));",
         "pipe.InitBuffer(b1Buf, OPSDK_L1_BYTES - M * K * sizeof(half) + 512);",
         r"holds 524288 bytes \(l1_size .*\) and 4096 are taken: 520192 bytes available"),
        ("Mmad reads B from B1 (L1) instead of B2", "Mmad(c1, a2, b2, mmad);", "Mmad(c1, a2, b1, mmad);",
         "filterLocal is a tensor of position B1"),
        ("unitFlag on the Mmad only: the Fixpipe does not wait for it", UNIT_FLAG, UNIT_FLAG_NEW[:2] + ("fix.ndNum = 1;",),
         r"race on L0C bytes .*Fixpipe .* on pipe FIX reads what Mmad .* on pipe M wrote"),
        ("unitFlag 2 on the last Mmad: the result stays open", UNIT_FLAG,
         ("", "mmad.cmatrixInitVal = true;\n        mmad.unitFlag = 2;", UNIT_FLAG_NEW[2]),
         "wrote with unitFlag 2, which keeps the result open"),
    ],
    "matmul_pingpong.cpp": [
        ("one B2 buffer where two are flagged: the next tile's LoadData overwrites what Mmad reads",
         "LoadData(b2[pp * K * NW + i * 16 * NW], b1[pp * K * NW], load);",
         "LoadData(b2[i * 16 * NW], b1[pp * K * NW], load);",
         r"race on L0B bytes .*LoadData with LoadData2DParams .* on pipe MTE1 overwrites what Mmad .* on pipe M read"),
        ("float to half without quantPre (the wrong Fixpipe dtype path)", "fix.quantPre = QuantMode_t::F322F16;",
         "fix.quantPre = QuantMode_t::NoQuant;", "quantPre 0 from float to half"),
        ("the L0C ping-pong one fractal past L0C", "pipe.InitBuffer(c1Buf, 2 * M * NW * sizeof(float));",
         "pipe.InitBuffer(c1Buf, OPSDK_L0C_BYTES + 512);", "position CO1 asks for 1 x 131584 = 131584 bytes of L0C"),
        ("Fixpipe reads the other ping-pong accumulator", "Fixpipe(cGm[nt * NW], c1[pp * M * NW], fix);",
         "Fixpipe(cGm[nt * NW], c1[(1 - pp) * M * NW], fix);", "which nothing wrote|race on L0C"),
    ],
    "matmul_queues.cpp": [
        ("stale accumulator: the first Mmad of the K loop accumulates", "mmad.cmatrixInitVal = (kt == 0);",
         "mmad.cmatrixInitVal = false;", "which nothing wrote since its buffer was allocated"),
        ("float B moved through a 16-bit transposing load", "LoadData(b2, b1, load);",
         "load.ifTranspose = true;\n        LoadData(b2.ReinterpretCast<half>(), b1.ReinterpretCast<half>(), load);",
         r"as half NZ fractals, but DataCopy with Nd2NzParams .* wrote float NZ fractals"),
        ("float B transposed by LoadData 2D", "LoadData(b2, b1, load);",
         "load.ifTranspose = true;\n        LoadData(b2, b1, load);", "transposes 16 x 16 fractals of 2-byte types only"),
        ("no EnQue/DeQue hand-off on CO1 (M -> FIX)",
         "outQueueCO1.EnQue(c1);\n        c1 = outQueueCO1.DeQue<OUT_T>();\n", "",
         r"race on L0C bytes .*Fixpipe \(m\d+.cpp:\d+\) on pipe FIX reads what Mmad \(m\d+.cpp:\d+\) on pipe M wrote"),
        ("no EnQue/DeQue on A2: Mmad reads a tensor still queued... DeQue dropped",
         "LocalTensor<IN_T> a2 = inQueueA2.DeQue<IN_T>();", "LocalTensor<IN_T> a2 = inQueueA2.AllocTensor<IN_T>();",
         "buffers of the queue are in use|which nothing wrote"),
        ("A2 double buffer one fractal past L0A", "pipe.InitBuffer(inQueueA2, 2, M * KT * sizeof(IN_T));",
         "pipe.InitBuffer(inQueueA2, 2, OPSDK_L0A_BYTES / 2 + 256);",
         r"position A2 asks for 2 x 33024 = 66048 bytes of L0A, but Ascend910B1's L0A holds 65536 bytes"),
        ("B2 freed before the Mmad reads it", "        Mmad(c1, a2, b2, mmad);\n",
         "        inQueueB2.FreeTensor(b2);\n        Mmad(c1, a2, b2, mmad);\n", "used after FreeTensor"),
    ],
}

# kernel -> correct variants that must pass: exactly at capacity is not past it
EXACT: dict[str, list[tuple[str | tuple[str, ...], str | tuple[str, ...]]]] = {
    "matmul_queues.cpp": [("pipe.InitBuffer(inQueueA2, 2, M * KT * sizeof(IN_T));",
                           "pipe.InitBuffer(inQueueA2, 2, OPSDK_L0A_BYTES / 2);")],
    "matmul_flags.cpp": [(UNIT_FLAG, UNIT_FLAG_NEW)],
}

FOUND = r"race on |which no SetFlag set|is never waited for|is set again before|PipeBarrier<PIPE_M>"

# Mutants that leave no race, each with why (the checker must stay silent on them): a flag
# orders every earlier instruction of its source pipe.
BENIGN = {
    ("matmul_pingpong.cpp", "SetFlag<HardEvent::MTE1_M>(EVENT_ID2); and its WaitFlag"):
        "the first B tile's MTE1_M flag, set after A's LoadData on the same MTE1 pipe, orders A2 "
        "before the first Mmad",
}


def _mutants(name: str) -> list[tuple[str, str, str]]:
    source = (CUBE / name).read_text()
    out = [(what, text, FOUND) for what, text in sync_mutants(source)]
    for what, old, new, expect in EDITS[name]:
        out.append((what, _edit(source, old, new), expect))
    return out


@pytest.mark.parametrize("name", sorted(EDITS))
def test_correct_cube_kernel_matches_numpy(name: str, tmp_path: Path) -> None:
    """Each kernel, its exactly-at-capacity variants and (the queues kernel) each dtype
    combination of 220's Mmad: half, bfloat16 and float in float, int8 in int32 (exact)."""
    source = (CUBE / name).read_text()
    variants = [("float", source)] + [("float", _edit(source, old, new)) for old, new in EXACT.get(name, [])]
    if name == "matmul_queues.cpp":
        variants += [(t, f"#define IN_T {t}\n#define OUT_T {DTYPES[t][0]}\n" + source)
                     for t in DTYPES if t != "float"]
    launch = _build([text for _, text in variants], tmp_path)
    for k, (dtype, _) in enumerate(variants):
        rc, err, out, expect = _run(launch(k), name, dtype=dtype)
        assert rc == 0 and err == "", err
        if dtype == "int8_t" or name == "matmul_pingpong.cpp":  # int32 sums; half of the same floats
            np.testing.assert_array_equal(out, expect)
        else:  # float sums of float products, in k order
            np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)


@pytest.mark.mutants
@pytest.mark.parametrize("name", sorted(EDITS))
def test_every_cube_mutant_is_caught(name: str, tmp_path: Path) -> None:
    cases = _mutants(name)
    launch = _build([text for _, text, _ in cases], tmp_path)
    missed, benign = [], 0
    for k, (what, _, expect) in enumerate(cases):
        rc, err, _, _ = _run(launch(k), name)
        if any(n == name and key in what for n, key in BENIGN):
            assert rc == 0 and err == "", f"benign mutant reported: {what}: {err}"
            benign += 1
        elif rc == 0 or not re.search(expect, err):
            missed.append(f"{what}: rc={rc} {err[:400]}")
    print(f"\n{name}: {len(cases) - benign} cube mutants, {len(cases) - benign - len(missed)} caught; "
          f"{benign} benign, not reported")
    assert not missed, "\n".join(missed)
    assert len(cases) >= 8


def test_the_estimate_times_the_cube_pipes_from_the_platform_data(tmp_path: Path) -> None:
    """910B1's rates: Mmad 32x32x64 half is 2 x 2 x 4 m16n16k16 steps (16 cycles), a LoadData
    of 4 fractals to L0A 2048 bytes at l1_to_l0_a_rate 512 (4 cycles), of 2 fractals to L0B
    1024 bytes at l1_to_l0_b_rate 256 (4 cycles), the Fixpipe 4096 bytes at ddr_write_rate 32
    after fixLatency 96 (224 cycles)."""
    from opsdk.ascend.ascendc._estimate import Estimate, costs_for, read_trace

    costs = costs_for("Ascend910B1", core="aic")
    trace = tmp_path / "trace.csv"
    launch = _build([(CUBE / "matmul_flags.cpp").read_text()], tmp_path)
    rc, err, out, expect = _run(launch(0), "matmul_flags.cpp", costs.encoded().encode(),
                                str(trace).encode())
    assert rc == 0, err
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)
    blocks = read_trace(trace)
    est = Estimate("matmul", "Ascend910B1", costs, blocks, BLOCKS, 24)
    took = {(i.pipe, i.api): i.end - i.start for i in blocks[0] if i.end > i.start}
    assert took[("M", "Mmad")] == 16
    assert {t for (p, api), t in took.items() if api.startswith("LoadData")} == {4}
    assert took[("FIX", "Fixpipe")] == 96 + 32 * 32 * 4 / 32
    assert est.pipes == ("MTE2", "V", "MTE3", "S", "MTE1", "M", "FIX")
    assert est.busy()["M"] == 16 and est.bound in ("MTE2-bound", "FIX-bound")
    assert "M " in est.format() and est.costs.sources["mte1aBpc"].startswith("l1_to_l0_a_rate")
    assert costs.pipes["mte2Bpc"] == 32 and costs.freq_mhz == 1850  # the AI Core's own ddr_rate


MACROS = r"""
#include "kernel_operator.h"
#if !defined(__NPU_ARCH__) || __NPU_ARCH__ != EXPECT_NPU_ARCH || __CCE_AICORE__ != EXPECT_AICORE
#error "__NPU_ARCH__ / __CCE_AICORE__"
#endif
#if (EXPECT_AICORE == 220 && !defined(__DAV_C220__)) || (EXPECT_AICORE == 200 && !defined(__DAV_M200__)) || \
    (EXPECT_AICORE == 300 && !defined(__DAV_M300__))
#error "the family macro of CPU-debug's build"
#endif
#if EXPECT_AICORE == 220 && defined(OPSDK_AIC) && (!defined(__DAV_C220_CUBE__) || defined(__DAV_C220_VEC__))
#error "a Cube core's build defines __DAV_C220_CUBE__ only"
#endif
#if EXPECT_AICORE == 220 && !defined(OPSDK_AIC) && (!defined(__DAV_C220_VEC__) || defined(__DAV_C220_CUBE__))
#error "a vector core's build defines __DAV_C220_VEC__ only"
#endif
extern "C" int soc_l0c() { return ASCEND_IS_AIC ? int(opsdk_ascendc::kCubeBytes[4]) : -int(opsdk_ascendc::kCubeBytes[4]); }
"""


@pytest.mark.parametrize("soc,npu_arch,aic", [("Ascend910B3", 2201, True), ("Ascend910B3", 2201, False),
                                                ("Ascend310P3", 2002, False), ("Ascend310B1", 3002, False)])
def test_predefined_macros_are_the_compilers(soc: str, npu_arch: int, aic: bool, tmp_path: Path) -> None:
    """__NPU_ARCH__, __CCE_AICORE__ and __DAV_C220_CUBE__/__DAV_C220_VEC__ per SoC and core type,
    and the SoC's Cube buffers from data/socs.json, as the model's build passes them."""
    import subprocess

    from opsdk.ascend.ascendc.model import _arch_macros, model_include_dir
    from opsdk.ascend.socs import soc_facts
    from opsdk.build import toolchain

    macros = _arch_macros(soc)
    arch = next(m for m in macros if m.startswith("-D__CCE_AICORE__=")).split("=")[1]
    (tmp_path / "m.cpp").write_text(MACROS)
    cmd = [toolchain().cxx, "-std=c++17", "-shared", "-fPIC", f"-I{model_include_dir()}", *macros,
           f"-DEXPECT_NPU_ARCH={npu_arch}", f"-DEXPECT_AICORE={arch}", *(["-DOPSDK_AIC"] if aic else []),
           "m.cpp", "-o", "m.so"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    l0c = ctypes.CDLL(str(tmp_path / "m.so")).soc_l0c()
    assert l0c == (1 if aic else -1) * soc_facts(soc)["l0c_bytes"]
    assert f'-DOPSDK_SOC_VERSION="{soc}"' in macros


RAW = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void cube_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR w, GM_ADDR t) {
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    pipe.InitBuffer(a1Buf, 4096);
    LocalTensor<half> a1 = a1Buf.Get<half>();
    a1.SetSize(@SIZE@);
    LocalTensor<float> c1(TPosition::CO1, @ADDR@, 256);
    if (c1.GetPosition() != TPosition::CO1) a1.SetSize(1u << 30);
}
"""


@pytest.mark.parametrize("size,addr,error", [
    ("1024", "0", ""),
    ("OPSDK_L1_BYTES / 2 + 16", "0", "524320 bytes from L1 byte 0 run past its 524288 bytes"),
    ("1024", "OPSDK_L0C_BYTES - 512", "runs past the L0C's 131072 bytes"),
])
def test_cube_tensors_are_bounded_by_their_own_memory(size: str, addr: str, error: str, tmp_path: Path) -> None:
    """SetSize on an L1 tensor and a LocalTensor made from an L0C address are bounded by L1's
    and L0C's bytes, not the Unified Buffer's."""
    launch = _build([RAW.replace("@SIZE@", size).replace("@ADDR@", addr)], tmp_path)
    x = np.zeros(8, np.float32)
    gm = (ctypes.c_void_p * 3)(*[x.ctypes.data] * 3)
    sizes = (ctypes.c_uint64 * 3)(32, 32, 32)
    names = (ctypes.c_char_p * 3)(b"a", b"b", b"c")
    err = ctypes.create_string_buffer(4096)
    fn = launch(0)
    fn.restype = ctypes.c_int
    rc = fn(gm, sizes, names, ctypes.c_uint32(1), err, None, None)
    assert (rc, error in err.value.decode()) == ((1, True) if error else (0, True)), err.value.decode()
