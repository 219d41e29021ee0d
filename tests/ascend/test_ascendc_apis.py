"""Ascend C APIs of opsdk's model that Huawei's kernel-launch samples use, against NumPy.

Each kernel here is small and written for the test: ``block_idx``/``block_num``, ``int4b_t``
(packing, DataCopy counts in elements, Cast to and from half), ``Gather``/``Gatherb`` with byte
offsets, ReduceMax/ReduceMin with ``calIndex``, the ACC_VAL register (``GetAccVal`` /
``GetReduceRepeatSumSpr``), ``LocalTensor::SetSize`` and ``LocalTensor(TPosition, addr, len)``.
Misuse fails naming the API, the operand, expected and actual; races through the new APIs are
reported by the race checker.
"""

from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.aicore_apis import missing_apis
from opsdk.ascend.ascendc.model import model_include_dir
from opsdk.build import toolchain
from tests.conftest import build_model_kernel

DRIVER = """#include "kernel_operator.h"
using namespace AscendC;
#include "kernel.cpp"
#include "opsdk_model_launch.h"
extern "C" int launch(uint8_t** gm, const uint64_t* bytes, uint32_t blocks, char* err) {
    const char* names[2] = {"x", "y"};
    uint8_t tiling[8] = {};
    return opsdk_ascendc::Run("apis", [](uint8_t** g, uint8_t*, uint8_t*) { k(g[0], g[1]); },
                              gm, bytes, names, 2, tiling, blocks, 196608, "ascend910b", 1, 1, err, 4096);
}
"""


def _launch(tmp_path: Path, body: str, x: np.ndarray, y_bytes: int, blocks: int = 1) -> tuple[int, str, bytes]:
    """Run `body` as kernel k(GM_ADDR x, GM_ADDR y) on `blocks` blocks; x is read, y starts zeroed."""
    lib = build_model_kernel(tmp_path, f'extern "C" void k(GM_ADDR x, GM_ADDR y) {{\n{body}\n}}\n', DRIVER)
    x = np.ascontiguousarray(x)
    y = np.zeros(y_bytes, np.uint8)
    gm = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    sizes = (ctypes.c_uint64 * 2)(x.nbytes, y.nbytes)
    err = ctypes.create_string_buffer(4096)
    rc = lib.launch(gm, sizes, ctypes.c_uint32(blocks), err)
    return rc, err.value.decode(), y.tobytes()


def _ok(tmp_path: Path, body: str, x: np.ndarray, y_bytes: int, blocks: int = 1) -> bytes:
    rc, err, y = _launch(tmp_path, body, x, y_bytes, blocks)
    assert rc == 0, err
    return y


def _fails(tmp_path: Path, body: str, x: np.ndarray, y_bytes: int = 64) -> str:
    rc, err, _ = _launch(tmp_path, body, x, y_bytes)
    assert rc == 1, "the kernel ran, expected a failure"
    return err


# ------------------------------------------------------------------------------ block_idx
BLOCK_IDX = """
  GlobalTensor<float> out; out.SetGlobalBuffer((__gm__ float*)y + block_idx * 8, 8);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 32);
  LocalTensor<float> v = b.Get<float>();
  Duplicate(v, float(block_idx * 10 + block_num), 8);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(out, v, 8);
"""


def test_block_idx_and_block_num_are_the_launch_s(tmp_path: Path) -> None:
    y = np.frombuffer(_ok(tmp_path, BLOCK_IDX, np.zeros(8, np.float32), 4 * 8 * 4, blocks=4), np.float32)
    np.testing.assert_array_equal(y.reshape(4, 8), np.repeat([[4.0], [14.0], [24.0], [34.0]], 8, axis=1))


