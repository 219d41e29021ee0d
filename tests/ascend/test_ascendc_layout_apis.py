"""Vector basics of CANN 8.1 in opsdk's Ascend C model, against NumPy: Brcb, Transpose (16x16 and
NCHW <-> NHWC), TransDataTo5HD, Sort32/MrgSort, GlobalTensor::SetL2CacheHint, DivCeil, the
software SyncAll(GlobalTensor, LocalTensor), DataCopyPad's DataCopyParams forms and TPipe::Destroy
followed by a second TPipe. Misuse fails naming the API and the fix.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from tests.conftest import build_model_kernel

DRIVER = """#include "kernel_operator.h"
using namespace AscendC;
#include "kernel.cpp"
#include "opsdk_model_launch.h"
extern "C" int launch(uint8_t** gm, const uint64_t* bytes, uint32_t blocks, int threads, char* err) {
    const char* names[2] = {"x", "y"};
    uint8_t tiling[8] = {};
    return opsdk_ascendc::Run("layout", [](uint8_t** g, uint8_t*, uint8_t*) { k(g[0], g[1]); },
                              gm, bytes, names, 2, tiling, blocks, 196608, "ascend910b", 1, threads, err, 4096);
}
"""

SYNC = "SetFlag<HardEvent::{0}>(EVENT_ID0); WaitFlag<HardEvent::{0}>(EVENT_ID0);"
IN = SYNC.format("MTE2_V")
OUT = SYNC.format("V_MTE3")


def _launch(tmp_path: Path, body: str, x: np.ndarray, y_bytes: int, blocks: int = 1,
            threads: int = 1) -> tuple[int, str, bytes]:
    lib = build_model_kernel(tmp_path, f'extern "C" void k(GM_ADDR x, GM_ADDR y) {{\n{body}\n}}\n', DRIVER)
    x = np.ascontiguousarray(x)
    y = np.zeros(y_bytes, np.uint8)
    gm = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    sizes = (ctypes.c_uint64 * 2)(x.nbytes, y.nbytes)
    err = ctypes.create_string_buffer(4096)
    rc = lib.launch(gm, sizes, ctypes.c_uint32(blocks), ctypes.c_int(threads), err)
    return rc, err.value.decode(), y.tobytes()


def _ok(tmp_path: Path, body: str, x: np.ndarray, y_bytes: int, blocks: int = 1, threads: int = 1) -> bytes:
    rc, err, y = _launch(tmp_path, body, x, y_bytes, blocks, threads)
    assert rc == 0, err
    return y


def _fails(tmp_path: Path, body: str, x: np.ndarray, y_bytes: int = 4096, blocks: int = 1) -> str:
    rc, err, _ = _launch(tmp_path, body, x, y_bytes, blocks)
    assert rc == 1, "the kernel ran, expected a failure"
    return err


def _copy_in(t: str, n: int, extra: str = "") -> str:
    return f"""
  GlobalTensor<{t}> xg; xg.SetGlobalBuffer((__gm__ {t}*)x, {n});
  GlobalTensor<{t}> yg; yg.SetGlobalBuffer((__gm__ {t}*)y);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 65536);
  LocalTensor<{t}> s = b.Get<{t}>({n});
  LocalTensor<{t}> d = b.GetWithOffset<{t}>(16384 / sizeof({t}), 16384);
  {extra}
  DataCopy(s, xg, {n});
  {IN}
"""


# ------------------------------------------------------------------------------ Brcb
BRCB = _copy_in("float", 16) + """
  Brcb(d, s, 2, {2, 16});   // 2 repeats of 8 elements; blocks 2 apart, repeats 16 blocks apart
