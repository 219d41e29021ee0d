"""The race and synchronisation checker of opsdk's Ascend C model, held to mutants.

Correct kernels (the shipped Softmax and LayerNormalization, and small kernels in Huawei's
kernel-launch style written for these tests, tests/data/ascendc/races/) pass and give NumPy's
numbers. Each mutant removes or moves one synchronisation (a TQue EnQue/DeQue hand-off, a
SetFlag, a WaitFlag, a SetFlag/WaitFlag pair); every one of them leaves a real race or a
broken flag protocol, and the checker must report it. The counts are printed (pytest -s).
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc.model import AscendcModel, model_include_dir
from opsdk.build import toolchain
from opsdk.errors import KernelError
from tests.conftest import build_model_kernel

ROOT = Path(__file__).resolve().parents[2]
RACES = Path(__file__).parents[1] / "data" / "ascendc" / "races"
TILE, TILES, BLOCKS = 64, 3, 2
FOUND = r"race on Unified Buffer bytes|which no SetFlag set|is never waited for|is set again before"

DRIVER = """#include "kernel_operator.h"
#include "register/tilingdata_base.h"
namespace optiling { struct RaceTiling { uint32_t tileLength; uint32_t tileNum; }; REGISTER_TILING_DATA_CLASS(race_kernel, RaceTiling) }
#include "kernel.cpp"
#include "opsdk_model_launch.h"
extern "C" int launch(uint8_t** gm, const uint64_t* bytes, const char** names, uint8_t* tiling,
                      uint32_t blocks, char* err) {
    return opsdk_ascendc::Run("race_kernel", [](uint8_t** g, uint8_t* w, uint8_t* t) { race_kernel(g[0], g[1], w, t); },
                              gm, bytes, names, 2, tiling, blocks, 196608, "ascend910b", 1, 1, err, 4096);
}
"""

# kernel file -> (input, expected output) for BLOCKS blocks of TILES tiles of TILE floats
_X = np.linspace(-3.0, 3.0, BLOCKS * TILES * TILE, dtype=np.float32)
_XY = np.concatenate([_X, _X[::-1] * 0.5])
CASES: dict[str, tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]] = {
    "add_tque.cpp": (_XY, lambda v: v[: v.size // 2] + v[v.size // 2:]),
    "abs_tbuf.cpp": (_X, lambda v: np.abs(v) * 2),
    "reduce_scalar.cpp": (_X, lambda v: np.concatenate(
        [np.pad(t.sum(keepdims=True), (0, 7)) for t in v.reshape(-1, TILE)])),
    "copy_bind.cpp": (_X, lambda v: v * 3),
}


def _build(source: str, where: Path) -> ctypes.CDLL:
    return build_model_kernel(where, source, DRIVER)


def _build_many(sources: list[str], where: Path) -> Callable[[int], Callable[..., int]]:
    """Build several kernels into one library (one compile of the model for all of them):
    kernel k is race_kernel renamed race_kernel_m{k} in namespace m{k}, launched by launch_m{k}.
    The checker's findings and source lines are those of a kernel built alone."""
    head, tail = DRIVER.split('#include "kernel.cpp"\n')
    launch_header, launch_fn = tail.split("\n", 1)
    where.mkdir(parents=True, exist_ok=True)
    parts = [head]
    for k, source in enumerate(sources):
        (where / f"m{k}.cpp").write_text(source)
        parts.append(f'#define race_kernel race_kernel_m{k}\nnamespace m{k} {{\n#include "m{k}.cpp"\n}}\n'
                     "#undef race_kernel\n")
    parts.append(launch_header + "\n")
    parts += [launch_fn.replace("int launch(", f"int launch_m{k}(").replace(" race_kernel(", f" m{k}::race_kernel_m{k}(")
              for k in range(len(sources))]
    lib = build_model_kernel(where, "", "".join(parts))
    return lambda k: getattr(lib, f"launch_m{k}")


def _run_small(source: str, name: str, where: Path) -> tuple[int, str, np.ndarray]:
    return _launch_small(_build(source, where).launch, name)