# ------------------------------------------------------------------------------ int4b_t
INT4 = """
  GlobalTensor<half> xg; xg.SetGlobalBuffer((__gm__ half*)x, 256);
  GlobalTensor<int4b_t> qg; qg.SetGlobalBuffer((__gm__ int4b_t*)y, 256);
  GlobalTensor<half> hg; hg.SetGlobalBuffer((__gm__ half*)(y + 128), 256);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 2048);
  LocalTensor<half> h = b.Get<half>(256);
  LocalTensor<int4b_t> q = b.GetWithOffset<int4b_t>(256, 512);
  LocalTensor<half> back = b.GetWithOffset<half>(256, 1024);
  DataCopy(h, xg, 256);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Cast(q, h, RoundMode::CAST_CEIL, 128, 2, {1, 1, 2, 8});   // mask form: 2 repeats of 128, dst 64 bytes apart
  Cast(back, q, RoundMode::CAST_NONE, 256);                 // count form back to half
  SetFlag<HardEvent::V_S>(EVENT_ID0); WaitFlag<HardEvent::V_S>(EVENT_ID0);
  q.SetValue(3, int4b_t(-5));                               // one nibble, its neighbours kept
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0); WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(qg, q, 256);                                     // 256 elements = 128 bytes
  DataCopy(hg, back, 256);
"""


def _int4_input() -> np.ndarray:
    return (np.arange(256, dtype=np.float32) * 0.3 - 40.0).astype(np.float16)


def test_int4b_t_packs_two_to_a_byte_and_casts_to_and_from_half(tmp_path: Path) -> None:
    x = _int4_input()
    y = _ok(tmp_path, INT4, x, 128 + 512)
    expect = np.clip(np.ceil(x.astype(np.float32)), -8, 7).astype(np.int8)
    back = np.frombuffer(y[128:], np.float16)
    np.testing.assert_array_equal(back, expect.astype(np.float16))
    expect[3] = -5
    nibbles = (expect & 0xF).astype(np.uint8)
    np.testing.assert_array_equal(np.frombuffer(y[:128], np.uint8), nibbles[0::2] | (nibbles[1::2] << 4))


# ------------------------------------------------------------------------------ Gather, Gatherb
GATHER = """
  GlobalTensor<float> xg; xg.SetGlobalBuffer((__gm__ float*)x, 128);
  GlobalTensor<uint32_t> og; og.SetGlobalBuffer((__gm__ uint32_t*)x + 128, 128);
  GlobalTensor<float> yg; yg.SetGlobalBuffer((__gm__ float*)y, 192);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 2048);
  LocalTensor<float> s = b.Get<float>(128);
  LocalTensor<uint32_t> off = b.GetWithOffset<uint32_t>(128, 512);
  LocalTensor<float> d = b.GetWithOffset<float>(192, 1024);
  DataCopy(s, xg, 128); DataCopy(off, og, 128);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Duplicate(d, -1.0f, 192);
  Gather(d, s, off, (uint32_t)0, 70);                  // count form: one repeat of 64 and a tail of 6
  uint64_t odd[2] = {0xAAAAAAAAAAAAAAAAull, 0};
  Gather(d[128], s, off, (uint32_t)32, odd, 1, 8);     // bit mask, base 32 bytes: every odd element
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(yg, d, 192);
"""


def test_gather_takes_byte_offsets_from_the_base(tmp_path: Path) -> None:
    src = np.arange(128, dtype=np.float32) * 1.5
    idx = (np.arange(128) * 37 + 5) % 120  # element indices; the API takes bytes
    x = np.concatenate([src.view(np.uint32), (idx * 4).astype(np.uint32)])
    y = np.frombuffer(_ok(tmp_path, GATHER, x, 192 * 4), np.float32)
    np.testing.assert_array_equal(y[:70], src[idx[:70]])
    np.testing.assert_array_equal(y[70:128], -1.0)
    odd = np.arange(64) % 2 == 1
    np.testing.assert_array_equal(y[128:192], np.where(odd, src[idx[:64] + 8], -1.0))  # +32 bytes = 8 floats


GATHERB = """
  GlobalTensor<uint16_t> xg; xg.SetGlobalBuffer((__gm__ uint16_t*)x, 128);
  GlobalTensor<uint16_t> yg; yg.SetGlobalBuffer((__gm__ uint16_t*)y, 256);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 2048);
  LocalTensor<uint16_t> s = b.Get<uint16_t>(128);
  LocalTensor<uint32_t> off = b.GetWithOffset<uint32_t>(16, 256);
  LocalTensor<uint16_t> d = b.GetWithOffset<uint16_t>(256, 512);
  DataCopy(s, xg, 128);
  for (int j = 0; j < 16; ++j) off.SetValue(j, uint32_t((7 - j % 8) * 32));   // the 8 blocks reversed
  SetFlag<HardEvent::S_V>(EVENT_ID0); WaitFlag<HardEvent::S_V>(EVENT_ID0);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Duplicate(d, (uint16_t)0xFFFF, 256);
  GatherRepeatParams params{2, 16};                    // dst blocks 2 apart, repeats 16 blocks apart
  Gatherb(d, s, off, 1, params);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(yg, d, 256);
"""


