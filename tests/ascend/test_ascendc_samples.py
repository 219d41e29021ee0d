"""Vector kernel-launch samples, written for opsdk in the manner of Huawei's public asc-devkit
samples (each file names the sample it mirrors; none of their code is here), run end to end
through ``opsdk ascendc run``: compiled against the model, run with the race checker and the
SoC's limits, outputs against NumPy, and estimated. The table of docs/ascendc_model.md
("Sample kernels") lists them with their figures.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from opsdk.cli import main

SAMPLES = Path(__file__).parents[1] / "data" / "ascendc" / "samples"
RNG = np.random.default_rng(44)


@dataclass(frozen=True)
class Sample:
    entry: str
    block_dim: int
    inputs: dict[str, np.ndarray]
    outputs: dict[str, tuple[str, tuple[int, ...]]]
    tiling: bytes
    expect: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
    exact: bool = True


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _f16(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float16)


_ADD = {"x": _f16(8 * 2048), "y": _f16(8 * 2048)}
_PAD = {"x": _f32(16 * 37)}
_GATHER_SRC = _f16(128)
_GATHER_OFF = (RNG.permutation(128).astype(np.uint32) * 2)
_MASK_SRC = RNG.integers(0, 1 << 30, 256).astype(np.int32)
_CAST = {"x": (RNG.standard_normal(512) * 100).astype(np.float32)}
_CMP = {"x": _f32(256), "y": _f32(256)}
_BRCB = {"x": _f32(16)}
_LEAKY = {"x": _f16(1000)}


def _leaky(x: np.ndarray) -> np.ndarray:
    alpha = np.float16(0.1)
    return np.where(x >= 0, x, (x.astype(np.float32) * np.float32(alpha)).astype(np.float16))


CASES: dict[str, Sample] = {
    "add_tque": Sample("add_tque", 8, _ADD, {"z": ("float16", (8 * 2048,))},
                       struct.pack("<II", 2048, 8), lambda i: {"z": i["x"] + i["y"]}),
    "data_copy_pad": Sample("data_copy_pad", 1, _PAD, {"y": ("float32", (16 * 37,))},
                            struct.pack("<II", 16, 37), lambda i: {"y": i["x"] + np.float32(1)}),
    "gather_offsets": Sample("gather_offsets", 1, {"src": _GATHER_SRC, "offsets": _GATHER_OFF},
                             {"dst": ("float16", (128,))}, b"",
                             lambda i: {"dst": i["src"][i["offsets"] // 2]}),
    "gather_mask": Sample("gather_mask", 1, {"src": _MASK_SRC},
                          {"dst": ("int32", (128,)), "kept": ("int32", (8,))}, b"",
                          lambda i: {"dst": i["src"][1::2], "kept": np.full(8, 128, np.int32)}),
    "cast_modes": Sample("cast_modes", 1, _CAST,
                         {"h": ("float16", (512,)), "i": ("int32", (512,))}, b"",
                         lambda i: {"h": i["x"].astype(np.float16),
                                    "i": np.floor(i["x"]).astype(np.int32)}),
    "compare_select": Sample("compare_select", 1, _CMP, {"z": ("float32", (256,))}, b"",
                             lambda i: {"z": np.minimum(i["x"], i["y"])}),
    "brcb": Sample("brcb", 1, _BRCB, {"y": ("float32", (128,))}, b"",
                   lambda i: {"y": np.repeat(i["x"], 8)}),
    "brcb_static": Sample("brcb_static", 1, {"x": RNG.integers(-999, 999, 16).astype(np.int16)},
                          {"y": ("int16", (256,))}, b"",
                          lambda i: {"y": np.repeat(i["x"], 16)}),
    "leaky_relu": Sample("leaky_relu", 4, _LEAKY, {"y": ("float16", (1000,))},
                         struct.pack("<IIIf", 1000, 256, 128, 0.1),
                         lambda i: {"y": _leaky(i["x"])}, exact=False),
    "create_vec_index": Sample("create_vec_index", 1, {}, {"f": ("float32", (200,)),
                                                           "i": ("int32", (200,))},
                               struct.pack("<If", 200, 5.0),
                               lambda i: {"f": np.arange(5, 205, dtype=np.float32),
                                          "i": np.arange(5, 205, dtype=np.int32)}),
}


def _run(tmp_path: Path, name: str, sample: Sample, capsys: pytest.CaptureFixture[str]) -> dict:
    args = ["ascendc", "run", str(SAMPLES / f"{name}.cpp"), "--entry", sample.entry,
            "--block-dim", str(sample.block_dim), "--soc", "Ascend910B3", "--estimate", "--json",
            "--out-dir", str(tmp_path / "out")]
    for k, v in sample.inputs.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    for k, (dtype, shape) in sample.outputs.items():
        args += ["--output", f"{k}={dtype}:{'x'.join(map(str, shape))}"]
    if sample.tiling:
        (tmp_path / "tiling.bin").write_bytes(sample.tiling)
        args += ["--tiling", str(tmp_path / "tiling.bin")]
    assert main(args) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", list(CASES))
def test_sample_runs_right_race_free_and_estimated(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = CASES[name]
    report = _run(tmp_path, name, sample, capsys)
    assert report["race_checker"] == "clean"
    want = sample.expect(sample.inputs)
    for k, expected in want.items():
        got = np.load(tmp_path / "out" / f"{k}.npy")
        assert got.dtype == expected.dtype and got.shape == expected.shape, k
        if sample.exact:
            np.testing.assert_array_equal(got, expected, err_msg=k)
        else:  # one rounding of the product to half either way
            np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32),
                                       rtol=1e-3, atol=1e-3, err_msg=k)
    est = report["estimate"]
    assert est["block_dim"] == sample.block_dim and est["cycles"] > 0
    assert est["bound"].endswith("-bound")


def test_a_local_mem_allocator_cuts_the_unified_buffer_and_checks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LocalMemAllocator (asc-devkit, newer than 8.1) hands out tensors one after another; one
    past the Unified Buffer fails naming the constructor's check."""
    src = (SAMPLES / "brcb_static.cpp").read_text()
    big = src.replace("ub.Alloc<int16_t, 256>()", "ub.Alloc<int16_t, 256 * 1024>()")
    assert big != src
    path = tmp_path / "brcb_big.cpp"
    path.write_text(big)
    np.save(tmp_path / "x.npy", np.zeros(16, np.int16))
    args = ["ascendc", "run", str(path), "--entry", "brcb_static", "--block-dim", "1",
            "--soc", "Ascend910B3", "--input", f"x={tmp_path / 'x.npy'}",
            "--output", "y=int16:256", "--out-dir", str(tmp_path / "out")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "LocalTensor(TPosition, addr, tileSize)" in err and "runs past the Unified Buffer" in err


def test_create_vec_index_races_like_its_implementation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CreateVecIndex stores its first block from the scalar unit, as 8.1 does: writing into a
    buffer the vector unit still reads, without a V_S flag first, is a race."""
    src = (SAMPLES / "create_vec_index.cpp").read_text()
    racy = src.replace("    AscendC::CreateVecIndex(fl, t.first, t.count);\n",
                       "    AscendC::Duplicate(fl, 1.0f, static_cast<int32_t>(t.count));\n"
                       "    AscendC::CreateVecIndex(fl, t.first, t.count);\n")
    assert racy != src
    path = tmp_path / "create_vec_index.cpp"
    path.write_text(racy)
    (tmp_path / "tiling.bin").write_bytes(struct.pack("<If", 200, 5.0))
    args = ["ascendc", "run", str(path), "--entry", "create_vec_index", "--block-dim", "1",
            "--soc", "Ascend910B3", "--output", "f=float32:200", "--output", "i=int32:200",
            "--tiling", str(tmp_path / "tiling.bin"), "--out-dir", str(tmp_path / "out")]
    assert main(args) == 1
    err = capsys.readouterr().err
    line = racy.splitlines().index("    AscendC::CreateVecIndex(fl, t.first, t.count);") + 1
    assert "race on Unified Buffer bytes [0, 4)" in err
    assert f"LocalTensor::SetValue (create_vec_index.cpp:{line}) on pipe S overwrites" in err
    assert "SetFlag<HardEvent::V_S>" in err