def _launch_small(launch: Callable[..., int], name: str) -> tuple[int, str, np.ndarray]:
    x, expect = CASES[name]
    x = x.copy()
    y = np.zeros(expect(x).size, dtype=np.float32)
    gm = (ctypes.c_void_p * 2)(x.ctypes.data, y.ctypes.data)
    sizes = (ctypes.c_uint64 * 2)(x.nbytes, y.nbytes)
    names = (ctypes.c_char_p * 2)(b"x", b"y")
    tiling = ctypes.create_string_buffer(np.array([TILE, TILES], np.uint32).tobytes() + b"\0" * 8)
    err = ctypes.create_string_buffer(4096)
    launch.restype = ctypes.c_int
    rc = launch(gm, sizes, names, tiling, ctypes.c_uint32(BLOCKS), err)
    return rc, err.value.decode(), y


# shipped operator -> (inputs, attributes): several tiles and rows per block
SHIPPED: dict[str, tuple[list[np.ndarray], dict[str, object]]] = {
    "softmax": ([np.linspace(-2, 2, 3 * 100, dtype=np.float32).reshape(3, 100)], {"axis": -1}),
    "layer_normalization": ([np.linspace(-2, 2, 2 * 100, dtype=np.float32).reshape(2, 100),
                             np.linspace(0.5, 1.5, 100, dtype=np.float32),
                             np.linspace(-1, 1, 100, dtype=np.float32)], {"axis": -1}),
}


def _run_shipped(source: str, op: str, where: Path) -> tuple[int, str, list[np.ndarray]]:
    folder = where / op
    shutil.copytree(ROOT / "operators" / op, folder, ignore=shutil.ignore_patterns("__pycache__", "build"))
    (folder / "op_kernel" / f"{op}.cpp").write_text(source)
    inputs, attrs = SHIPPED[op]
    model = AscendcModel(folder)
    try:
        return 0, "", model.run(inputs, attrs)
    except KernelError as e:
        return 1, str(e), []


# ---------------------------------------------------------------------------- mutants
_ENQ = re.compile(r"^\s*(\w+)\.EnQue\((\w+)\);\s*$")
_SET = re.compile(r"^\s*SetFlag<HardEvent::(\w+)>\((\w+)\);\s*$")
_WAIT = re.compile(r"^\s*WaitFlag<HardEvent::(\w+)>\((\w+)\);\s*$")


def mutants(source: str) -> list[tuple[str, str]]:
    """Every one-synchronisation mutant of ``source``: (description, mutated source)."""
    lines = source.splitlines(keepends=True)
    out: list[tuple[str, str]] = []

    def without(*idx: int) -> str:
        return "".join(x for i, x in enumerate(lines) if i not in idx)

    for i, line in enumerate(lines[:-1]):
        m = _ENQ.match(line)
        deq = re.compile(rf"^\s*{m.group(2)} = {m.group(1)}\.(template )?DeQue<[^>]+>\(\);\s*$") if m else None
        if m and deq and deq.match(lines[i + 1]):
            out.append((f"line {i + 1}: no EnQue/DeQue hand-off on {m.group(1)}", without(i, i + 1)))
    groups: dict[tuple[str, str], list[int]] = {}
    for i, line in enumerate(lines):
        for kind, rx in (("SetFlag", _SET), ("WaitFlag", _WAIT)):
            m = rx.match(line)
            if m:
                groups.setdefault((m.group(1), m.group(2)), []).append(i)
                out.append((f"line {i + 1}: {kind}<{m.group(1)}>({m.group(2)}) removed", without(i)))
    for (event, eid), idx in groups.items():
        if len(idx) > 1:
            out.append((f"every SetFlag/WaitFlag<{event}>({eid}) removed", without(*idx)))
    for i, line in enumerate(lines[:-2]):
        nxt = lines[i + 2]
        if _SET.match(line) and _WAIT.match(lines[i + 1]) and nxt.strip().endswith(";") \
                and "{" not in nxt and "}" not in nxt and "return" not in nxt:
            moved = lines[:i + 1] + [nxt, lines[i + 1]] + lines[i + 3:]
            out.append((f"line {i + 2}: WaitFlag moved after the next statement", "".join(moved)))
    return out