def test_gatherb_copies_32_byte_blocks_by_byte_offset(tmp_path: Path) -> None:
    src = np.arange(128, dtype=np.uint16) * 3
    y = np.frombuffer(_ok(tmp_path, GATHERB, src, 512), np.uint16).reshape(16, 16)
    blocks = src.reshape(8, 16)
    np.testing.assert_array_equal(y[0::2], blocks[::-1])
    np.testing.assert_array_equal(y[1::2], 0xFFFF)


def test_gatherb_refuses_an_offset_inside_a_block(tmp_path: Path) -> None:
    body = GATHERB.replace("uint32_t((7 - j % 8) * 32)", "uint32_t(j == 5 ? 40 : 0)")
    err = _fails(tmp_path, body, np.zeros(128, np.uint16), 512)
    assert "Gatherb: offsetLocal[5] = 40 bytes" in err and "expected a multiple of 32" in err, err


# ------------------------------------------------------------------------------ reductions
def _reduce_kernel(t: str, work: int, calls: str) -> str:
    """A kernel reducing x's 256 elements of type t into 32 results, `calls` on s, w and d."""
    return f"""
  GlobalTensor<{t}> xg; xg.SetGlobalBuffer((__gm__ {t}*)x, 256);
  GlobalTensor<{t}> yg; yg.SetGlobalBuffer((__gm__ {t}*)y, 32);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 4096);
  LocalTensor<{t}> s = b.Get<{t}>(256); LocalTensor<{t}> w = b.GetWithOffset<{t}>({work}, 1024);
  LocalTensor<{t}> d = b.GetWithOffset<{t}>(32, 2048);
  DataCopy(s, xg, 256);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Duplicate(d, {t}(0), 32);
  {calls}
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(yg, d, 32);
"""


REDUCE_INDEX = _reduce_kernel("float", 64, """
  ReduceMax(d, s, w, 200, true);              // count form: value, then the index's bits
  ReduceMin(d[8], s, w, 200, true);
  ReduceMax(d[16], s, w, 40, 3, 8, true);      // mask form: the first 40 of each of 3 repeats
  ReduceMin(d[24], s, w, 64, 2, 16, true);     // whole repeats 16 blocks (128 floats) apart""")
REDUCE_INDEX_HALF = _reduce_kernel("half", 128, """
  ReduceMax(d, s, w, 200, true);
  ReduceMax(d[16], s, w, 100, 2, 8, true);     // the first 100 of each 128-half repeat""")


def test_reduce_max_min_with_index_store_the_index_bits_after_the_value(tmp_path: Path) -> None:
    s = (((np.arange(256) * 53) % 251) - 100.0).astype(np.float32)
    s[[30, 170]] = 500.0  # a tie: the first one's index
    y = _ok(tmp_path, REDUCE_INDEX, s, 32 * 4)
    vals, bits = np.frombuffer(y, np.float32), np.frombuffer(y, np.uint32)
    assert (vals[0], bits[1]) == (500.0, 30)
    assert (vals[8], bits[9]) == (s[:200].min(), int(np.argmin(s[:200])))
    masked = np.concatenate([np.arange(r * 64, r * 64 + 40) for r in range(3)])
    assert (vals[16], bits[17]) == (500.0, 30)
    assert vals[16] == s[masked].max()
    both = np.concatenate([np.arange(0, 64), np.arange(128, 192)])
    assert (vals[24], bits[25]) == (s[both].min(), int(both[np.argmin(s[both])]))


