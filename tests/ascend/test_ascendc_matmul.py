"""The Matmul high-level API (lib/matmul_intf.h) on opsdk's Ascend C model, with its host
tiling (tiling/tiling_api.h: MultiCoreMatmulTiling -> TCubeTiling).

tests/data/ascendc/matmul/ holds a kernel-launch sample in the style of Huawei's Matmul API
samples (matmul_custom.cpp) and its host tiling (matmul_custom_tiling.cpp, GenerateTiling
unedited from the samples' form). The sample runs through ``opsdk ascendc run --host-tiling``
and matches NumPy (float16 and bfloat16 in, float32 out, float32 sums); variants cover tails,
CFG_MDL, an NZ A and a transposed B. The tiling fits each SoC's L1/L0A/L0B/L0C; a shape that
does not is refused. Mutants (a tiling past L0B, a missing End, a stale or lost C, ...) are
each reported, and the correct kernels are not.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opsdk.ascend.ascendc import KernelFileError, host_tiling
from opsdk.cli import main
from tests.conftest import build_model_kernel

MM = Path(__file__).parents[1] / "data" / "ascendc" / "matmul"
KERNEL = MM / "matmul_custom.cpp"
TILING = MM / "matmul_custom_tiling.cpp"
FIELDS = ("usedCoreNum M N Ka Kb singleCoreM singleCoreN singleCoreK baseM baseN baseK depthA1 "
          "depthB1 stepM stepN isBias transLength iterateOrder shareMode shareL1Size shareL0CSize "
          "shareUbSize batchM batchN singleBatchM singleBatchN stepKa stepKb depthAL1CacheUB "
          "depthBL1CacheUB dbL0A dbL0B dbL0C").split()


def _fields(tiling: bytes) -> dict[str, int]:
    return dict(zip(FIELDS, np.frombuffer(tiling[:4 * len(FIELDS)], np.int32).tolist(), strict=True))


def _tiling(tmp_path: Path, soc: str = "Ascend910B1", **macros: Any) -> bytes:
    """The sample's host tiling with its shape/split macros set."""
    head = "".join(f"#define {k} {v}\n" for k, v in macros.items())
    name = f"tiling_{abs(hash(head)) % 10**8}.cpp"
    (tmp_path / name).write_text(head + TILING.read_text())
    return host_tiling(f"{tmp_path / name}:GenerateTiling", soc)