""" + OUT + "  DataCopy(yg, d, 256);"


def test_brcb_broadcasts_each_element_to_a_block(tmp_path: Path) -> None:
    x = np.arange(16, dtype=np.float32) + 1
    y = np.frombuffer(_ok(tmp_path, BRCB, x, 1024), np.float32).reshape(32, 8)
    rows = [r * 16 + j * 2 for r in range(2) for j in range(8)]
    np.testing.assert_array_equal(y[rows], np.repeat(x[:, None], 8, axis=1))
    assert np.isnan(y[1]).all()  # the blocks between are not written (the Unified Buffer's poison)


def test_brcb_refuses_zero_repeats(tmp_path: Path) -> None:
    err = _fails(tmp_path, _copy_in("float", 16) + "  Brcb(d, s, 0, {1, 8});", np.zeros(16, np.float32))
    assert "Brcb: repeatTimes is 0; expected 1 to 255" in err, err


# ------------------------------------------------------------------------------ Transpose
TRANSPOSE16 = _copy_in("half", 256) + "  Transpose(d, s);\n" + OUT + "  DataCopy(yg, d, 256);"


def test_transpose_16x16(tmp_path: Path) -> None:
    x = np.arange(256, dtype=np.float16)
    y = np.frombuffer(_ok(tmp_path, TRANSPOSE16, x, 512), np.float16).reshape(16, 16)
    np.testing.assert_array_equal(y, x.reshape(16, 16).T)


def _transpose4d(kind: str, tmp_bytes: int) -> str:
    return _copy_in("float", 2 * 3 * 16, "LocalTensor<uint8_t> t = b.GetWithOffset<uint8_t>(" +
                    f"{tmp_bytes}, 32768);") + f"""
  Transpose(d, s, t, TransposeParamsExt(2, 3, 4, 4, TransposeType::{kind}));
""" + OUT + "  DataCopy(yg, d, 96);"


def test_transpose_nchw_to_nhwc_and_back(tmp_path: Path) -> None:
    x = np.arange(96, dtype=np.float32)
    y = np.frombuffer(_ok(tmp_path / "a", _transpose4d("TRANSPOSE_NCHW2NHWC", 2560), x, 384), np.float32)
    np.testing.assert_array_equal(y, x.reshape(2, 3, 4, 4).transpose(0, 2, 3, 1).ravel())
    nhwc = x.reshape(2, 4, 4, 3)
    y = np.frombuffer(_ok(tmp_path / "b", _transpose4d("TRANSPOSE_NHWC2NCHW", 3584), x, 384), np.float32)
    np.testing.assert_array_equal(y, nhwc.transpose(0, 3, 1, 2).ravel())


def test_transpose_refuses_a_small_tmp_buffer(tmp_path: Path) -> None:
    err = _fails(tmp_path, _transpose4d("TRANSPOSE_NCHW2NHWC", 512), np.zeros(96, np.float32))
    assert "Transpose: sharedTmpBuffer holds 512 bytes; this transpose (cSize 3, float) needs 2560" in err, err


# ------------------------------------------------------------------------------ TransDataTo5HD
def _five_hd(t: str, form: str) -> str:
    lists = f"""
  LocalTensor<{t}> dl[16], sl[16];
  for (int i = 0; i < 16; ++i) {{ sl[i] = s[i * (32 / sizeof({t}))]; dl[i] = d[i * (32 / sizeof({t}))]; }}
"""
    if form == "tensors":
        call = f"TransDataTo5HD<{t}>(dl, sl, TransDataTo5HDParams(false, false, 1, 0, 0));"
    else:
        call = f"""uint64_t da[16], sa[16];
  for (int i = 0; i < 16; ++i) {{ da[i] = (uint64_t)dl[i].GetPhyAddr(); sa[i] = (uint64_t)sl[i].GetPhyAddr(); }}
  TransDataTo5HD<{t}>(da, sa, TransDataTo5HDParams(false, false, 1, 0, 0));"""
    n = 512 // np.dtype(np.float16 if t == "half" else np.float32).itemsize
    return _copy_in(t, n) + lists + "  " + call + "\n" + OUT + f"  DataCopy(yg, d, {n});"


def test_trans_data_to_5hd_16_and_32_bit(tmp_path: Path) -> None:
    h = np.arange(256, dtype=np.float16)
    y = np.frombuffer(_ok(tmp_path / "h", _five_hd("half", "tensors"), h, 512), np.float16)
    np.testing.assert_array_equal(y.reshape(16, 16), h.reshape(16, 16).T)
    f = np.arange(128, dtype=np.float32)
    y = np.frombuffer(_ok(tmp_path / "f", _five_hd("float", "addresses"), f, 512), np.float32)
    # the 16x8 matrix of the source blocks, transposed: row e is destination blocks 2e and 2e + 1
    np.testing.assert_array_equal(y.reshape(8, 16), f.reshape(16, 8).T)


# ------------------------------------------------------------------------------ Sort32, MrgSort
SORT = """
  GlobalTensor<float> xg; xg.SetGlobalBuffer((__gm__ float*)x, 128);
  GlobalTensor<float> yg; yg.SetGlobalBuffer((__gm__ float*)y);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 65536);
  LocalTensor<float> s = b.Get<float>(128);
  LocalTensor<uint32_t> idx = b.GetWithOffset<uint32_t>(128, 1024);
  LocalTensor<float> sorted = b.GetWithOffset<float>(256, 4096);
  LocalTensor<float> merged = b.GetWithOffset<float>(256, 8192);
  DataCopy(s, xg, 128);
  for (uint32_t i = 0; i < 128; ++i) idx.SetValue(i, i);