def test_reduce_max_with_index_on_half_takes_16_index_bits(tmp_path: Path) -> None:
    s = ((((np.arange(256) * 53) % 251) - 100.0) / 4).astype(np.float16)
    y = _ok(tmp_path, REDUCE_INDEX_HALF, s, 32 * 2)
    vals, bits = np.frombuffer(y, np.float16), np.frombuffer(y, np.uint16)
    assert (vals[0], bits[1]) == (s[:200].max(), int(np.argmax(s[:200])))
    masked = np.concatenate([np.arange(0, 100), np.arange(128, 228)])
    assert (vals[16], bits[17]) == (s[masked].max(), int(masked[np.argmax(s[masked])]))


ACC = """
  GlobalTensor<half> xg; xg.SetGlobalBuffer((__gm__ half*)x, 288);
  GlobalTensor<half> yg; yg.SetGlobalBuffer((__gm__ half*)y, 16);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 2048);
  LocalTensor<half> s = b.Get<half>(288); LocalTensor<half> w = b.GetWithOffset<half>(16, 640);
  LocalTensor<half> d = b.GetWithOffset<half>(16, 1024);
  DataCopy(s, xg, 288);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Duplicate(d, half(0), 16);
  ReduceSum(d, s, w, 288);
  SYNC
  half acc = GetReduceRepeatSumSpr<half>();
  half again = GetAccVal<half>();
  d.SetValue(1, acc); d.SetValue(2, again);
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0); WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(yg, d, 16);
"""


def test_the_acc_val_register_holds_the_count_form_sum(tmp_path: Path) -> None:
    s = (np.arange(288) % 7 - 3).astype(np.float16)
    y = np.frombuffer(_ok(tmp_path, ACC.replace("SYNC", "SetFlag<HardEvent::V_S>(EVENT_ID0); "
                                                        "WaitFlag<HardEvent::V_S>(EVENT_ID0);"), s, 32), np.float16)
    total = np.float16(s.astype(np.float64).sum())
    np.testing.assert_array_equal(y[:3], [total, total, total])


def test_reading_acc_val_without_a_v_s_flag_is_a_race(tmp_path: Path) -> None:
    err = _fails(tmp_path, ACC.replace("SYNC", ""), np.zeros(288, np.float16))
    assert "GetReduceRepeatSumSpr" not in err  # the 8.1 name: GetAccVal
    assert "race on the ACC_VAL register: GetAccVal (kernel.cpp:" in err, err
    assert "ReduceSum (kernel.cpp:" in err and "SetFlag<HardEvent::V_S>(id)" in err, err


# ------------------------------------------------------------------------------ LocalTensor
ADDRESS = """
  GlobalTensor<float> xg; xg.SetGlobalBuffer((__gm__ float*)x, 64);
  GlobalTensor<float> yg; yg.SetGlobalBuffer((__gm__ float*)y, 64);
  LocalTensor<float> a(TPosition::VECCALC, 0, 64);
  LocalTensor<float> c(TPosition::VECCALC, 256, 64);
  DataCopy(a, xg, 64);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  c.SetSize(32);
  Muls(c, a, 2.0f, c.GetSize());
  c.SetSize(64);
  Muls(c[32], a[32], -1.0f, 32);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(yg, c, 64);
"""


def test_a_local_tensor_from_an_address_and_set_size(tmp_path: Path) -> None:
    x = np.linspace(-4, 4, 64, dtype=np.float32)
    y = np.frombuffer(_ok(tmp_path, ADDRESS, x, 256), np.float32)
    np.testing.assert_array_equal(y, np.concatenate([x[:32] * 2, -x[32:]]))


# ------------------------------------------------------------------------------ misuse
# case -> (statements, what the failure must say); one kernel holds them all, x[0] picks one
_BUF = "TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 1024);"
_GATHER_AT = (_BUF + " LocalTensor<float> s = b.Get<float>(64); LocalTensor<uint32_t> off = "
              "b.GetWithOffset<uint32_t>(64, 256); LocalTensor<float> d = b.GetWithOffset<float>(64, 512); "
              "for (int i = 0; i < 64; ++i) off.SetValue(i, i == 3 ? OFFSET : 0); "
              "SetFlag<HardEvent::S_V>(EVENT_ID0); WaitFlag<HardEvent::S_V>(EVENT_ID0); "
              "Gather(d, s, off, (uint32_t)0, 64);")
