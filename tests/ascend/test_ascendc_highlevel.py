"""The high-level library of CANN 8.1 on opsdk's Ascend C model: SoftMax, SimpleSoftMax,
SoftmaxFlashV2, LogSoftMax, RmsNorm and LayerNorm in kernel-launch kernels written for these tests
(`tests/data/ascendc_hl/`), their tilings made by host tiling functions calling the model's host
API (`GetSoftMaxMinTmpSize`, `SoftMaxTilingFunc`, `GetRmsNormTilingInfo`,
`GetLayerNormNDTillingInfo`, ...), run on 2 blocks with the race checker against NumPy; a tmp
buffer too small for the tiling's chunk fails naming the size the host API gives; a missing flag
before a high-level call is a race naming the call's line.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc import host_tiling, run_kernel_file
from opsdk.cli import main
from opsdk.errors import OpsdkError

HL = Path(__file__).parents[1] / "data" / "ascendc_hl"
KERNELS = HL / "hl_kernels.cpp"
ROWS, COLS, BLOCKS = 16, 64, 2  # hl_host.cpp's ROWS x COLS per block


def _x(dtype: type, scale: float = 3.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((BLOCKS * ROWS, COLS)) * scale).astype(dtype)


def _run(entry: str, func: str, inputs: dict[str, np.ndarray],
         outputs: dict[str, tuple[type, tuple[int, ...]]]) -> dict[str, np.ndarray]:
    tiling = host_tiling(f"{HL / 'hl_host.cpp'}:{func}")
    return run_kernel_file(KERNELS, entry, block_dim=BLOCKS, soc="Ascend910B3", inputs=inputs,
                           outputs=outputs, tiling=tiling).outputs


def _softmax(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x64 = x.astype(np.float64)
    mx = x64.max(axis=1, keepdims=True)
    e = np.exp(x64 - mx)
    s = e.sum(axis=1, keepdims=True)
    return e / s, s[:, 0], mx[:, 0]


def _rows(v: np.ndarray, per: int) -> np.ndarray:
    """Each row's value of a max/sum output (one 32-byte block per row, every element the same)."""
    blocks = v.reshape(-1, per)
    assert (blocks == blocks[:, :1]).all(), "a row's block must hold one value"
    return blocks[:, 0]


def test_the_host_api_gives_the_tmp_sizes_of_cann_8_1() -> None:
    sizes = struct.unpack("<9I", host_tiling(f"{HL / 'hl_host.cpp'}:TmpSizesOf"))
    # per row: 32 bytes of max/sum, the row in float for half, 64 floats of reduction scratch
    assert sizes[:4] == ((8 + 64 + 64) * 4, ROWS * (8 + 64 + 64) * 4,
                         (16 + 64 + 64) * 4, ROWS * (16 + 64 + 64) * 4)
    assert sizes[4] == (2 * 16 + 64 + 64) * 4  # SoftmaxFlashV2, half in and out
    assert sizes[5:7] == (3 * 256 + 2 * 64, 3 * ROWS * 256 + 2 * 64)  # LayerNorm: 3 float rows + mean, var
    assert sizes[7:9] == ((2 * 64 + 8) * 4, (2 * ROWS * 64 + 16) * 4)  # RmsNorm half


@pytest.mark.parametrize(("dtype", "func", "tol"), [
    (np.float32, "SoftmaxFloatMax", 1e-6), (np.float32, "SoftmaxFloatMin", 1e-6),
    (np.float16, "SoftmaxHalfMax", 1e-3), (np.float16, "SoftmaxHalfMin", 1e-3)])
def test_softmax_matches_numpy(dtype: type, func: str, tol: float) -> None:
    x = _x(dtype)
    per = 32 // np.dtype(dtype).itemsize
    n = BLOCKS * ROWS * per
    out = _run("softmax_float" if dtype == np.float32 else "softmax_half", func, {"x": x},
               {"y": (dtype, x.shape), "sum": (dtype, (n,)), "max": (dtype, (n,))})
    ref, s, mx = _softmax(x)
    np.testing.assert_allclose(out["y"].astype(np.float64), ref, atol=tol, rtol=tol)
    np.testing.assert_array_equal(_rows(out["max"], per), x.max(axis=1))
    np.testing.assert_allclose(_rows(out["sum"], per).astype(np.float64), s, rtol=tol * 2)