KERNELS = [*(("small", n) for n in CASES), *(("shipped", op) for op in SHIPPED)]

# Mutants that leave no race, each with why (the checker must stay silent on them): a flag
# orders every earlier instruction of its source pipe, so a later hand-off on the same pipe
# covers an earlier one removed.
BENIGN = {
    ("add_tque.cpp", "hand-off on inQueX_"): "y's EnQue (MTE2_V) comes after x's copy on MTE2, "
                                            "and y's DeQue orders the Add after it",
    ("copy_bind.cpp", "hand-off on bindQue_"): "the queue's flag is MTE2_MTE3 and no MTE3 instruction reads "
                                              "the buffer; the vector read has its own MTE2_V flag",
    ("copy_bind.cpp", "line 37: WaitFlag moved"): "the V_MTE2 wait moves past FreeTensor, "
                                                                  "which is still before the next copy in",
}


def _benign(name: str, what: str) -> bool:
    return any(n == name and key in what for n, key in BENIGN)


def _source(kind: str, name: str) -> str:
    if kind == "small":
        return (RACES / name).read_text()
    return (ROOT / "operators" / name / "op_kernel" / f"{name}.cpp").read_text()


def _run(kind: str, name: str, source: str, where: Path) -> tuple[int, str, object]:
    return (_run_small if kind == "small" else _run_shipped)(source, name, where)


@pytest.mark.parametrize("kind,name", KERNELS, ids=[n for _, n in KERNELS])
def test_correct_kernel_passes_the_checker(kind: str, name: str, tmp_path: Path) -> None:
    rc, err, out = _run(kind, name, _source(kind, name), tmp_path)
    assert rc == 0, err
    if kind == "small":
        x, expect = CASES[name]
        np.testing.assert_allclose(out, expect(x), rtol=1e-5, atol=1e-5)
    else:
        assert all(np.isfinite(o).all() for o in out)  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind,name", KERNELS, ids=[n for _, n in KERNELS])
def test_every_sync_mutant_is_caught(kind: str, name: str, tmp_path: Path) -> None:
    cases = mutants(_source(kind, name))
    assert cases, f"{name} has no synchronisation to remove"
    missed, false = [], []
    if kind == "small":  # two libraries of half the mutants each, one per core: compiling is most of the time
        halves = [list(range(len(cases)))[h::2] for h in (0, 1)]
        with ThreadPoolExecutor(max_workers=2) as pool:
            libs = list(pool.map(lambda h: _build_many([cases[n][1] for n in halves[h]], tmp_path / f"h{h}"), (0, 1)))
        order = {n: (h, i) for h in (0, 1) for i, n in enumerate(halves[h])}
        results = [_launch_small(libs[order[n][0]](order[n][1]), name) for n in range(len(cases))]
    else:
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda n: _run(kind, name, cases[n][1], tmp_path / f"m{n}"), range(len(cases))))
    for (what, _), (rc, err, _) in zip(cases, results, strict=True):
        if _benign(name, what):
            if rc != 0:
                false.append(f"{what}: reported although no race is left: {err[:300]}")
        elif rc == 0 or not re.search(FOUND, err):
            missed.append(f"{what}: rc={rc} {err[:300]}")
    benign = sum(_benign(name, w) for w, _ in cases)
    print(f"\n{name}: {len(cases)} mutants, {benign} benign, {len(cases) - benign - len(missed)} of "
          f"{len(cases) - benign} caught, {len(false)} false positives")
    assert not missed and not false, "\n".join(missed + false)


def test_mutants_cover_the_issue_bar() -> None:
    counts = {name: len(mutants(_source(kind, name))) for kind, name in KERNELS}
    assert len(counts) >= 6 and sum(counts.values()) >= 40, counts