MISUSE: dict[str, tuple[str, str]] = {
    "int4 odd offset": (_BUF + " LocalTensor<int4b_t> q = b.Get<int4b_t>(); q[3].GetSize();",
                        r"LocalTensor::operator\[\]: offset 3 into a LocalTensor<int4b_t> must be even"),
    "int4 copy count": (_BUF + " LocalTensor<int4b_t> q = b.Get<int4b_t>(); GlobalTensor<int4b_t> g; "
                        "g.SetGlobalBuffer((__gm__ int4b_t*)y, 64); DataCopy(g, q, 48);",
                        r"DataCopy: calCount is 48 int4b_t elements = 24 bytes; it must be a multiple of 32 bytes"),
    "int4 to half mode": (_BUF + " LocalTensor<int4b_t> q = b.Get<int4b_t>(); "
                          "LocalTensor<half> h = b.Get<half>()[256]; Cast(h, q, RoundMode::CAST_FLOOR, 64);",
                          r"Cast: round_mode CAST_FLOOR for int4b_t -> half: this conversion is exact and takes "
                          r"CAST_NONE only"),
    "gather between elements": (_GATHER_AT.replace("OFFSET", "6u"),
                                r"Gather: srcOffsetLocal\[3\] = 6 bytes \(\+ srcBaseAddr 0\) names source bytes "
                                r"\[6, 10\); expected a multiple of 4 within the source tensor's 256 bytes"),
    "gather outside": (_GATHER_AT.replace("OFFSET", "256u"),
                       r"Gather: srcOffsetLocal\[3\] = 256 bytes .* names source bytes \[256, 260\)"),
    "address unaligned": ("LocalTensor<float> a(TPosition::VECCALC, 48, 64);",
                          r"LocalTensor\(TPosition, addr, tileSize\): addr is 48; it must be a multiple of 32 bytes"),
    "address size": ("LocalTensor<float> a(TPosition::VECCALC, 0, 12);",
                     r"tileSize is 12 float elements = 48 bytes; it must be above 0 and a multiple of 32 bytes"),
    "address past UB": ("LocalTensor<float> a(TPosition::VECCALC, 196352, 128);",
                        r"addr 196352 \+ 512 bytes runs past the Unified Buffer's 196608 bytes"),
    "set size past UB": ("LocalTensor<float> a(TPosition::VECCALC, 196352, 64); a.SetSize(65);",
                         r"LocalTensor::SetSize: size 65 float elements = 260 bytes from Unified Buffer byte 196352 "
                         r"run past its 196608 bytes \(buffer overflow\)"),
    "acc val unset": ("half v = GetAccVal<half>(); (void)v;",
                      r"GetAccVal: the ACC_VAL register holds nothing"),
}


