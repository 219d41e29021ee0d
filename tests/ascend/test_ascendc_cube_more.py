"""The rest of the Cube's basic instructions on opsdk's Ascend C model, under g++ and clang++:
the bias table (DataCopy C1 -> C2, Mmad with biasLocal), InitConstValue, LoadDataWithTranspose,
Fixpipe's dequant to half (DEQF16 with deqScalar, VDEQF16 with a scale per column), LoadData
2Dv2 (refused on 220 as CANN 8.1.RC1 refuses it), and a template-library kernel in catlass's
style that clang++ builds and g++ refuses naming GCC bug 85282.

Three small kernels written for these tests (tests/data/ascendc/cube/): each matches NumPy, and
each mutant (a sync removed, a position overflowed by one block, a layout or dtype path
swapped, a field past its width) must be reported. The counts are printed (pytest -s) and in
docs/ascendc_model.md.
"""

from __future__ import annotations

import ctypes
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests._helpers.compilers import model_cxx  # noqa: F401
from tests._helpers.cube_mutants import _edit, sync_mutants
from tests.conftest import build_model_kernel

CUBE = Path(__file__).parents[1] / "data" / "ascendc" / "cube"
BLOCKS = 2
SCALE = 0.0078125  # the dequant kernel's per-tensor scale (exact in 19 bits)
pytestmark = pytest.mark.usefixtures("model_cxx")  # each test under g++ and under clang++

LAUNCH = """extern "C" int launch{k}(uint8_t** gm, const uint64_t* bytes, const char** names, uint32_t blocks, char* err) {{
    return opsdk_ascendc::Run("{entry}", [](uint8_t** g, uint8_t* w, uint8_t* t) {{ m{k}::{entry}{k}({args}); }},
                              gm, bytes, names, {n}, nullptr, blocks, 196608, "ascend910b", 1, 1, err, 4096);
}}
"""