""" + IN + SYNC.format("S_V") + """
  Sort32(sorted, s, idx, 4);                       // four sorted runs of 32 (score, index) pairs
  PipeBarrier<PIPE_V>();
  uint16_t lens[4] = {32, 32, 32, 32};
  MrgSort(merged, MrgSortSrcList<float>(sorted[0], sorted[64], sorted[128], sorted[192]),
          MrgSort4Info(lens, false, 15, 1));
""" + OUT + "  DataCopy(yg, merged, 256);"


def test_sort32_then_mrgsort_sorts_descending_with_indices(tmp_path: Path) -> None:
    x = np.random.default_rng(3).permutation(128).astype(np.float32)
    y = np.frombuffer(_ok(tmp_path, SORT, x, 1024), np.uint8)
    pairs = y.view(np.dtype([("score", "<f4"), ("index", "<u4")]))
    order = np.argsort(-x, kind="stable")
    np.testing.assert_array_equal(pairs["score"], x[order])
    np.testing.assert_array_equal(pairs["index"], order.astype(np.uint32))


def test_mrgsort_refuses_a_bad_valid_bit(tmp_path: Path) -> None:
    err = _fails(tmp_path, SORT.replace("lens, false, 15, 1", "lens, false, 5, 1"), np.zeros(128, np.float32))
    assert "MrgSort: validBit is 5; expected 0b11 (2 lists), 0b111 (3) or 0b1111 (4)" in err, err


# ------------------------------------------------------------------------------ SetL2CacheHint, DivCeil
HINT = """
  GlobalTensor<float> xg; xg.SetGlobalBuffer((__gm__ float*)x, 8);
  xg.SetL2CacheHint(CacheMode::CACHE_MODE_{0});
  GlobalTensor<float> yg; yg.SetGlobalBuffer((__gm__ float*)y, 8);
  yg.SetValue(0, float(DivCeil(xg.GetValue(0) > 0 ? 1000 : 0, {1})));
"""


def test_l2_cache_hint_and_div_ceil(tmp_path: Path) -> None:
    y = np.frombuffer(_ok(tmp_path, HINT.format("LAST", 7), np.ones(8, np.float32), 32), np.float32)
    assert y[0] == -(-1000 // 7)


def test_div_ceil_by_zero_is_refused(tmp_path: Path) -> None:
    err = _fails(tmp_path, HINT.format("DISABLE", 0), np.ones(8, np.float32))
    assert "DivCeil: b is 0 (DivCeil(1000, 0) (kernel.cpp:" in err and "a division by zero" in err, err


# ------------------------------------------------------------------------------ software SyncAll
SYNCALL = """
  GlobalTensor<float> xg; xg.SetGlobalBuffer((__gm__ float*)x, 64);
  GlobalTensor<float> yg; yg.SetGlobalBuffer((__gm__ float*)y, 64);
  GlobalTensor<int32_t> ws; ws.SetGlobalBuffer((__gm__ int32_t*)(y + 256), 32);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 2048);
  LocalTensor<float> v = b.Get<float>(16);
  LocalTensor<int32_t> u = b.GetWithOffset<int32_t>(32, 1024);
  const int i = GetBlockIdx(), n = GetBlockNum();
  DataCopy(v, xg[i * 16], 16);
  """ + IN + """
  Muls(v, v, 2.0f, 16);
  """ + OUT + """
  DataCopy(yg[i * 16], v, 16);
  SyncAll(ws, u);                              // phase 1 written by every block ...
  DataCopy(v, yg[((i + 1) % n) * 16], 16);     // ... read by its neighbour
  """ + IN + """
  Adds(v, v, 1.0f, 16);
  """ + OUT + """
  SyncAll(ws, u);
  DataCopy(yg[i * 16], v, 16);