@pytest.fixture(scope="module")
def misuse(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cases = "\n".join(f"    case {i}: {{ {body} break; }}" for i, (body, _) in enumerate(MISUSE.values()))
    body = f"  switch (int(reinterpret_cast<float*>(x)[0])) {{\n{cases}\n    default: break;\n  }}"
    return build_model_kernel(tmp_path_factory.mktemp("misuse"),
                              f'extern "C" void k(GM_ADDR x, GM_ADDR y) {{\n{body}\n}}\n', DRIVER)


@pytest.mark.parametrize("case", list(MISUSE))
def test_misuse_names_the_api_the_operand_and_the_rule(misuse: ctypes.CDLL, case: str) -> None:
    x = np.array([list(MISUSE).index(case)] + [0] * 7, np.float32)
    y = np.zeros(256, np.uint8)
    gm = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    sizes = (ctypes.c_uint64 * 2)(x.nbytes, y.nbytes)
    err = ctypes.create_string_buffer(4096)
    assert misuse.launch(gm, sizes, ctypes.c_uint32(1), err) == 1, case
    assert re.search(MISUSE[case][1], err.value.decode()), err.value.decode()


# ------------------------------------------------------------------------------ races
def test_gather_reading_what_mte2_still_writes_is_a_race(tmp_path: Path) -> None:
    body = GATHER.replace("DataCopy(s, xg, 128); DataCopy(off, og, 128);\n"
                          "  SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);",
                          "DataCopy(off, og, 128);\n"
                          "  SetFlag<HardEvent::MTE2_V>(EVENT_ID0); WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);\n"
                          "  DataCopy(s, xg, 128);")
    assert body != GATHER
    x = np.zeros(256, np.uint32)
    err = _fails(tmp_path, body, x, 192 * 4)
    assert "race on Unified Buffer bytes [0, " in err, err
    assert "Gather (kernel.cpp:" in err and "reads what DataCopy (kernel.cpp:" in err, err
    assert "on pipe MTE2 wrote" in err and "SetFlag<HardEvent::MTE2_V>(id)" in err, err


def test_a_race_on_an_address_tensor_names_it(tmp_path: Path) -> None:
    body = ADDRESS.replace("SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);", "")
    err = _fails(tmp_path, body, np.zeros(64, np.float32), 256)
    assert "of a LocalTensor made from an address at Unified Buffer bytes [256, 512)" in err, err
    assert "SetFlag<HardEvent::V_MTE3>(id)" in err, err


def test_an_int4b_t_nibble_store_before_the_copy_out_needs_s_mte3(tmp_path: Path) -> None:
    body = INT4.replace("  SetFlag<HardEvent::S_MTE3>(EVENT_ID0); WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);\n", "")
    assert body != INT4
    err = _fails(tmp_path, body, _int4_input(), 128 + 512)
    assert "race on Unified Buffer bytes [513, 514)" in err, err  # the byte holding element 3
    assert "DataCopy (kernel.cpp:" in err and "LocalTensor::SetValue (kernel.cpp:" in err, err
    assert "SetFlag<HardEvent::S_MTE3>(id)" in err, err


# ------------------------------------------------------------------------------ availability
def test_gather_and_gatherb_exist_where_cann_8_1_has_them() -> None:
    assert missing_apis("Gather(d, s, o, 0u, 64u); Gatherb(d, s, o, 1, p);", "Ascend910B3", ["float16"]) == []
    on_200 = missing_apis("Gather(d, s, o, 0u, 64u); Gatherb(d, s, o, 1, p);", "Ascend310P3", ["float16"])
    assert len(on_200) == 1 and on_200[0].startswith("Gatherb: not in the Ascend C of Ascend310P3"), on_200
    on_100 = missing_apis("Gather(d, s, o, 0u, 64u);", "Ascend910A", ["float16"])
    assert on_100 and on_100[0].startswith("Gather: not in the Ascend C of Ascend910A"), on_100


@pytest.mark.parametrize(("defines", "line", "message"), [
    (["-DOPSDK_AICORE_ARCH=200", "-DOPSDK_HAS_Gatherb=0"], "Gatherb(d, d, o, 1, GatherRepeatParams());",
     "Gatherb is not in the Ascend C of this SoC family (__CCE_AICORE__ = 200"),
    (["-DOPSDK_AICORE_ARCH=300", "-DOPSDK_HAS_INT4_Cast=0"], "Cast(q, h, RoundMode::CAST_NONE, 64);",
     "Cast of int4b_t is not in the Ascend C of this SoC family"),
    (["-DOPSDK_AICORE_ARCH=200"], "Cast(h, q, RoundMode::CAST_NONE, 64);",
     "Cast of int4b_t is not in the Ascend C of this SoC family"),
    ([], "DataCopy(q, g, DataCopyParams(1, 1, 0, 0));", "DataCopy of int4b_t is modelled in the count form only"),
])
def test_unavailable_forms_do_not_compile(tmp_path: Path, defines: list[str], line: str, message: str) -> None:
    src = tmp_path / "k.cpp"
    src.write_text('#include "kernel_operator.h"\nusing namespace AscendC;\n'
                   "void k(LocalTensor<uint16_t> d, LocalTensor<uint32_t> o, LocalTensor<half> h, "
                   f"LocalTensor<int4b_t> q, GlobalTensor<int4b_t> g) {{ {line} }}\n")
    proc = subprocess.run([toolchain().cxx, "-std=c++17", "-fsyntax-only", *defines, f"-I{model_include_dir()}",
                           str(src)], capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
