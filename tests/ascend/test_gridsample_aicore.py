"""GridSample's hand-written AI Core kernel (operators/grid_sample/op_kernel/) on opsdk's Ascend
C model: every mode / padding / align_corners it takes, float32, float16 and the mixed dtype
pairs, against the operator's NumPy reference, with the race checker on; what it refuses (the
calls AI CPU keeps); its estimate; the CANN project taking it as the AI Core kernel where the
SoC has the APIs; and mutants of it (a dropped synchronisation, an off-by-one clamp) that the
model must catch.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opsdk.ascend.ascendc import Tiling, TilingField, run_kernel_file
from opsdk.ascend.ascendc._tiling import cpp_tiling, dim_facts
from opsdk.ascend.ascendc.model import AscendcModel
from opsdk.errors import DeviceUnavailable, KernelError, SpecError

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "operators" / "grid_sample"
KERNEL = FOLDER / "op_kernel" / "grid_sample.cpp"
FILES = Path(__file__).parents[1] / "data" / "ascendc_files"


def _reference() -> Any:
    spec = importlib.util.spec_from_file_location("_gs_reference", FOLDER / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference


REFERENCE = _reference()


def _inputs(shape_x: tuple[int, ...], out_hw: tuple[int, int], dx: type, dg: type,
            spread: float = 1.3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x: np.ndarray = rng.standard_normal(shape_x).astype(dx)
    grid: np.ndarray = rng.uniform(-spread, spread, (shape_x[0], *out_hw, 2)).astype(dg)
    return x, grid


def _check(model: AscendcModel, x: np.ndarray, grid: np.ndarray, attrs: dict) -> None:
    (y,) = model.run([x, grid], attrs)
    want = REFERENCE(x, grid, **attrs)
    tol = 1e-5 if x.dtype == np.float32 else 2e-3
    np.testing.assert_allclose(y.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True, err_msg=str(attrs))


@pytest.fixture(scope="module")
def model() -> AscendcModel:
    return AscendcModel(FOLDER, soc="Ascend910B3")


MODES = [(m, p, a) for m in ("linear", "bilinear", "nearest") for p in ("zeros", "border")
         for a in (0, 1)]


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.float16, np.float16),
                                    (np.float32, np.float16), (np.float16, np.float32)],
                         ids=["float32", "float16", "x32-grid16", "x16-grid32"])
def test_every_mode_padding_and_align_matches_the_reference(
    model: AscendcModel, dtypes: tuple[type, type]
) -> None:
    # 30 output pixels per image (a part tile, unaligned copies), 2 images x 3 channels
    x, grid = _inputs((2, 3, 7, 9), (5, 6), *dtypes)
    for mode, padding, align in MODES:
        _check(model, x, grid, {"mode": mode, "padding_mode": padding, "align_corners": align})


@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend310B1"])
def test_many_tiles_channel_groups_and_other_socs(soc: str) -> None:
    """Images larger than a tile (several tiles per image, a tail tile), one image with fewer
    tiles than cores (its channels split into groups), on a 220 and a 300 SoC."""
    model = AscendcModel(FOLDER, soc=soc)
    for shape_x, out_hw in (((2, 3, 20, 30), (40, 70)), ((1, 16, 8, 8), (9, 11))):
        x, grid = _inputs(shape_x, out_hw, np.float32, np.float32, spread=1.1)
        for attrs in ({"mode": "linear"}, {"mode": "nearest", "padding_mode": "border"}):
            _check(model, x, grid, attrs)


def test_non_finite_coordinates_and_image_values_follow_the_reference(model: AscendcModel) -> None:
    """NaN, +-Inf and huge grid values (zeros: NaN for linear, 0 for nearest; border: the
    clamped pixel), and NaN pixels that only an outside corner would touch (they must not
    leak into the result through a zero weight)."""
    x, grid = _inputs((1, 2, 5, 6), (4, 8), np.float32, np.float32)
    grid[0, 0, :6, 0] = [np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-40]
    grid[0, 1, :3, 1] = [np.nan, np.inf, -np.inf]
    x[0, :, 0, 0] = np.nan  # read with weight 0 by corners left of / above the image
    x[0, :, 4, 5] = np.nan
    for mode, padding, align in MODES:
        _check(model, x, grid, {"mode": mode, "padding_mode": padding, "align_corners": align})


@pytest.mark.parametrize("shapes, attrs, why", [
    (((1, 2, 4, 5), (1, 3, 3, 2)), {"mode": "cubic"}, "mode='cubic'"),
    (((1, 2, 4, 5), (1, 3, 3, 2)), {"padding_mode": "reflection"}, "padding_mode='reflection'"),
    (((1, 2, 3, 4, 5), (1, 2, 2, 2, 3)), {}, "it samples 2-D images"),
    (((1, 1, 130, 130), (1, 2, 2, 2)), {}, "at most 16384"),
])
def test_calls_out_of_reach_are_refused_with_the_reason(
    model: AscendcModel, shapes: tuple, attrs: dict, why: str
) -> None:
    x = np.zeros(shapes[0], np.float32)
    grid = np.zeros(shapes[1], np.float32)
    with pytest.raises(DeviceUnavailable, match="GridSample's AI Core kernel") as info:
        model.run([x, grid], attrs)
    assert why in str(info.value) and "AI CPU" in str(info.value)


def test_socs_without_the_apis_are_refused_by_name() -> None:
    x, grid = _inputs((1, 1, 4, 4), (2, 2), np.float32, np.float32)
    with pytest.raises(DeviceUnavailable, match="DataCopyPad: not in the Ascend C of Ascend310P3"):
        AscendcModel(FOLDER, soc="Ascend310P3").run([x, grid], {})
    with pytest.raises(DeviceUnavailable, match="Gather: not in the Ascend C of Ascend910A"):
        AscendcModel(FOLDER, soc="Ascend910A").run([x, grid], {})


def test_the_estimate_and_the_channel_groups(model: AscendcModel) -> None:
    x, grid = _inputs((1, 32, 64, 64), (64, 64), np.float32, np.float32, spread=1.0)
    est = model.estimate([x, grid], {"mode": "linear"})
    want = REFERENCE(x, grid, mode="linear")
    np.testing.assert_allclose(est.outputs[0], want, rtol=1e-5, atol=1e-5)
    # 4096 pixels are 4 tiles of 1024 on 910B3; 40 cores: the 32 channels go in 8 groups of 4
    assert est.block_dim == 32 and est.bound == "MTE2-bound"
    assert 0 < est.microseconds < 1e4
    again = model.estimate([x, grid], {"mode": "linear"})
    assert again.cycles == est.cycles  # the model's figures are deterministic


def test_the_cann_project_takes_the_kernel_where_the_soc_has_the_apis(tmp_path: Path) -> None:
    from opsdk.cli import main

    out = tmp_path / "gs"
    assert main(["cann", str(FOLDER), "-o", str(out), "--soc", "Ascend910B3"]) == 0
    kernel = (out / "op_kernel" / "grid_sample.cpp").read_text()
    assert "a copy of op_kernel/grid_sample.cpp" in kernel and "Gather(" in kernel
    host = (out / "op_host" / "grid_sample.cpp").read_text()
    assert "context->GetInputShape(1)" in host and "outW" in host  # the grid's dims
    assert "SetBlockDim" in host
    assert "channelGroups" in (out / "op_host" / "grid_sample_tiling.h").read_text()
    assert (out / "aicpu/opsdk/kernels/grid_sample.cpp").is_file()  # AI CPU behind it
    out = tmp_path / "p"
    assert main(["cann", str(FOLDER), "-o", str(out), "--soc", "ascend310p"]) == 0
    assert not (out / "op_kernel").exists() and (out / "aicpu").is_dir()


def test_tiling_dims_are_facts_of_the_call() -> None:
    t = Tiling("Demo", (TilingField("hw"),), (("hw", "inH * inW"),), "1",
               dims=(("inH", 0, -2), ("inW", 0, -1)))
    assert dim_facts(t, [(2, 3, 5, 7)]) == {"inH": 5, "inW": 7}
    with pytest.raises(SpecError, match="tiling fact inH reads dim -2 of input 0, which has "
                       r"shape \[4\]"):
        dim_facts(t, [(4,)])
    text = cpp_tiling(t)
    assert "context->GetInputShape(0)" in text and "GetDimNum() - 2" in text
    with pytest.raises(SpecError, match="reads 'inH' before it is defined"):
        Tiling("Demo", (TilingField("hw"),), (("hw", "inH"),), "1")


def test_cast_int32_to_float_rounds_by_its_mode() -> None:
    """The model cast int32 -> float (a documented pair) failed to compile; now exact below
    2^24 and rounded by the mode above it."""
    x = np.array([0, -7, 123456, 16777217, -16777217, 2147483647, 33554435, 5] * 8, np.int32)
    outs = {}
    for mode in range(4):  # CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL (the tiling's int)
        run = run_kernel_file(FILES / "cast_int_float.cpp", "cast_int_float", block_dim=1,
                              soc="Ascend910B3", inputs={"x": x},
                              outputs={"y": (np.float32, x.shape)},
                              tiling=np.int32(mode).tobytes())
        outs[mode] = run.outputs["y"].astype(np.float64)
    exact = x.astype(np.float64)
    np.testing.assert_array_equal(outs[0], x.astype(np.float32))  # nearest even
    np.testing.assert_array_equal(outs[1], x.astype(np.float32))
    assert (outs[2] <= exact).all() and (outs[3] >= exact).all()
    assert outs[2][3] == 16777216 and outs[3][3] == 16777218 and outs[2][4] == -16777218


# --------------------------------------------------------------------------- mutants
MUTANTS = {
    "the S -> V flag after the offsets' SetValue": (
        "        SetFlag<HardEvent::S_V>(e);\n        WaitFlag<HardEvent::S_V>(e);\n", "", "race"),
    "the plane queue's EnQue/DeQue (MTE2 -> V)": (
        "        planeQue_.EnQue(plane);\n        plane = planeQue_.DeQue<T>();\n", "", "race"),
    "the output queue's EnQue/DeQue (V -> MTE3)": (
        "        outQue_.EnQue(out);\n        out = outQue_.DeQue<T>();\n", "", "race"),
    "the border clamp at d instead of d - 1": (
        "Mins(u, u, border_ ? d - 1.0f : d + 1.0f, k);",
        "Mins(u, u, border_ ? d : d + 1.0f, k);", "mismatch"),
    "the tap clamp at d instead of d - 1": (
        "Mins(clamped, clamped, d - 1.0f, k);", "Mins(clamped, clamped, d, k);", "mismatch"),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_mutants_are_caught(tmp_path: Path, name: str) -> None:
    old, new, caught_as = MUTANTS[name]
    folder = tmp_path / "grid_sample"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__"))
    source = folder / "op_kernel" / "grid_sample.cpp"
    text = source.read_text()
    assert text.count(old) == 1, f"the mutant's text is not in {KERNEL}"
    source.write_text(text.replace(old, new))
    model = AscendcModel(folder, soc="Ascend910B3")
    x, grid = _inputs((1, 2, 6, 7), (5, 9), np.float32, np.float32, spread=1.5)
    caught = []
    for attrs in ({"mode": "linear", "padding_mode": "border"},
                  {"mode": "nearest", "padding_mode": "border"}, {"mode": "linear"}):
        try:
            (y,) = model.run([x, grid], attrs)
        except KernelError as e:
            caught.append(("race" if "race on" in str(e) else "error", str(e)))
            continue
        if not np.allclose(y, REFERENCE(x, grid, **attrs), rtol=1e-5, atol=1e-5, equal_nan=True):
            caught.append(("mismatch", str(attrs)))
    assert caught, f"mutant {name!r} passed every call"
    assert any(kind == caught_as for kind, _ in caught), caught