"""


def test_software_sync_all_orders_the_blocks(tmp_path: Path) -> None:
    x = np.arange(64, dtype=np.float32)
    y = _ok(tmp_path, SYNCALL, x, 256 + 128, blocks=4)
    got = np.frombuffer(y[:256], np.float32).reshape(4, 16)
    np.testing.assert_array_equal(got, np.roll(x.reshape(4, 16) * 2 + 1, -1, axis=0))
    assert list(np.frombuffer(y[256:], np.int32)[::8]) == [2, 2, 2, 2]


def test_software_sync_all_misuse(tmp_path: Path) -> None:
    x = np.arange(64, dtype=np.float32)
    # block 2 leaves before the second barrier, having written nothing since the first
    skipped = SYNCALL.replace("  SyncAll(ws, u);\n  DataCopy(yg[i", "  if (i == 2) return;\n  SyncAll(ws, u);\n  DataCopy(yg[i")
    err = _fails(tmp_path / "a", skipped, x, 256 + 128, blocks=4)
    assert "SyncAll: block 2 ended without reaching this SyncAll" in err, err
    small = SYNCALL.replace("(y + 256), 32)", "(y + 256), 16)")
    err = _fails(tmp_path / "b", small, x, 256 + 128, blocks=4)
    assert "SyncAll: gmWorkspace holds 16 and ubWorkspace 32 int32_t; each needs 8 per block = 32" in err, err
    # without it the neighbour's read is a race between blocks
    racy = SYNCALL.replace("SyncAll(ws, u);", "PipeBarrier<PIPE_ALL>();")
    err = _fails(tmp_path / "c", racy, x, 256 + 128, blocks=4)
    assert "that block" in err and "depends on the order of blocks" in err, err


# ------------------------------------------------------------------------------ DataCopyPad(DataCopyParams)
PAD = """
  GlobalTensor<half> xg; xg.SetGlobalBuffer((__gm__ half*)x, 20);
  GlobalTensor<half> yg; yg.SetGlobalBuffer((__gm__ half*)y, 40);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 1024);
  LocalTensor<half> v = b.Get<half>(64);
  DataCopyPad(v, xg, DataCopyParams(2, 20, 0, 0), DataCopyPadParams(true, 0, 6, 0x3C00));  // pad with 1.0
""" + SYNC.format("MTE2_MTE3") + """
  DataCopyPad(yg, v, DataCopyParams(2, 32, 0, 8));
"""


def test_data_copy_pad_with_data_copy_params(tmp_path: Path) -> None:
    x = np.arange(20, dtype=np.float16)
    y = np.frombuffer(_ok(tmp_path, PAD, x, 80), np.float16)
    row = np.ones(16, np.float16)
    expect = np.concatenate([np.r_[x[:10], row[:6]], np.zeros(4, np.float16), np.r_[x[10:], row[:6]]])
    np.testing.assert_array_equal(y[:36], expect)


# ------------------------------------------------------------------------------ TPipe::Destroy
DESTROY = """
  GlobalTensor<float> xg; xg.SetGlobalBuffer((__gm__ float*)x, 8);
  GlobalTensor<float> yg; yg.SetGlobalBuffer((__gm__ float*)y, 8);
  TPipe first; TBuf<QuePosition::VECCALC> a; first.InitBuffer(a, 32);
  LocalTensor<float> u = a.Get<float>();
  DataCopy(u, xg, 8);
  PipeBarrier<PIPE_ALL>();
  first.Destroy();
  TPipe second; TBuf<QuePosition::VECCALC> c; second.InitBuffer(c, 64);
  LocalTensor<float> v = c.Get<float>(8);
  DataCopy(v, xg, 8);
  """ + IN + """
  Adds(v, v, 1.0f, 8);
  """ + OUT + """
  DataCopy(yg, v, 8);