def _scales(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-column scales as the Fixpipe takes them (the float's bits, low 13 mantissa bits dropped,
    bit 46 set as CANN's TransQuantParam does) and their float values."""
    vals = (np.arange(n, dtype=np.float32) % 7 + 1) * np.float32(0.001953125) * np.float32(1.375)
    bits = (vals.view(np.uint32) & np.uint32(0xFFFFE000)).astype(np.uint64) | np.uint64(1 << 46)
    return bits, (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)


def _inputs(name: str, variant: str = "") -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(11)
    if name == "matmul_bias.cpp":  # A[64][32] half, B[32][32] half, bias[32] float -> float
        a = rng.uniform(-1, 1, (BLOCKS * 32, 32)).astype(np.float16)
        b = rng.uniform(-1, 1, (32, 32)).astype(np.float16)
        bias = rng.uniform(-4, 4, 32).astype(np.float32)
        return [a, b, bias], a.astype(np.float32) @ b.astype(np.float32) + bias
    if name == "matmul_dequant.cpp":  # A[64][64] int8, B[64][64] int8, scales[64] -> half
        a = rng.integers(-128, 128, (BLOCKS * 32, 64)).astype(np.int8)
        b = rng.integers(-128, 128, (64, 64)).astype(np.int8)
        bits, vals = _scales(64)
        acc = (a.astype(np.int32) @ b.astype(np.int32)).astype(np.float32)
        scale = vals if variant == "PER_CHANNEL" else np.float32(SCALE)
        return [a, b, bits], (acc * scale).astype(np.float16)
    # mmad_init_const.cpp: B[2][64][32] half -> C[2][16][32] float, every row B's column sums
    b = rng.uniform(-1, 1, (BLOCKS, 64, 32)).astype(np.float16)
    sums = b.astype(np.float32).sum(axis=1, keepdims=True)
    return [b], np.repeat(sums, 16, axis=1).reshape(BLOCKS * 16, 32)


def _build(sources: list[str], nargs: int, where: Path, entry: str = "cube_kernel", aic: bool = True,
           tail: tuple[str, ...] = ("w", "t")) -> Callable[[int], Callable[..., int]]:
    """All ``sources`` in one library, kernel k as launch{k}; ``nargs`` GM arguments, then ``tail``
    (the launcher's workspace ``w`` and tiling ``t``)."""
    parts = [("#define OPSDK_AIC 1\n" if aic else "") + '#include "kernel_operator.h"\n']
    for k, source in enumerate(sources):
        where.mkdir(parents=True, exist_ok=True)
        (where / f"m{k}.cpp").write_text(source)
        parts.append(f'#define {entry} {entry}{k}\nnamespace m{k} {{\n#include "m{k}.cpp"\n}}\n#undef {entry}\n')
    parts.append('#include "opsdk_model_launch.h"\n')
    args = ", ".join([f"g[{i}]" for i in range(nargs)] + list(tail))
    parts += [LAUNCH.format(k=k, entry=entry, args=args, n=nargs) for k in range(len(sources))]
    lib = build_model_kernel(where, "", "".join(parts))
    return lambda k: getattr(lib, f"launch{k}")


def _call(launch: Callable[..., int], arrays: list[np.ndarray], blocks: int = BLOCKS) -> tuple[int, str]:
    n = len(arrays)
    gm = (ctypes.c_void_p * n)(*[x.ctypes.data for x in arrays])
    sizes = (ctypes.c_uint64 * n)(*[x.nbytes for x in arrays])
    names = (ctypes.c_char_p * n)(*[f"arg{i}".encode() for i in range(n)])
    err = ctypes.create_string_buffer(4096)
    launch.restype = ctypes.c_int  # type: ignore[attr-defined]
    rc = launch(gm, sizes, names, ctypes.c_uint32(blocks), err)
    return rc, err.value.decode()


def _run(launch: Callable[..., int], name: str, variant: str = "") -> tuple[int, str, np.ndarray, np.ndarray]:
    ins, expect = _inputs(name, variant)
    out = np.zeros(expect.shape, expect.dtype)
    rc, err = _call(launch, [*ins, out])
    return rc, err, out, expect


NARGS = {"matmul_bias.cpp": 4, "matmul_dequant.cpp": 4, "mmad_init_const.cpp": 2}

# kernel -> (description, text, its replacement, what the report must say)
EDITS: dict[str, list[tuple[str, str | tuple[str, ...], str | tuple[str, ...], str]]] = {
    "matmul_bias.cpp": [
        ("the bias table one 64-byte block past C2", "pipe.InitBuffer(btBuf, N * sizeof(float));",
         "pipe.InitBuffer(btBuf, OPSDK_BT_BYTES + 64);", r"position C2 asks for 1 x 1088 = 1088 bytes of bias table, but Ascend910B1's bias table holds 1024"),
        ("cmatrixInitVal true with a bias: the bias table would not be read", "mmad.cmatrixInitVal = false;",
         "mmad.cmatrixInitVal = true;", "biasLocal is given but cmatrixInitVal is true"),
        ("the float bias moved into the table through a 16-bit path",
         "DataCopy(bt, bias1, {1, static_cast<uint16_t>(N * sizeof(float) / 64), 0, 0});",
         "DataCopy(bt.ReinterpretCast<half>(), bias1.ReinterpretCast<half>(), {1, static_cast<uint16_t>(N * sizeof(float) / 64), 0, 0});",
         r"srcLocal reads L1 bytes .* as half ND data, but DataCopy .* wrote float ND data"),
        ("the bias copied to the table short by one block: its last 16 values never written",
         "DataCopy(bt, bias1, {1, static_cast<uint16_t>(N * sizeof(float) / 64), 0, 0});",
         "DataCopy(bt, bias1, {1, static_cast<uint16_t>(N * sizeof(float) / 64 - 1), 0, 0});", "which nothing wrote"),
        ("the bias table filled straight from GM (no L1 stage)", "DataCopy(bt, bias1, {1,",
         "DataCopy(bt, biasGm, {1,", "dstLocal is in C2 \\(the bias table\\), which is filled from L1 only"),
        ("the bias kept in L1 (C1) and passed to Mmad", "Mmad(c1, a2, b2, bt, mmad);", "Mmad(c1, a2, b2, bias1, mmad);",
         "biasLocal is a tensor of position C1"),
        ("the bias table's blockLen past its field width", "{1, static_cast<uint16_t>(N * sizeof(float) / 64), 0, 0}",
         "{1, 0, 0, 0}", "blockLen is 0; expected 1 to 65535"),
    ],
    "matmul_dequant.cpp": [
        ("int32 to half with NoQuant (the wrong Fixpipe dtype path)", "fix.quantPre = QuantMode_t::DEQF16;",
         "fix.quantPre = QuantMode_t::NoQuant;", "quantPre 0 from int32_t to half"),
        ("a zero deqScalar", "fix.deqScalar = static_cast<uint64_t>(*reinterpret_cast<uint32_t*>(&scale) & 0xFFFFE000u) | (1ULL << 46);",
         "fix.deqScalar = 1ULL << 46;", "DEQF16 with deqScalar 70368744177664: its scale .* is 0"),
        ("VDEQF16 without the scale tensor", "fix.quantPre = QuantMode_t::DEQF16;",
         "fix.quantPre = QuantMode_t::VDEQF16;", "quantPre VDEQF16 takes a scale per output column"),
        ("int8 B transposed by LoadData 2D", "LoadDataWithTranspose(b2[j * 2 * 512], b1, trans);",
         "LoadData(b2[j * 2 * 512], b1, LoadData2DParams(trans.startIndex, trans.repeatTimes, 1, 0, 0, true, 0));",
         "transposes 16 x 16 fractals of 2-byte types only"),
        ("one transposing load short: the last k square of B2 never written", "trans.repeatTimes = K / 32;",
         "trans.repeatTimes = K / 32 - 1;", "which nothing wrote"),
        ("B2 one fractal past L0B", "pipe.InitBuffer(b2Buf, K * N);", "pipe.InitBuffer(b2Buf, OPSDK_L0B_BYTES + 512);",
         "position B2 asks .* of L0B"),
        ("B copied to B1 without Nd2Nz (ND where the transposing load takes NZ)", "DataCopy(b1, bGm, nd2nz);",
         "DataCopy(b1, bGm, K * N);", r"as int8_t NZ fractals, but DataCopy .* wrote int8_t ND data"),
        ("the transposing load's addrMode past its one allowed value", "trans.dstFracGap = 0;",
         "trans.dstFracGap = 0;\n            trans.addrMode = 1;", "addrMode 1: only 0"),
    ],
    "mmad_init_const.cpp": [
        ("InitConstValue one fractal short: the last fractal of A2 never written",
         "InitConstValueParams<half>(1, M * K * sizeof(half) / 512, 0, half(1.0f))",
         "InitConstValueParams<half>(1, M * K * sizeof(half) / 512 - 1, 0, half(1.0f))", "which nothing wrote"),
        ("A2 one fractal past L0A", "pipe.InitBuffer(a2Buf, M * K * sizeof(half));",
         "pipe.InitBuffer(a2Buf, OPSDK_L0A_BYTES + 512);", "position A2 asks .* of L0A"),
        ("InitConstValue writes one fractal past A2", "InitConstValueParams<half>(1, M * K * sizeof(half) / 512, 0,",
         "InitConstValueParams<half>(1, M * K * sizeof(half) / 512 + 1, 0,", r"accesses elements \[0, 1280\)"),
        ("InitConstValue's blockNum past its field width", "InitConstValueParams<half>(1, M * K * sizeof(half) / 512, 0,",
         "InitConstValueParams<half>(1, 32768, 0,", "blockNum is 32768; expected 0 to 32767"),
        ("InitConstValue on CO1", "InitConstValue(a2,", "InitConstValue(c1.ReinterpretCast<half>(),",
         "dstLocal is a tensor of position CO1"),
    ],
}

FOUND = r"race on |which no SetFlag set|is never waited for|is set again before|PipeBarrier<PIPE_M>"


def _mutants(name: str) -> list[tuple[str, str, str]]:
    source = (CUBE / name).read_text()
    out = [(what, text, FOUND) for what, text in sync_mutants(source)]
    for what, old, new, expect in EDITS[name]:
        out.append((what, _edit(source, old, new), expect))
    return out


@pytest.mark.parametrize("name", sorted(EDITS))
def test_correct_kernel_matches_numpy(name: str, tmp_path: Path) -> None:
    """Each kernel (the dequant one with one scale and with a scale per column) matches NumPy:
    float sums of half products plus the bias; int32 sums scaled and rounded to half; sums of B."""
    source = (CUBE / name).read_text()
    variants = [("", source)] + ([("PER_CHANNEL", "#define PER_CHANNEL 1\n" + source)]
                                 if name == "matmul_dequant.cpp" else [])
    launch = _build([text for _, text in variants], NARGS[name], tmp_path)
    for k, (variant, _) in enumerate(variants):
        rc, err, out, expect = _run(launch(k), name, variant)
        assert rc == 0 and err == "", err
        if name == "matmul_dequant.cpp":
            np.testing.assert_array_equal(out, expect)
        else:
            np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-4)


@pytest.mark.mutants
@pytest.mark.parametrize("name", sorted(EDITS))
def test_every_mutant_is_caught(name: str, tmp_path: Path) -> None:
    cases = _mutants(name)
    launch = _build([text for _, text, _ in cases], NARGS[name], tmp_path)
    missed = []
    for k, (what, _, expect) in enumerate(cases):
        rc, err, _, _ = _run(launch(k), name)
        if rc == 0 or not re.search(expect, err):
            missed.append(f"{what}: rc={rc} {err[:400]}")
    print(f"\n{name}: {len(cases)} cube mutants, {len(cases) - len(missed)} caught")
    assert not missed, "\n".join(missed)
    assert len(cases) >= 8


def test_loaddata_2dv2_is_refused_on_220_as_cann_refuses_it(tmp_path: Path) -> None:
    source = (CUBE / "mmad_init_const.cpp").read_text().replace(
        "LoadData(b2[i * 16 * N], b1, load);",
        "LoadData(b2[i * 16 * N], b1, LoadData2DParamsV2(0, i * 16, N / 16, 1, K / 16, 0, true, 0));")
    rc, err, _, _ = _run(_build([source], 2, tmp_path)(0), "mmad_init_const.cpp")
    assert rc == 1 and "LoadData with LoadData2DParamsV2: not supported on Ascend910B1" in err, err


def test_the_float_transposing_load_takes_two_16x8_fractals_as_one_square(tmp_path: Path) -> None:
    """LoadDataWithTranspose of float: a 16 x 16 square from two consecutive 16 x 8 fractals,
    transposed and split into two fractals dstFracGap apart. B (16 x 16, ND in GM) goes to B1 as
    NZ (two column blocks of 16 rows, adjacent) and through the load to L0B; Mmad with A gives A B."""
    source = _edit((CUBE / "matmul_bias.cpp").read_text().replace("half", "float"),
                   ("constexpr uint32_t N = 32;", "constexpr uint32_t K = 32;"),
                   ("constexpr uint32_t N = 16;", "constexpr uint32_t K = 16;"))
    loads = source[source.index("        LoadData2DParams load;"):source.index("        SetFlag<HardEvent::MTE1_M>")]
    source = source.replace(loads, """        LoadData2DParams load;
        for (uint32_t i = 0; i < M / 16; ++i) {
            load.startIndex = i;
            load.repeatTimes = K / 8;
            load.srcStride = M / 16;
            LoadData(a2[i * 16 * K], a1, load);
        }
        LoadDataWithTranspose(b2, b1, LoadData2dTransposeParams(0, 1, 1, 0, 0));
""")
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (BLOCKS * 32, 16)).astype(np.float32)
    b = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    bias = rng.uniform(-4, 4, 16).astype(np.float32)
    out = np.zeros((BLOCKS * 32, 16), np.float32)
    rc, err = _call(_build([source], 4, tmp_path)(0), [a, b, bias, out])
    assert rc == 0 and err == "", err
    np.testing.assert_allclose(out, a @ b + bias, rtol=1e-5, atol=1e-5)