def _bf16(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values exact in bfloat16: (their bfloat16 bits, their float32 values)."""
    bits = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


def _nz(a: np.ndarray) -> np.ndarray:
    """A matrix [R][C] of 2-byte data as the NZ format in GM: [C / 16][R (up to 16)][16]."""
    m, k = a.shape
    p = np.zeros(((m + 15) // 16 * 16, (k + 15) // 16 * 16), a.dtype)
    p[:m, :k] = a
    return np.ascontiguousarray(p.reshape(p.shape[0], -1, 16).transpose(1, 0, 2))


def test_the_sample_runs_through_opsdk_ascendc_run_with_its_host_tiling(tmp_path: Path) -> None:
    """``opsdk ascendc run matmul_custom.cpp --host-tiling matmul_custom_tiling.cpp:GenerateTiling``:
    float16 A (256 x 192) and B (192 x 320), float32 C on 2 blocks, float32 sums of exact products."""
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (256, 192)).astype(np.float16)
    b = rng.uniform(-1, 1, (192, 320)).astype(np.float16)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "bias.npy", np.zeros(320, np.float32))
    argv = ["ascendc", "run", str(KERNEL), "--entry", "matmul_custom", "--block-dim", "2",
            "--soc", "Ascend910B1", "--input", f"a={tmp_path / 'a.npy'}", "--input", f"b={tmp_path / 'b.npy'}",
            "--input", f"bias={tmp_path / 'bias.npy'}",
            "--output", "c=float32:256x320", "--host-tiling", f"{TILING}:GenerateTiling",
            "--out-dir", str(tmp_path), "--estimate"]
    assert main(argv) == 0
    c = np.load(tmp_path / "c.npy")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-5)


def test_the_host_tiling_fits_each_socs_buffers(tmp_path: Path) -> None:
    """GetTiling's TCubeTiling: the real field order, the blocks cover M x N, and the L0A/L0B/L0C
    double buffers and the L1 depths fit the SoC's bytes (data/socs.json)."""
    from opsdk.ascend.socs import soc_facts

    for soc, macros in [("Ascend910B1", {}), ("Ascend310P3", {"SHAPE_M": 1000, "SHAPE_N": 600,
                                                               "SHAPE_K": 4000, "BASE_M": -1, "BASE_N": -1})]:
        raw = _tiling(tmp_path, soc, **macros)
        t, facts = _fields(raw), soc_facts(soc)
        assert len(raw) == 4 * 50 + 8 and int(np.frombuffer(raw[200:], np.uint64)[0]) == facts["ub_bytes"]
        m, n, k = (macros.get("SHAPE_M", 256), macros.get("SHAPE_N", 320), macros.get("SHAPE_K", 192))
        assert (t["M"], t["N"], t["Ka"], t["Kb"]) == (m, n, k, k)
        blocks = -(-m // t["singleCoreM"]) * -(-n // t["singleCoreN"])
        assert t["usedCoreNum"] == blocks <= 2
        assert t["baseM"] * t["baseK"] * 2 * t["dbL0A"] <= facts["l0a_bytes"]
        assert t["baseK"] * t["baseN"] * 2 * t["dbL0B"] <= facts["l0b_bytes"]
        assert t["baseM"] * t["baseN"] * 4 * t["dbL0C"] <= facts["l0c_bytes"]
        assert (t["depthA1"] * t["baseM"] + t["depthB1"] * t["baseN"]) * t["baseK"] * 2 <= facts["l1_bytes"]
        assert t["stepKa"] >= 1 and t["depthA1"] >= t["stepKa"] and t["baseK"] % 16 == 0


def test_a_split_past_l0b_is_refused_by_the_host_tiling(tmp_path: Path) -> None:
    (tmp_path / "t.cpp").write_text(TILING.read_text().replace(
        "tilingApi.SetFixSplit(baseM, baseN, -1);", "tilingApi.SetFixSplit(128, 256, 256);"))
    with pytest.raises(KernelFileError, match=r"Ascend910B1\): matmul_tiling::MultiCoreMatmulTiling::"
                       r"GetTiling: baseK x baseN x 2 = 131072 bytes, but L0B holds 65536 bytes"):
        host_tiling(f"{tmp_path / 't.cpp'}:GenerateTiling", "Ascend910B1")
    (tmp_path / "s.cpp").write_text(TILING.read_text().replace("GetInstance(socVersion)",
                                                                'GetInstance("Ascend310P3")'))
    with pytest.raises(KernelFileError, match="socVersion is Ascend310P3, but the run is for Ascend910B1"):
        host_tiling(f"{tmp_path / 's.cpp'}:GenerateTiling", "Ascend910B1")


HEAD = '#define OPSDK_AIC 1\n#include "kernel_operator.h"\n#include "lib/matmul_intf.h"\n'
LAUNCH = """extern "C" int launch{k}(uint8_t** gm, const uint64_t* bytes, const char** names, uint32_t blocks,
                         uint8_t* tiling, char* err) {{
    return opsdk_ascendc::Run("matmul_custom", [](uint8_t** g, uint8_t* w, uint8_t* t) {{
        m{k}::matmul_custom{k}(g[0], g[1], g[2], g[3], w, t); }}, gm, bytes, names, 4, tiling, blocks, 196608, "ascend910b", 1, 1,
        err, 4096, nullptr, nullptr);
}}
"""
MACROS = ("IN_T", "OUT_T", "MM_CFG", "A_FORMAT", "B_FORMAT", "TRANS_B", "ITERATE_LOOP", "ITERATE_ASYNC",
          "READ_BACK")


def _build(sources: list[str], where: Path) -> Callable[[int], Callable[..., int]]:
    """Each source (the kernel with its macros) in one library, kernel k as launch{k}."""
    parts = [HEAD]
    for k, source in enumerate(sources):
        (where / f"m{k}.cpp").write_text(source)
        parts.append(f'#define matmul_custom matmul_custom{k}\nnamespace m{k} {{\n#include "m{k}.cpp"\n}}\n'
                     + "".join(f"#undef {m}\n" for m in (*MACROS, "matmul_custom")))
    parts.append('#include "opsdk_model_launch.h"\n')
    parts += [LAUNCH.format(k=k) for k in range(len(sources))]
    lib = build_model_kernel(where, "", "".join(parts), opt="-O1")
    return lambda k: getattr(lib, f"launch{k}")


def _run(launch: Any, tiling: bytes, arrays: list[np.ndarray], blocks: int) -> tuple[int, str]:
    """Launch with GM a, b, bias, c."""
    gm = (ctypes.c_void_p * 4)(*[x.ctypes.data for x in arrays])
    sizes = (ctypes.c_uint64 * 4)(*[x.nbytes for x in arrays])
    names = (ctypes.c_char_p * 4)(b"a", b"b", b"bias", b"c")
    err = ctypes.create_string_buffer(4096)
    buf = ctypes.create_string_buffer(tiling, len(tiling))
    launch.restype = ctypes.c_int
    rc = launch(gm, sizes, names, ctypes.c_uint32(blocks), buf, err)
    return rc, err.value.decode()


# variant -> (kernel macros, host tiling macros, data kind): 'bf16' bfloat16 data, 'f32' float,
# 'nz' A in the NZ format, 't' B given transposed (N x K), 'bias' a bias
VARIANTS: dict[str, tuple[dict[str, str], dict[str, Any], str]] = {
    "half, CFG_NORM; C read back after IterateAll's reply": ({"READ_BACK": "1"}, {}, ""),
    "bfloat16, CFG_MDL, tails in M, N and K": (
        {"IN_T": "bfloat16_t", "MM_CFG": "CFG_MDL"},
        {"SHAPE_M": 100, "SHAPE_N": 72, "SHAPE_K": 200, "BASE_M": 64, "BASE_N": 32, "IN_DTYPE": "DT_BF16"}, "bf16"),
    "half, A in NZ, B transposed, two blocks splitting N": (
        {"A_FORMAT": "NZ", "TRANS_B": "true"},
        {"SHAPE_M": 48, "SHAPE_N": 80, "SHAPE_K": 96, "BASE_M": 48, "BASE_N": 32, "IS_TRANS_B": "true"}, "nz t"),
    "half with a bias, 2 blocks splitting N": ({}, {"IS_BIAS": "true"}, "bias"),
    "half, B in NZ, 2 blocks splitting M, K tail": (
        {"B_FORMAT": "NZ"}, {"SHAPE_M": 96, "SHAPE_N": 32, "SHAPE_K": 72, "BASE_M": 48, "BASE_N": 32}, "bnz"),
    "Iterate / GetTensorC loop, N first (SetTraverse FIRSTN), tails; C read back after each reply": (
        {"ITERATE_LOOP": "1", "READ_BACK": "1"},
        {"SHAPE_M": 90, "SHAPE_N": 120, "SHAPE_K": 64, "BASE_M": 32, "BASE_N": 32, "TRAVERSE": "FIRSTN"}, ""),
    "int8 in, int32 out (exact), B transposed, tails": (
        {"IN_T": "int8_t", "OUT_T": "int32_t", "TRANS_B": "true"},
        {"SHAPE_M": 72, "SHAPE_N": 48, "SHAPE_K": 300, "BASE_M": 32, "BASE_N": 32, "IN_DTYPE": "DT_INT8",
         "OUT_DTYPE": "DT_INT32", "IS_TRANS_B": "true"}, "i8 t"),
    "Iterate<false> and GetTensorC<false> per block": (
        {"ITERATE_ASYNC": "1"}, {"SHAPE_M": 64, "SHAPE_N": 96, "SHAPE_K": 48, "BASE_M": 32, "BASE_N": 32}, ""),
    "float, B transposed, tails": (
        {"IN_T": "float", "TRANS_B": "true"},
        {"SHAPE_M": 40, "SHAPE_N": 56, "SHAPE_K": 100, "BASE_M": 32, "BASE_N": 32, "IN_DTYPE": "DT_FLOAT",
         "IS_TRANS_B": "true"}, "f32 t"),
    "half, B transposed, K in 4 baseK steps (L1 double-buffered)": (
        {"TRANS_B": "true"},
        {"SHAPE_M": 32, "SHAPE_N": 64, "SHAPE_K": 2000, "BASE_M": 32, "BASE_N": 32, "IS_TRANS_B": "true"}, "t"),
}


def _data(kind: str, m: int, n: int, k: int) -> tuple[list[np.ndarray], np.ndarray]:
    """A, B and the bias as the kernel takes them, and C as NumPy computes it (float32 sums)."""
    rng = np.random.default_rng(11)
    bias = rng.uniform(-4, 4, n).astype(np.float32) if "bias" in kind else np.zeros(n, np.float32)
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    ga: np.ndarray
    gb: np.ndarray
    if "i8" in kind:
        ga, gb = (rng.integers(-128, 128, x.shape).astype(np.int8) for x in (a, b))
        fa, fb = ga.astype(np.int32), gb.astype(np.int32)
        bias = bias.astype(np.int32)
    elif "bf16" in kind:
        (ga, fa), (gb, fb) = _bf16(a), _bf16(b)
    else:
        ga, gb = (a.astype(np.float32), b.astype(np.float32)) if "f32" in kind else \
            (a.astype(np.float16), b.astype(np.float16))
        fa, fb = ga.astype(np.float32), gb.astype(np.float32)
    ref = fa @ fb + bias
    if "nz" in kind.split():
        ga = _nz(ga)
    if "bnz" in kind:
        gb = _nz(gb)
    if "t" in kind.split():
        gb = np.ascontiguousarray(gb.T)
    return [ga, gb, bias], ref


def _source(macros: dict[str, str], text: str | None = None) -> str:
    return "".join(f"#define {k} {v}\n" for k, v in macros.items()) + (text or KERNEL.read_text())


def test_the_variants_match_numpy(tmp_path: Path) -> None:
    """Each variant's C is NumPy's float32 product of the same values (the Cube sums the exact
    float32 products of half/bfloat16 in float32, in k order); the race checker and the limits
    are clean."""
    launch = _build([_source(kernel) for kernel, _, _ in VARIANTS.values()], tmp_path)
    for k, (what, (_, host, kind)) in enumerate(VARIANTS.items()):
        tiling = _tiling(tmp_path, **host)
        t = _fields(tiling)
        assert t["iterateOrder"] == (1 if "FIRSTN" in what else 0), what
        ins, ref = _data(kind, t["M"], t["N"], t["Ka"])
        c = np.full(ref.shape, -1, ref.dtype)
        rc, err = _run(launch(k), tiling, [*ins, c], t["usedCoreNum"])
        assert rc == 0 and err == "", f"{what}: {err}"
        if "i8" in kind:  # int32 sums of int8 products: exact
            np.testing.assert_array_equal(c, ref, err_msg=what)
            continue
        # float32 sums in k order (the Cube's) against NumPy's blocked ones: K / 256 x 1e-5 apart
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * max(1, t["Ka"] / 256), err_msg=what)


LOOP = "    mm.IterateAll(gmC);\n"
REGIST = "    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);\n"
Edit = str | tuple[str, ...]
# (what, kernel text(s), replacement(s), host tiling text, its replacement, what the report says)
MUTANTS: list[tuple[str, Edit, Edit, str, str, str]] = [
    ("a tiling past L0B: the host sets baseN 256 after GetTiling (B2 2 x 64 KiB)", "", "",
     "    uint32_t tcubeTilingSize", "    tilingData.set_baseN(256);\n    uint32_t tcubeTilingSize",
     r"TPipe::InitBuffer: position B2 asks for 2 x 65536 = 131072 bytes of L0B, but Ascend910B1's L0B holds 65536"),
    ("a tiling past L0B: baseK 256 by hand, L0A single-buffered", "", "",
     "    uint32_t tcubeTilingSize",
     "    tilingData.set_baseK(256);\n    tilingData.set_dbL0A(1);\n    uint32_t tcubeTilingSize",
     "position B2 asks for .* bytes of L0B"),
    ("the accumulator past L0C: baseN 256 by hand (CO1 2 x 128 KiB)", "", "", "    uint32_t tcubeTilingSize",
     "    tilingData.set_baseN(256);\n    tilingData.set_baseK(64);\n    uint32_t tcubeTilingSize",
     "position CO1 asks for 2 x 131072 = 262144 bytes of L0C, but Ascend910B1's L0C holds 131072"),
    ("A's L1 loads past L1: stepKa 16 by hand", "", "", "    uint32_t tcubeTilingSize",
     "    tilingData.set_stepKa(16);\n    tilingData.set_depthA1(32);\n    uint32_t tcubeTilingSize",
     "position A1 asks for 2 x 524288 = 1048576 bytes of L1"),
    ("a base block that is not whole fractals: baseM 24", "    CopyTiling(&tiling, localMemSize, tilingGm);\n",
     "    CopyTiling(&tiling, localMemSize, tilingGm);\n    tiling.baseM = 24;\n", "", "",
     "has baseM 24 and baseN 128; each must be a positive multiple of 16"),
    ("no L1 step: stepKa 0", "    CopyTiling(&tiling, localMemSize, tilingGm);\n",
     "    CopyTiling(&tiling, localMemSize, tilingGm);\n    tiling.stepKa = 0;\n", "", "",
     "has stepKa/stepKb 0/2"),
    ("missing End", "    mm.End();\n", "", "", "", r"End\(\) was never called: on 220 the Cube core serving it"),
    ("stale C: GetTensorC twice per Iterate", LOOP,
     "    while (mm.Iterate()) {\n        mm.GetTensorC(gmC);\n        mm.GetTensorC(gmC);\n    }\n", "", "",
     "already taken .*the C it would copy is stale"),
    ("stale C: GetTensorC with no Iterate", LOOP, "    mm.GetTensorC(gmC);\n", "", "",
     "no new C block: no Iterate computed one yet"),
    ("lost C: Iterate twice before GetTensorC", LOOP,
     "    while (mm.Iterate() && mm.Iterate()) {\n        mm.GetTensorC(gmC);\n    }\n", "", "",
     "was not taken by GetTensorC: the next block would overwrite it in L0C"),
    ("lost C: Iterate in a loop with no GetTensorC", LOOP, "    while (mm.Iterate()) {\n    }\n", "", "",
     "was not taken by GetTensorC"),
    ("lost C: one Iterate, then End", LOOP, "    mm.Iterate();\n", "", "",
     "the last Iterate's C block was never taken by GetTensorC"),
    ("SetBias with a tiling made without a bias", "    if (tiling.isBias) {", "    if (true) {", "", "",
     "the tiling was made without a bias: EnableBias"),
    ("no REGIST_MATMUL_OBJ", REGIST, "", "", "",
     "the object is not initialised"),
    ("Init with no TPipe alive", ("    AscendC::TPipe pipe;\n", REGIST), ("", "    mm.Init(&tiling);\n"), "", "",
     "GetTPipePtr: no TPipe is alive in this kernel"),
    ("C read right after the asynchronous GetTensorC<false> (no reply to wait for)", '#include "kernel_operator.h"\n',
     '#define ITERATE_ASYNC 1\n#define READ_BACK 1\n#include "kernel_operator.h"\n', "", "",
     r"race on GM bytes .* of argument 'c': DataCopy .* on pipe MTE2 reads what Fixpipe .* on pipe FIX wrote"),
    ("no SetTensorB", "    mm.SetTensorB(gmB, isTransB);\n", "", "", "", "SetTensorA and SetTensorB come before Iterate"),
    ("IterateAll after End", "#else\n" + LOOP, "#else\n    mm.End();\n" + LOOP, "", "", r"called after End\(\)"),
    ("both blocks write the same C (the n offset dropped)",
     "offsetC = mCoreIndx * tiling.N * tiling.singleCoreM + nCoreIndx * tiling.singleCoreN;",
     "offsetC = mCoreIndx * tiling.N * tiling.singleCoreM;", "", "",
     "writes byte 0 of GM argument 'c' that block [01] also writes, with a different value"),
    ("the tail dropped (250 x 300 on 2 x 128 rows): block 1 computes 6 rows too many",
     "    mm.SetTail(tailM, tailN);\n", "", "#define SHAPE_M 256\n#define SHAPE_N 320",
     "#define SHAPE_M 250\n#define SHAPE_N 300",
     "reads 384 bytes at byte 96000 of GM argument 'a', which holds 96000 bytes: out of bounds"),
]


# Correct edits of the sample (the same fields as MUTANTS): each must pass and match NumPy.
CORRECT: list[tuple[str, Edit, Edit, str, str, str]] = [
    ("REGIST_MATMUL_OBJ without the tiling, then Init(&tiling) (the kernel's TPipe by GetTPipePtr)",
     REGIST, "    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm);\n    mm.Init(&tiling);\n", "", "", ""),
    ("the tiling exactly at L0B: baseK 128 x baseN 128 x 2 bytes x 2 buffers = 64 KiB", "", "", "", "", ""),
]


def _edit(text: str, old: Edit, new: Edit) -> str:
    """``text`` with each ``old`` (one place each) replaced by its ``new``."""
    olds = old if isinstance(old, tuple) else (old,)
    news = new if isinstance(new, tuple) else (new,)
    for o, n in zip(olds, news, strict=True):
        if o:
            assert text.count(o) == 1, o
            text = text.replace(o, n)
    return text


def test_every_matmul_mutant_is_caught(tmp_path: Path) -> None:
    """Each mutant of the sample (kernel or host tiling) is reported with its cause; the correct
    edits are not, and match NumPy."""
    base = _tiling(tmp_path)
    tilings: list[bytes] = []
    sources: list[str] = []
    for _, k_old, k_new, h_old, h_new, _ in [*MUTANTS, *CORRECT]:
        sources.append(_source({}, _edit(KERNEL.read_text(), k_old, k_new)))
        if h_old:
            host = TILING.read_text()
            assert host.count(h_old) == 1, h_old
            (tmp_path / f"h{len(tilings)}.cpp").write_text(host.replace(h_old, h_new))
            tilings.append(host_tiling(f"{tmp_path / f'h{len(tilings)}.cpp'}:GenerateTiling", "Ascend910B1"))
        else:
            tilings.append(base)
    launch = _build(sources, tmp_path)
    missed = []
    for k, (what, *_, expect) in enumerate(MUTANTS):
        t = _fields(tilings[k])
        ins, ref = _data("", t["M"], t["N"], t["Ka"])
        rc, err = _run(launch(k), tilings[k], [*ins, np.zeros(ref.shape, np.float32)], 2)
        if rc == 0 or not re.search(expect, err):
            missed.append(f"{what}: rc={rc} {err[:500]}")
    for k, (what, *_) in enumerate(CORRECT, len(MUTANTS)):  # no false positives
        t = _fields(tilings[k])
        ins, ref = _data("", t["M"], t["N"], t["Ka"])
        c = np.zeros(ref.shape, np.float32)
        rc, err = _run(launch(k), tilings[k], [*ins, c], 2)
        assert rc == 0 and err == "", f"{what}: {err}"
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5, err_msg=what)
    print(f"\nmatmul_custom.cpp: {len(MUTANTS)} Matmul API mutants, {len(MUTANTS) - len(missed)} caught; "
          f"{len(CORRECT)} correct edits not reported")
    assert not missed, "\n".join(missed)