"""


def test_destroy_then_a_second_tpipe(tmp_path: Path) -> None:
    x = np.arange(8, dtype=np.float32)
    y = np.frombuffer(_ok(tmp_path / "ok", DESTROY, x, 32), np.float32)
    np.testing.assert_array_equal(y, x + 1)
    err = _fails(tmp_path / "alive", DESTROY.replace("first.Destroy();", ""), x, 32)
    assert "TPipe: a second TPipe while one is alive" in err, err
    err = _fails(tmp_path / "after", DESTROY.replace("first.Destroy();", "first.Destroy(); TBuf<> e; first.InitBuffer(e, 32);"),
                 x, 32)
    assert "the TPipe was destroyed (TPipe::Destroy); it hands out no buffers" in err, err


# ------------------------------------------------------------------------------ more forms
FIVE_HD_VA = _copy_in("half", 512) + """
  TBuf<QuePosition::VECCALC> va; pipe.InitBuffer(va, 256);
  LocalTensor<uint64_t> dv = va.Get<uint64_t>(16), sv = va.GetWithOffset<uint64_t>(16, 128);
  for (int i = 0; i < 16; ++i) {
    dv.SetValue(i, (uint64_t)d[i * 16].GetPhyAddr());
    sv.SetValue(i, (uint64_t)s[i * 16].GetPhyAddr());
  }
  """ + SYNC.format("S_V") + """
  TransDataTo5HD<half>(dv, sv, TransDataTo5HDParams(false, false, 2, 16, 16));  // two 16x16 matrices
""" + OUT + "  DataCopy(yg, d, 512);"


def test_trans_data_to_5hd_address_tensors_and_repeats(tmp_path: Path) -> None:
    x = np.arange(512, dtype=np.float16)
    y = np.frombuffer(_ok(tmp_path, FIVE_HD_VA, x, 1024), np.float16).reshape(2, 16, 16)
    np.testing.assert_array_equal(y, x.reshape(2, 16, 16).transpose(0, 2, 1))


ND2ND = _copy_in("uint16_t", 256, "LocalTensor<uint8_t> t = b.GetWithOffset<uint8_t>(32, 32768);") + """
  Transpose(d, s, t, TransposeParamsExt(1, 1, 16, 16, TransposeType::TRANSPOSE_ND2ND_B16));
""" + OUT + "  DataCopy(yg, d, 256);"


def test_transpose_nd2nd_b16(tmp_path: Path) -> None:
    x = np.arange(256, dtype=np.uint16)
    y = np.frombuffer(_ok(tmp_path, ND2ND, x, 512), np.uint16).reshape(16, 16)
    np.testing.assert_array_equal(y, x.reshape(16, 16).T)


MERGE2 = """
  GlobalTensor<float> xg; xg.SetGlobalBuffer((__gm__ float*)x, 64);
  GlobalTensor<float> yg; yg.SetGlobalBuffer((__gm__ float*)y);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 65536);
  LocalTensor<float> s = b.Get<float>(64);
  LocalTensor<uint32_t> idx = b.GetWithOffset<uint32_t>(64, 1024);
  LocalTensor<float> sorted = b.GetWithOffset<float>(128, 4096);
  LocalTensor<float> merged = b.GetWithOffset<float>(128, 8192);
  DataCopy(s, xg, 64);
  for (uint32_t i = 0; i < 64; ++i) idx.SetValue(i, i);