def test_race_message_names_both_instructions_and_the_fix(tmp_path: Path) -> None:
    source = (RACES / "abs_tbuf.cpp").read_text().replace(
        "            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);\n            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);\n", "")
    rc, err, _ = _run_small(source, "abs_tbuf.cpp", tmp_path)
    assert rc == 1
    assert re.search(r"race_kernel \(block \d of 2\): race on Unified Buffer bytes \[0, 256\) of a TBuf at Unified "
                     r"Buffer bytes \[0, 256\) \(Abs's argument srcLocal\): Abs \(kernel.cpp:\d+\) on pipe V reads what "
                     r"DataCopy \(kernel.cpp:\d+\) on pipe MTE2 wrote", err), err
    assert "Fix: SetFlag<HardEvent::MTE2_V>(id) after the first and WaitFlag<HardEvent::MTE2_V>(id)" in err


def test_queue_race_suggests_enque_deque(tmp_path: Path) -> None:
    source = (RACES / "add_tque.cpp").read_text().replace(
        "            inQueY_.EnQue(y);\n            y = inQueY_.DeQue<float>();\n", "")
    rc, err, _ = _run_small(source, "add_tque.cpp", tmp_path)
    assert rc == 1 and "Fix: EnQue the tensor after the copy and DeQue it before computing on it" in err, err


def test_scalar_store_needs_a_flag_before_mte3(tmp_path: Path) -> None:
    source = (RACES / "reduce_scalar.cpp").read_text().replace(
        "        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);\n        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);\n", "")
    rc, err, _ = _run_small(source, "reduce_scalar.cpp", tmp_path)
    assert rc == 1 and "DataCopy (kernel.cpp:" in err and "LocalTensor::SetValue" in err, err
    assert "SetFlag<HardEvent::S_MTE3>" in err