CATLASS = CUBE / "catlass_style_matmul.cpp"


def test_catlass_style_kernel_runs_under_clang_and_g_plus_plus_names_the_bug(model_cxx: str,  # noqa: F811
                                                                             tmp_path: Path) -> None:
    """clang++: the Cube build runs operator()<AIC> (A B into the workspace), the vector build
    operator()<AIV> (ReLU of the workspace into C), in stream order, and C matches NumPy. g++
    refuses the class, and the model's build says why (GCC bug 85282) and how (clang++)."""
    from opsdk.ascend.ascendc import run_kernel_file
    from opsdk.errors import BuildError

    if "clang" not in model_cxx:
        with pytest.raises(BuildError, match=r"GCC bug 85282.*build with clang\+\+ \(--cxx clang\+\+"):
            run_kernel_file(CATLASS, "catlass_style_matmul", block_dim=BLOCKS, soc="Ascend910B3",
                            inputs={"a": np.zeros((BLOCKS * 32, 64), np.float16),
                                    "b": np.zeros((64, 32), np.float16)},
                            outputs={"c": (np.float32, (BLOCKS * 32, 32))}, tiling=bytes(32), cxx=model_cxx)
        return
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (BLOCKS * 32, 64)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 32)).astype(np.float16)
    c = np.zeros((BLOCKS * 32, 32), np.float32)
    workspace = np.full((BLOCKS * 32, 32), np.nan, np.float32)
    source = CATLASS.read_text()
    for aic in (True, False):
        # the GM workspace is the entry's fourth GM argument, a NumPy array here
        launch = _build([source], 4, tmp_path / ("aic" if aic else "aiv"), "catlass_style_matmul", aic, ("t",))
        rc, err = _call(launch(0), [a, b, c, workspace])
        assert rc == 0 and err == "", err
    expect = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(workspace, expect, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, np.maximum(expect, 0), rtol=1e-5, atol=1e-5)


def test_g_plus_plus_itself_rejects_the_class_scope_specialisation(tmp_path: Path) -> None:
    """The refusal is the compiler's (GCC bug 85282), not the model's: plain g++ on a 10-line class."""
    import shutil

    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    (tmp_path / "k.cpp").write_text(
        "struct K {\n  template <int C = 1> void run();\n  template <> void run<1>() {}\n"
        "  template <> void run<2>() {}\n};\nint main() { K k; k.run(); }\n")
    proc = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "k.cpp"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "explicit specialization in non-namespace scope" in proc.stderr