""" + IN + SYNC.format("S_V") + """
  Sort32(sorted, s, idx, 2);
  PipeBarrier<PIPE_V>();
  uint16_t lens[4] = {32, 32, 0, 0};
  uint32_t done[4];
  MrgSort(merged, MrgSortSrcList<float>(sorted[0], sorted[64], sorted[0], sorted[0]), lens, done, 3, 1);
  uint16_t a, c, e, f;
  MrgSort(merged, MrgSortSrcList<float>(sorted[0], sorted[64], sorted[0], sorted[0]),
          MrgSort4Info(lens, true, 3, 1));                  // stops when a list runs out
  GetMrgSortResult(a, c, e, f);
  yg.SetValue(128, float(done[0] + done[1]));
  yg.SetValue(129, float(a));
  yg.SetValue(130, float(c));
"""


def test_mrgsort_of_two_lists_with_exhausted_suspension(tmp_path: Path) -> None:
    x = np.concatenate([np.arange(32) * 2.0, np.arange(32) * 2.0 + 100]).astype(np.float32)
    y = np.frombuffer(_ok(tmp_path, MERGE2, x, 131 * 4), np.float32)
    # the second list's 32 scores are all larger: it runs out first, the first list untouched
    assert list(y[128:131]) == [64.0, 0.0, 32.0]


def test_l2_cache_hint_refuses_a_mode_that_is_not_one(tmp_path: Path) -> None:
    err = _fails(tmp_path, HINT.format("LAST", 7).replace("CacheMode::CACHE_MODE_LAST", "static_cast<CacheMode>(3)"),
                 np.ones(8, np.float32))
    assert "GlobalTensor::SetL2CacheHint: mode is 3; expected a CacheMode" in err, err


def test_software_sync_all_on_threads(tmp_path: Path) -> None:
    x = np.arange(64, dtype=np.float32)
    y = _ok(tmp_path, SYNCALL, x, 256 + 128, blocks=4, threads=2)
    got = np.frombuffer(y[:256], np.float32).reshape(4, 16)
    np.testing.assert_array_equal(got, np.roll(x.reshape(4, 16) * 2 + 1, -1, axis=0))


# ------------------------------------------------------------------------------ Silu, Swish
def _act(t: str, call: str, n: int = 200) -> str:
    return _copy_in(t, 256) + f"  {call};\n" + OUT + "  DataCopy(yg, d, 256);"


def _steps(x: np.ndarray, beta: float) -> np.ndarray:
    """x / (1 + exp(-beta x)) as the implementation computes it: each instruction rounded to T."""
    t = x.dtype
    with np.errstate(over="ignore"):  # exp overflows half to inf there, as on the chip
        return _rounded_steps(x, beta, t)


def _rounded_steps(x: np.ndarray, beta: float, t: np.dtype) -> np.ndarray:
    m = (x.astype(np.float32) * np.float32(t.type(-beta))).astype(t)
    e = np.exp(m.astype(np.float32)).astype(t)
    a = (e.astype(np.float32) + 1).astype(t)
    return (x.astype(np.float32) / a.astype(np.float32)).astype(t)


def test_silu_and_swish_as_the_implementation_computes_them(tmp_path: Path) -> None:
    for t, np_t, tol, atol in (("float", np.float32, 1e-6, 1e-6), ("half", np.float16, 1e-3, 5e-5)):
        x = np.linspace(-9, 9, 256).astype(np_t)
        for name, call, beta in (("silu", "Silu(d, s, 200)", 1.0),
                                 ("swish", f"Swish(d, s, 200, ({t})1.5f)", 1.5)):
            y = np.frombuffer(_ok(tmp_path / f"{name}_{t}", _act(t, call), x, 256 * x.itemsize), np_t)
            np.testing.assert_allclose(y[:200], _steps(x[:200], beta), rtol=tol, atol=0)
            x64 = x[:200].astype(np.float64)
            ref = x64 / (1 + np.exp(-beta * x64))
            # where exp(-beta x) overflows T (half: x < -11.09 / beta) the chip's steps give -0
            fits = -beta * x64 < np.log(float(np.finfo(np_t).max))
            np.testing.assert_allclose(y[:200][fits], ref[fits], rtol=8 * np.finfo(np_t).eps, atol=atol)
            assert np.all(y[:200][~fits] == 0)


def test_silu_refuses_a_data_size_past_the_tensor(tmp_path: Path) -> None:
    err = _fails(tmp_path, _copy_in("float", 64) + "  Silu(d, s, 65);", np.zeros(64, np.float32))
    assert "Silu: dataSize is 65; it must be above 0 and at most the elements of srcLocal (64)" in err, err


def _sigmoid_steps(x: np.ndarray) -> np.ndarray:
    t = x.dtype
    with np.errstate(over="ignore"):
        e = np.exp((-x).astype(np.float32)).astype(t)
    a = (e.astype(np.float32) + 1).astype(t)
    return (np.float32(1) / a.astype(np.float32)).astype(t)


def test_sigmoid_in_chunks_of_its_tmp_buffer_and_on_the_stack(tmp_path: Path) -> None:
    x = np.linspace(-12, 12, 256).astype(np.float32)
    tmp = "LocalTensor<uint8_t> t = b.GetWithOffset<uint8_t>(96, 32768);"  # 24 floats a chunk
    for name, extra, call in (("shared", tmp, "Sigmoid(d, s, t, 200)"), ("stack", "", "Sigmoid(d, s, 200)")):
        body = _copy_in("float", 256, extra) + f"  {call};\n" + OUT + "  DataCopy(yg, d, 256);"
        y = np.frombuffer(_ok(tmp_path / name, body, x, 1024), np.float32)
        np.testing.assert_allclose(y[:200], _sigmoid_steps(x[:200]), rtol=1e-6)
        np.testing.assert_allclose(y[:200], 1 / (1 + np.exp(-x[:200].astype(np.float64))), rtol=1e-6)
    err = _fails(tmp_path / "small", _copy_in("float", 256, tmp.replace("96", "2")) + "  Sigmoid(d, s, t, 200);",
                 x)
    assert "Sigmoid: has less than one float element of tmp space (the sharedTmpBuffer): splitSize 0" in err, err


SWIGLU = """
  GlobalTensor<{t}> xg; xg.SetGlobalBuffer((__gm__ {t}*)x, 512);
  GlobalTensor<{t}> yg; yg.SetGlobalBuffer((__gm__ {t}*)y);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 16384);
  LocalTensor<{t}> a = b.Get<{t}>(256), g = b.GetWithOffset<{t}>(256, 4096), d = b.GetWithOffset<{t}>(256, 8192);
  LocalTensor<uint8_t> t = b.GetWithOffset<uint8_t>({tmp}, 12288);
  DataCopy(a, xg, 256);
  DataCopy(g, xg[256], 256);