def _inline(tmp_path: Path, body: str, blocks: int, gm_floats: int) -> tuple[int, str, np.ndarray]:
    """Run `body` (the kernel's statements, GM argument `x` of gm_floats floats) on `blocks` blocks."""
    src = tmp_path / "k.cpp"
    src.write_text('#include "kernel_operator.h"\n#include "opsdk_model_launch.h"\nusing namespace AscendC;\n'
                   f'KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);\nextern "C" void k(GM_ADDR x) {{\n{body}\n}}\n'
                   'extern "C" int launch(uint8_t* x, uint64_t bytes, uint32_t blocks, char* err) {\n'
                   '  uint8_t* gm[1] = {x}; uint64_t n[1] = {bytes}; const char* names[1] = {"x"}; uint8_t t[8] = {};\n'
                   '  return opsdk_ascendc::Run("inline", [](uint8_t** g, uint8_t*, uint8_t*) { k(g[0]); },\n'
                   '    gm, n, names, 1, t, blocks, 196608, "ascend910b", 1, 1, err, 1024); }\n')
    lib = tmp_path / "k.so"
    proc = subprocess.run([toolchain().cxx, "-std=c++17", "-shared", "-fPIC", f"-I{model_include_dir()}",
                           str(src), "-o", str(lib)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    x = np.zeros(gm_floats, np.float32)
    err = ctypes.create_string_buffer(1024)
    rc = ctypes.CDLL(str(lib)).launch(ctypes.c_void_p(x.ctypes.data), ctypes.c_uint64(x.nbytes),
                                      ctypes.c_uint32(blocks), err)
    return rc, err.value.decode(), x


CAST = """
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 1024);
  LocalTensor<half> h = b.Get<half>(); LocalTensor<int8_t> q = b.Get<int8_t>()[512];
  for (int i = 0; i < 32; ++i) h.SetValue(i, half(i * 0.75f - 12.0f));
  SetFlag<HardEvent::S_V>(EVENT_ID0); WaitFlag<HardEvent::S_V>(EVENT_ID0);
  Cast(q, h, RoundMode::CAST_NONE, 32);
  SetFlag<HardEvent::V_S>(EVENT_ID0); WaitFlag<HardEvent::V_S>(EVENT_ID0);
  for (int i = 0; i < 32; ++i) reinterpret_cast<float*>(x)[i] = q.GetValue(i);
"""


def test_cast_half_to_int8_takes_cast_none(tmp_path: Path) -> None:
    """basic_api/impl/dav_c220/kernel_operator_vec_vconv_impl.h accepts CAST_NONE for half -> int8_t."""
    rc, err, x = _inline(tmp_path, CAST, 1, 32)
    assert rc == 0, err
    np.testing.assert_array_equal(x, np.rint(np.arange(32, dtype=np.float32) * 0.75 - 12.0))


ATOMIC = """
  InitSocState();
  GlobalTensor<float> out; out.SetGlobalBuffer((__gm__ float*)x, 8);
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 32);
  LocalTensor<float> v = b.Get<float>();
  Duplicate(v, static_cast<float>(GetBlockIdx() + 1), 8);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0); WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  {atomic}
  DataCopy(out, v, 8);
  SetAtomicNone();
"""


def test_atomic_add_lets_blocks_accumulate_into_one_range(tmp_path: Path) -> None:
    rc, err, x = _inline(tmp_path, ATOMIC.replace("{atomic}", "SetAtomicAdd<float>();"), 4, 8)
    assert rc == 0, err
    np.testing.assert_array_equal(x, np.full(8, 1 + 2 + 3 + 4, np.float32))


def test_without_atomic_add_blocks_writing_one_range_conflict(tmp_path: Path) -> None:
    rc, err, _ = _inline(tmp_path, ATOMIC.replace("{atomic}", ""), 4, 8)
    assert rc == 1 and "also writes, with a different value: blocks must write disjoint ranges" in err, err


SYNC_ALL = """
  GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x, 8);
  const int i = GetBlockIdx();
  g.SetValue(i, float(i + 1));
  {sync}
  g.SetValue(4 + i, g.GetValue((i + 1) % 4) * 10);   // the neighbour's value, written before the barrier
"""


def test_hardware_sync_all_is_a_barrier_of_all_blocks(tmp_path: Path) -> None:
    for sub in ("ok", "racy", "skip"):
        (tmp_path / sub).mkdir()
    rc, err, x = _inline(tmp_path / "ok", SYNC_ALL.replace("{sync}", "SyncAll();"), 4, 8)
    assert rc == 0, err
    np.testing.assert_array_equal(x, [1, 2, 3, 4, 20, 30, 40, 10])
    rc, err, _ = _inline(tmp_path / "racy", SYNC_ALL.replace("{sync}", ""), 4, 8)
    assert rc == 1 and "the result depends on the order of blocks" in err, err
    rc, err, _ = _inline(tmp_path / "skip", SYNC_ALL.replace("{sync}", "if (i == 1) return;\n  SyncAll();"), 4, 8)
    assert rc == 1 and "SyncAll: block 1 ended without reaching this SyncAll" in err, err


PAD = """
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 96);
  LocalTensor<float> u = b.Get<float>();
  GlobalTensor<float> g; g.SetGlobalBuffer((__gm__ float*)x, 24);
  DataCopyExtParams three(1, 3 * sizeof(float), 0, 0, 0);
  SetPadValue(7.0f);
  DataCopyPad(u, g, three, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));  // pads with 7
  DataCopyPad(u[8], g, three, DataCopyPadExtParams<float>(true, 0, 5, 2.0f));  // pads with 2
  DataCopyPad(u[16], g, three, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));  // the register: 2
  SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0); WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
  DataCopy(g, u, 24);
"""


def test_set_pad_value_fills_what_data_copy_pad_pads(tmp_path: Path) -> None:
    rc, err, x = _inline(tmp_path, PAD, 1, 24)
    assert rc == 0, err
    expect = np.zeros(24, np.float32)
    expect[3:8], expect[11:16], expect[19:24] = 7.0, 2.0, 2.0
    np.testing.assert_array_equal(x, expect)


def test_set_pad_value_exists_on_220_only() -> None:
    from opsdk.ascend.aicore_apis import missing_apis

    assert missing_apis("SetPadValue(0.0f);", "Ascend910B3", ["float32"]) == []
    why = missing_apis("SetPadValue(0.0f);", "Ascend310B1", ["float32"])
    assert why and "SetPadValue: not in the Ascend C of Ascend310B1" in why[0]


MASK_REDUCE = """
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 4096);
  LocalTensor<float> s = b.Get<float>(); LocalTensor<float> w = s[512]; LocalTensor<float> d = s[768];
  for (int i = 0; i < 256; ++i) s.SetValue(i, float((i * 37) % 101) - 50.0f);
  SetFlag<HardEvent::S_V>(EVENT_ID0); WaitFlag<HardEvent::S_V>(EVENT_ID0);
  ReduceMax(d, s, w, 40, 3, 8);             // the first 40 of each 64-float repeat, 3 repeats
  uint64_t bits[2] = {0x5555555555555555ull, 0};
  ReduceMin(d[8], s, w, bits, 2, 16);       // every second float, repeats 16 blocks apart
  ReduceSum(d[16], s, w, 64, 4, 8);         // all 256
  SetFlag<HardEvent::V_S>(EVENT_ID0); WaitFlag<HardEvent::V_S>(EVENT_ID0);
  for (int i = 0; i < 3; ++i) reinterpret_cast<float*>(x)[i] = d.GetValue(8 * i);
"""


def test_mask_form_reductions(tmp_path: Path) -> None:
    rc, err, x = _inline(tmp_path, MASK_REDUCE, 1, 8)
    assert rc == 0, err
    s = ((np.arange(256) * 37) % 101 - 50).astype(np.float32)
    rows = s.reshape(4, 64)
    assert x[0] == rows[:3, :40].max()
    assert x[1] == min(s[0:64:2].min(), s[128:192:2].min())  # 16 blocks = 128 floats apart
    assert x[2] == s.sum()


PLAIN_TILING = """
struct AddTiling { uint32_t n; float scale; };
extern "C" void plain(GM_ADDR x, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(AddTiling);
  GET_TILING_DATA(t, tiling);
  GET_TILING_DATA_WITH_STRUCT(AddTiling, u, tiling);
  for (uint32_t i = 0; i < t.n; ++i) reinterpret_cast<float*>(x)[i] = t.scale * i + u.n;
}
"""


def test_register_tiling_default_takes_a_plain_struct(tmp_path: Path) -> None:
    driver = ('#include "kernel_operator.h"\nusing namespace AscendC;\n#include "kernel.cpp"\n'
              '#include "opsdk_model_launch.h"\n'
              'extern "C" int launch(uint8_t** gm, const uint64_t* bytes, const char** names, '
              'uint8_t* tiling, char* err) {\n'
              '  return opsdk_ascendc::Run("plain", [](uint8_t** g, uint8_t*, uint8_t* t) { plain(g[0], t); },\n'
              '    gm, bytes, names, 1, tiling, 1, 196608, "ascend910b", 1, 1, err, 1024); }\n')
    lib = build_model_kernel(tmp_path, PLAIN_TILING, driver)
    x = np.zeros(4, np.float32)
    gm = (ctypes.c_void_p * 1)(x.ctypes.data)
    sizes = (ctypes.c_uint64 * 1)(x.nbytes)
    names = (ctypes.c_char_p * 1)(b"x")
    tiling = ctypes.create_string_buffer(np.array([4], np.uint32).tobytes()
                                         + np.array([0.5], np.float32).tobytes())
    err = ctypes.create_string_buffer(1024)
    assert lib.launch(gm, sizes, names, tiling, err) == 0, err.value.decode()
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32) * 0.5 + 4)