def test_the_single_core_tiling_takes_the_whole_shape() -> None:
    """MatmulApiTiling::GetTiling(TCubeTiling&) (the kernel struct, by the ``S FUNC()`` form):
    one core, int8 k in 32-element fractal rows, L1 loads that fit 310P3's L1."""
    from opsdk.ascend.socs import soc_facts

    t = _fields(host_tiling(f"{MM / 'single_core_tiling.cpp'}:MakeTiling", "Ascend310P3"))
    facts = soc_facts("Ascend310P3")
    assert (t["usedCoreNum"], t["singleCoreM"], t["singleCoreN"], t["singleCoreK"]) == (1, 300, 200, 5000)
    assert t["baseK"] % 32 == 0 and t["baseM"] * t["baseK"] * t["dbL0A"] <= facts["l0a_bytes"]
    assert (t["depthA1"] * t["baseM"] + t["depthB1"] * t["baseN"]) * t["baseK"] <= facts["l1_bytes"]
    assert t["stepKa"] == 4 and t["depthA1"] == 8  # K needs more than 4 loads: double-buffered


def test_a_cann_project_tiling_struct_holds_the_cube_tiling() -> None:
    """TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData) in an op_host tiling class, filled
    by GetTiling(tiling.cubeTilingData) and set_stepM as Huawei's framework-launch samples do."""
    raw = host_tiling(f"{MM / 'project_tiling.cpp'}:MakeTiling", "Ascend910B1")
    assert len(raw) == 8 + 200 and int(np.frombuffer(raw[:8], np.uint64)[0]) == 196608
    t = _fields(raw[8:])
    assert (t["M"], t["N"], t["Ka"], t["baseM"], t["baseN"], t["isBias"], t["stepM"]) == (1024, 640, 256, 128, 128, 1, 1)
    assert t["usedCoreNum"] == 2 and t["shareL1Size"] > 0