""" + IN + """
  {call};
""" + OUT + "  DataCopy(yg, d, 256);"


def test_swiglu_in_float_and_in_chunks_of_half(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    for t, np_t, call, tmp in (("float", np.float32, "SwiGLU(d, a, g, 0.8f, 160)", 32),
                               ("half", np.float16, "SwiGLU(d, a, g, 0.8f, t, 160)", 384)):
        x = (rng.standard_normal(512) * 3).astype(np_t)
        body = SWIGLU.replace("{t}", t).replace("{call}", call).replace("{tmp}", str(tmp))
        y = np.frombuffer(_ok(tmp_path / t, body, x, 256 * x.itemsize), np_t)[:160]
        a, g = x[:160].astype(np.float64), x[256:416].astype(np.float64)
        np.testing.assert_allclose(y, a * g / (1 + np.exp(-0.8 * g)), rtol=4 * np.finfo(np_t).eps, atol=1e-6)
    err = _fails(tmp_path / "small", SWIGLU.replace("{t}", "half").replace("{tmp}", "160").replace(
        "{call}", "SwiGLU(d, a, g, 0.8f, t, 160)"), np.zeros(512, np.float16))
    assert "SwiGLU: has 160 bytes of tmp space (the sharedTmpBuffer); half needs three float buffers" in err, err
    err = _fails(tmp_path / "count", SWIGLU.replace("{t}", "float").replace("{tmp}", "32").replace(
        "{call}", "SwiGLU(d, a, g, 0.8f, 100)"), np.zeros(512, np.float32))
    assert "SwiGLU: calCount is 100; it must be above 0" in err and "a multiple of 32 bytes" in err, err