def test_get_tiling_data_without_a_struct_names_both_ways(tmp_path: Path) -> None:
    src = tmp_path / "k.cpp"
    src.write_text('#include "kernel_operator.h"\nextern "C" void k(GM_ADDR t) { GET_TILING_DATA(v, t); (void)v; }\n')
    proc = subprocess.run([toolchain().cxx, "-std=c++17", "-fsyntax-only", f"-I{model_include_dir()}",
                           str(src)], capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    assert "REGISTER_TILING_DEFAULT(MyTiling)" in proc.stderr
    assert "REGISTER_TILING_DATA_CLASS" in proc.stderr


CMP_MASK = """
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 2048);
  LocalTensor<float> a = b.Get<float>(); LocalTensor<float> c = a[64];
  LocalTensor<uint8_t> m = b.Get<uint8_t>()[512]; LocalTensor<uint8_t> m2 = b.Get<uint8_t>()[544];
  for (int i = 0; i < 64; ++i) { a.SetValue(i, float(i)); c.SetValue(i, 20.0f); }
  SetFlag<HardEvent::S_V>(EVENT_ID0); WaitFlag<HardEvent::S_V>(EVENT_ID0);
  Compare(a, c, CMPMODE::LT, 40, BinaryRepeatParams());   // the first 40: i < 20
  GetCmpMask(m);
  SetCmpMask(m);
  GetCmpMask(m2);                                          // round trip through the register
  SetFlag<HardEvent::V_S>(EVENT_ID0); WaitFlag<HardEvent::V_S>(EVENT_ID0);
  for (int i = 0; i < 16; ++i) reinterpret_cast<float*>(x)[i] = m2.GetValue(i);
"""


def test_compare_into_the_cmpmask_register_and_back(tmp_path: Path) -> None:
    rc, err, x = _inline(tmp_path, CMP_MASK, 1, 16)
    assert rc == 0, err
    bits = np.zeros(128, np.uint8)
    bits[:20] = 1  # elements 0..19 are < 20; 20..39 are not; 40.. are masked off
    np.testing.assert_array_equal(x.astype(np.uint8), np.packbits(bits, bitorder="little"))


GATHER_MASK = """
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 4096);
  LocalTensor<float> s = b.Get<float>(); LocalTensor<float> d = s[256]; LocalTensor<float> e = s[512];
  LocalTensor<uint32_t> pat = b.Get<uint32_t>()[768];
  for (int i = 0; i < 128; ++i) s.SetValue(i, float(i));
  pat.SetValue(0, 0x80000001u); pat.SetValue(1, 0x00000003u);   // elements 0, 31, 32, 33
  SetFlag<HardEvent::S_V>(EVENT_ID0); WaitFlag<HardEvent::S_V>(EVENT_ID0);
  uint64_t n1 = 0, n2 = 0;
  GatherMask(d, s, pat, false, 0, GatherMaskParams(1, 2, 8, 0), n1);      // both repeats, one pattern
  GatherMask(e, s, (uint8_t)4, false, 0, GatherMaskParams(1, 1, 8, 0), n2);  // the second of every four
  SetFlag<HardEvent::V_S>(EVENT_ID0); WaitFlag<HardEvent::V_S>(EVENT_ID0);
  float* out = reinterpret_cast<float*>(x);
  out[0] = float(n1); out[1] = float(n2);
  for (uint64_t i = 0; i < n1; ++i) out[2 + i] = d.GetValue(i);
  for (uint64_t i = 0; i < n2; ++i) out[10 + i] = e.GetValue(i);
"""


def test_gather_mask_packs_the_selected_elements(tmp_path: Path) -> None:
    rc, err, x = _inline(tmp_path, GATHER_MASK, 1, 26)
    assert rc == 0, err
    assert x[0] == 8 and x[1] == 16
    np.testing.assert_array_equal(x[2:10], [0, 31, 32, 33, 64, 95, 96, 97])
    np.testing.assert_array_equal(x[10:26], np.arange(1, 64, 4))


def test_gather_mask_is_missing_where_the_toolkit_lacks_it() -> None:
    from opsdk.ascend.aicore_apis import missing_apis

    src = "GatherMask(d, s, (uint8_t)1, false, 0, p, n);"
    assert missing_apis(src, "Ascend910B3", ["float32"]) == []
    assert missing_apis(src, "Ascend310P3", ["float32"]) == []
    assert "GatherMask: not in the Ascend C of Ascend310B1" in missing_apis(src, "Ascend310B1", ["float32"])[0]


def test_the_vector_qualifier_of_newer_samples_compiles(tmp_path: Path) -> None:
    src = tmp_path / "k.cpp"
    src.write_text('#include "kernel_operator.h"\nextern "C" __global__ __vector__ void k(GM_ADDR x) { (void)x; }\n')
    proc = subprocess.run([toolchain().cxx, "-std=c++17", "-fsyntax-only", f"-I{model_include_dir()}",
                           str(src)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


GATHER_COUNTER = """
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 4096);
  LocalTensor<float> s = b.Get<float>(); LocalTensor<float> d = s[384];
  LocalTensor<uint32_t> pat = b.Get<uint32_t>()[768];
  for (int i = 0; i < 256; ++i) s.SetValue(i, float(i));
  for (int i = 0; i < 16; ++i) pat.SetValue(i, 0xFFFFFFFFu);
  SetFlag<HardEvent::S_V>(EVENT_ID0); WaitFlag<HardEvent::S_V>(EVENT_ID0);
  uint64_t n = 0;
  GatherMask(d, s, pat, true, 70, GatherMaskParams(1, 2, 16, 0), n);  // counter mode, 2 repeats
  SetFlag<HardEvent::V_S>(EVENT_ID0); WaitFlag<HardEvent::V_S>(EVENT_ID0);
  float* out = reinterpret_cast<float*>(x);
  out[0] = float(n);
  for (uint64_t i = 0; i < n && i < 140; ++i) out[1 + i] = d.GetValue(i);
"""


def test_gather_mask_counter_mode_takes_mask_elements_per_repeat_on_220(tmp_path: Path) -> None:
    rc, err, x = _inline(tmp_path, GATHER_COUNTER, 1, 141)
    assert rc == 0, err
    assert x[0] == 140  # 70 per repeat, repeats 16 blocks (128 floats) apart
    np.testing.assert_array_equal(x[1:141], np.concatenate([np.arange(70), np.arange(128, 198)]))


SELECT_SPR = """
  TPipe pipe; TBuf<QuePosition::VECCALC> b; pipe.InitBuffer(b, 4096);
  LocalTensor<float> a = b.Get<float>(); LocalTensor<float> c = a[128]; LocalTensor<float> d = a[256];
  LocalTensor<uint8_t> m = b.Get<uint8_t>()[1536]; LocalTensor<uint8_t> r = b.Get<uint8_t>()[1568];
  for (int i = 0; i < 128; ++i) { a.SetValue(i, float(i)); c.SetValue(i, -1.0f); }
  for (int i = 0; i < 32; ++i) m.SetValue(i, i < 8 ? 0x0F : 0xFF);  // only the first 8 bytes count
  SetFlag<HardEvent::S_V>(EVENT_ID0); WaitFlag<HardEvent::S_V>(EVENT_ID0);
  Select(d, m, a, c, SELMODE::VSEL_CMPMASK_SPR, 128);  // two repeats of 64 floats, one mask
  GetCmpMask(r);
  SetFlag<HardEvent::V_S>(EVENT_ID0); WaitFlag<HardEvent::V_S>(EVENT_ID0);
  for (int i = 0; i < 128; ++i) reinterpret_cast<float*>(x)[i] = d.GetValue(i);
  for (int i = 0; i < 16; ++i) reinterpret_cast<float*>(x)[128 + i] = r.GetValue(i);
"""


def test_select_cmpmask_spr_reuses_one_repeats_mask(tmp_path: Path) -> None:
    rc, err, x = _inline(tmp_path, SELECT_SPR, 1, 144)
    assert rc == 0, err
    keep = np.tile(np.arange(64) % 8 < 4, 2)  # 0x0F: the low 4 of every 8
    np.testing.assert_array_equal(x[:128], np.where(keep, np.arange(128), -1.0))
    np.testing.assert_array_equal(x[128:144], [0x0F] * 8 + [0] * 8)  # the register it loaded