def test_simple_softmax_takes_the_row_sum_and_max() -> None:
    x = _x(np.float32)
    _, s, mx = _softmax(x)
    insum = np.repeat(s.astype(np.float32), 8)
    inmax = np.repeat(mx.astype(np.float32), 8)
    out = _run("simple_softmax_float", "SoftmaxFloatMin", {"x": x, "insum": insum, "inmax": inmax},
               {"y": (np.float32, x.shape)})
    np.testing.assert_allclose(out["y"], _softmax(x)[0], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(("dtype", "func", "tol"), [(np.float32, "FlashFloat", 1e-6),
                                                    (np.float16, "FlashHalf", 2e-3)])
def test_softmax_flash_v2_updates_the_running_max_and_sum(dtype: type, func: str, tol: float) -> None:
    x = _x(dtype)
    per = 32 // np.dtype(dtype).itemsize
    rng = np.random.default_rng(1)
    prev_max: np.ndarray = (rng.standard_normal(BLOCKS * ROWS) * 3).astype(dtype)
    prev_sum: np.ndarray = rng.uniform(1, 50, BLOCKS * ROWS).astype(dtype)
    n = BLOCKS * ROWS * per
    out = _run(f"flash_{'float' if dtype == np.float32 else 'half'}", func,
               {"x": x, "inmax": np.repeat(prev_max, per), "insum": np.repeat(prev_sum, per)},
               {"y": (dtype, x.shape), "max": (dtype, (n,)), "sum": (dtype, (n,)), "expmax": (dtype, (n,))})
    x64, pm, ps = x.astype(np.float64), prev_max.astype(np.float64), prev_sum.astype(np.float64)
    new_max = np.maximum(pm, x64.max(axis=1))
    e = np.exp(x64 - new_max[:, None])
    exp_max = np.exp(pm - new_max)
    np.testing.assert_array_equal(_rows(out["max"], per), new_max.astype(dtype))
    np.testing.assert_allclose(out["y"].astype(np.float64), e, atol=tol, rtol=tol)
    np.testing.assert_allclose(_rows(out["expmax"], per).astype(np.float64), exp_max, atol=tol, rtol=tol)
    np.testing.assert_allclose(_rows(out["sum"], per).astype(np.float64), exp_max * ps + e.sum(axis=1),
                               rtol=tol * 2)


def test_log_softmax_matches_numpy() -> None:
    x = _x(np.float32)
    out = _run("log_softmax_float", "LogSoftmaxFloat", {"x": x}, {"y": (np.float32, x.shape)})
    x64 = x.astype(np.float64)
    ref = x64 - x64.max(axis=1, keepdims=True)
    ref -= np.log(np.exp(ref).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(out["y"], ref, atol=2e-6, rtol=1e-6)


@pytest.mark.parametrize(("dtype", "func", "tol"), [
    (np.float32, "RmsNormFloat", 2e-6), (np.float32, "RmsNormFloatMin", 2e-6), (np.float16, "RmsNormHalf", 2e-3)])
def test_rmsnorm_matches_numpy(dtype: type, func: str, tol: float) -> None:
    x = _x(dtype, 1.0)
    gamma: np.ndarray = np.random.default_rng(2).uniform(0.5, 1.5, COLS).astype(dtype)
    out = _run(f"rmsnorm_{'float' if dtype == np.float32 else 'half'}", func, {"x": x, "gamma": gamma},
               {"y": (dtype, x.shape)})
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-5) * gamma.astype(np.float64)
    np.testing.assert_allclose(out["y"].astype(np.float64), ref, atol=tol, rtol=tol)


@pytest.mark.parametrize(("dtype", "func", "tol"), [
    (np.float32, "LayerNormFloat", 2e-6), (np.float32, "LayerNormFloatMin", 2e-6), (np.float16, "LayerNormHalf", 2e-3)])
def test_layernorm_matches_numpy(dtype: type, func: str, tol: float) -> None:
    x = _x(dtype, 2.0) + dtype(0.5)
    rng = np.random.default_rng(3)
    gamma: np.ndarray = rng.uniform(0.5, 1.5, COLS).astype(dtype)
    beta: np.ndarray = rng.uniform(-1, 1, COLS).astype(dtype)
    n = BLOCKS * ROWS
    out = _run(f"layernorm_{'float' if dtype == np.float32 else 'half'}", func,
               {"x": x, "gamma": gamma, "beta": beta},
               {"y": (dtype, x.shape), "mean": (dtype, (n,)), "var": (dtype, (n,))})
    x64 = x.astype(np.float64)
    mu, var = x64.mean(axis=1), x64.var(axis=1)
    ref = (x64 - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * gamma.astype(np.float64) + beta.astype(np.float64)
    np.testing.assert_allclose(out["mean"].astype(np.float64), mu, atol=tol, rtol=tol)
    np.testing.assert_allclose(out["var"].astype(np.float64), var, atol=tol, rtol=tol * 2)
    np.testing.assert_allclose(out["y"].astype(np.float64), ref, atol=tol * 2, rtol=tol)


@pytest.mark.parametrize(("entry", "func", "inputs", "message"), [
    ("softmax_half", "SoftmaxHalfShort", ("x",),
     "SoftMax: has 9184 bytes of tmp space (the sharedTmpBuffer); the tiling's chunk of 16 rows needs 9216 bytes; "
     "GetSoftMaxMinTmpSize gives 576 bytes for 16 x 64 half"),
    ("rmsnorm_half", "RmsNormHalfShort", ("x", "gamma"),
     "RmsNorm: has 64 bytes of tmp space (the sharedTmpBuffer); the tiling's chunk of 16 rows needs 8256 bytes; "
     "GetRmsNormMaxMinTmpSize gives a minimum of 544 bytes"),
])
def test_a_tmp_buffer_too_small_names_the_size_the_host_api_gives(
        entry: str, func: str, inputs: tuple[str, ...], message: str) -> None:
    dtype = np.float32 if entry.endswith("float") else np.float16
    arrays = {name: (_x(dtype) if name == "x" else np.ones(COLS, dtype)) for name in inputs}
    outs: dict[str, tuple[type, tuple[int, ...]]] = {"y": (dtype, (BLOCKS * ROWS, COLS))}
    if entry.startswith("softmax"):
        per = 32 // np.dtype(dtype).itemsize
        outs |= {"sum": (dtype, (BLOCKS * ROWS * per,)), "max": (dtype, (BLOCKS * ROWS * per,))}
    with pytest.raises(OpsdkError) as err:
        _run(entry, func, arrays, outs)
    assert message in str(err.value), str(err.value)
    assert "[at hl_kernels.cpp:" in str(err.value), str(err.value)


def test_a_missing_flag_before_softmax_is_a_race_naming_its_line() -> None:
    with pytest.raises(OpsdkError) as err:
        _run("softmax_racy", "SoftmaxFloatMin", {"x": _x(np.float32)}, {"y": (np.float32, (BLOCKS * ROWS, COLS))})
    msg = str(err.value)
    line = next(i for i, text in enumerate(KERNELS.read_text().splitlines(), 1)
                if "SoftMax<float>(yl, xl, tmp" in text)
    assert "race on" in msg and f"SoftMax/ReduceMax (hl_kernels.cpp:{line}) on pipe V reads what DataCopy" in msg, msg
    assert "Fix: SetFlag<HardEvent::MTE2_V>" in msg, msg


def test_softmax_runs_through_opsdk_ascendc_run_with_host_tiling(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    x = _x(np.float16)
    np.save(tmp_path / "x.npy", x)
    n = BLOCKS * ROWS * 16
    argv = ["ascendc", "run", str(KERNELS), "--entry", "softmax_half", "--block-dim", str(BLOCKS),
            "--soc", "Ascend910B3", "--input", f"x={tmp_path / 'x.npy'}",
            "--output", f"y=float16:{BLOCKS * ROWS}x{COLS}", "--output", f"sum=float16:{n}",
            "--output", f"max=float16:{n}", "--host-tiling", f"{HL / 'hl_host.cpp'}:SoftmaxHalfMin",
            "--estimate", "--json", "--out-dir", str(tmp_path / "out")]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["race_checker"] == "clean"
    assert report["estimate"]["cycles"] > 0
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy").astype(np.float64), _softmax(x)[0],
                               atol=1e-3, rtol=1e-3)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


@pytest.mark.parametrize(("entry", "func", "rtol", "atol"), [
    ("gelu_float", "GeluFloat", 2e-6, 1e-6),
    # half computes every step in half (each instruction rounds): ~5e-3 relative off float64;
    # with highPrecision in float, one rounding at the end
    ("gelu_half", "GeluHalfMin", 1e-2, 4e-3), ("gelu_half_precise", "GeluHalf", 1e-3, 1e-3),
    ("faster_gelu_float", "GeluFloat", 2e-6, 1e-6),
    ("geglu_float", "GeGLUFloat", 1e-5, 1e-5), ("geglu_half", "GeGLUHalf", 1e-3, 2e-2)])
def test_gelu_and_geglu_match_numpy(entry: str, func: str, rtol: float, atol: float) -> None:
    dtype = np.float32 if entry.endswith("float") else np.float16
    x, gate = _x(dtype, seed=4), _x(dtype, seed=5)
    out = _run(entry, func, {"x": x, "x1": gate}, {"y": (dtype, x.shape)})["y"].astype(np.float64)
    x64, g64 = x.astype(np.float64), gate.astype(np.float64)
    if entry.startswith("geglu"):
        ref = x64 * _gelu_tanh(g64)
    elif entry.startswith("faster"):
        ref = x64 / (1 + np.exp(-1.702 * x64))
    else:
        ref = _gelu_tanh(x64)
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)


def test_gelu_with_too_little_tmp_names_the_minimum() -> None:
    x = _x(np.float32)
    with pytest.raises(OpsdkError, match=r"Gelu: has 32 bytes of tmp space \(the sharedTmpBuffer\): no room for 2 "
                                         r"buffers of 32 elements .*GetGeluMaxMinTmpSize gives a minimum of 768 bytes"):
        _run("gelu_float", "GeluFloatShort", {"x": x, "x1": x}, {"y": (np.float32, x.shape)})


@pytest.mark.parametrize(("entry", "func", "atol"), [
    ("sum_float", "SumFloat", 1e-5), ("sum_half", "SumHalf", 2e-2), ("mean_half", "MeanHalf", 1e-3),
    ("cumsum_last_half", "CumSumLastHalf", 2e-2), ("cumsum_first_float", "CumSumFirstFloat", 1e-5)])
def test_sum_mean_and_cumsum_match_numpy(entry: str, func: str, atol: float) -> None:
    dtype = np.float32 if entry.endswith("float") else np.float16
    x = _x(dtype, 1.0, seed=6)
    per_block = -(-ROWS * x.itemsize // 32) * 32 // x.itemsize  # Sum's output: the rows, 32-byte aligned
    total = BLOCKS * (ROWS * COLS if entry.startswith("cumsum") else per_block)
    out = _run(entry, func, {"x": x}, {"y": (dtype, (total,)), "last": (dtype, (BLOCKS * COLS,))})
    x64 = x.astype(np.float64).reshape(BLOCKS, ROWS, COLS)
    if not entry.startswith("cumsum"):  # SumParams/MeanParams.n = COLS - 5 of each row of COLS
        got = out["y"].reshape(BLOCKS, per_block)[:, :ROWS].astype(np.float64)
        reduce = np.mean if entry.startswith("mean") else np.sum
        np.testing.assert_allclose(got, reduce(x64[..., :COLS - 5], axis=2), atol=atol)
        return
    ref = np.cumsum(x64, axis=2 if "last" in entry else 1)
    np.testing.assert_allclose(out["y"].reshape(ref.shape).astype(np.float64), ref, atol=atol)
    np.testing.assert_allclose(out["last"].reshape(BLOCKS, COLS).astype(np.float64), ref[:, -1, :], atol=atol)


def test_cumsum_with_too_little_tmp_names_the_minimum() -> None:
    x = _x(np.float16)
    with pytest.raises(OpsdkError, match=r"CumSum: has 6112 bytes of tmp space \(the sharedTmpBuffer\); "
                                         r"GetCumSumMaxMinTmpSize gives a minimum of 6144 bytes for 16 x 64 half"):
        _run("cumsum_last_half", "CumSumLastHalfShort", {"x": x},
             {"y": (np.float16, (BLOCKS * ROWS * COLS,)), "last": (np.float16, (BLOCKS * COLS,))})


@pytest.mark.parametrize(("entry", "func", "dtype"), [("topk_float", "TopKFloat", np.float32),
                                                      ("bottomk_half", "BottomKHalf", np.float16)])
def test_topk_matches_numpy(entry: str, func: str, dtype: type) -> None:
    # distinct values / 7: half rounds some of them together, ties keep their input order
    x: np.ndarray = (np.random.default_rng(8).permutation(BLOCKS * ROWS * COLS).reshape(BLOCKS * ROWS, COLS) / 7).astype(dtype)
    k_align = 32 // np.dtype(dtype).itemsize  # k = 5 rounded up to 32 bytes of values, 8 int32 indices
    out = _run(entry, func, {"x": x}, {"values": (dtype, (BLOCKS * ROWS, k_align)),
                                       "indices": (np.int32, (BLOCKS * ROWS, 8))})
    key = -x.astype(np.float64) if entry.startswith("top") else x.astype(np.float64)
    order = np.argsort(key, axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(out["indices"][:, :5], order)
    np.testing.assert_array_equal(out["values"][:, :5], np.take_along_axis(x, order, axis=1))


def test_topk_with_too_little_tmp_names_the_minimum() -> None:
    x = _x(np.float32)
    with pytest.raises(OpsdkError, match=r"TopK: has 1248 bytes of tmp space \(the sharedTmpBuffer\); the tiling's "
                                         r"tmpLocalSize is 1280 bytes; GetTopKMaxMinTmpSize gives a minimum of 1280"):
        _run("topk_float", "TopKFloatShort", {"x": x},
             {"values": (np.float32, (BLOCKS * ROWS, 8)), "indices": (np.int32, (BLOCKS * ROWS, 8))})
