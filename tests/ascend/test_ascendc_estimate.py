"""The cycle estimate of opsdk's Ascend C model (docs/ascendc_model.md, "The estimate").

An estimate from the model's pipes, never an NPU time: these tests check what the model's
time line must show (overlap of double-buffered copies with the vector, the bound moving
with the costs, the scalar-bound pattern), not figures of a chip.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc._estimate import Estimate, costs_for, read_trace
from opsdk.ascend.ascendc.model import AscendcModel
from opsdk.errors import OpsdkError
from tests.conftest import build_model_kernel

ROOT = Path(__file__).resolve().parents[2]
RACES = Path(__file__).parents[1] / "data" / "ascendc" / "races"
SOC = "Ascend910B3"
TILE, TILES, BLOCKS = 1024, 6, 2

DRIVER = """#include "kernel_operator.h"
#include "register/tilingdata_base.h"
namespace optiling { struct RaceTiling { uint32_t tileLength; uint32_t tileNum; }; REGISTER_TILING_DATA_CLASS(race_kernel, RaceTiling) }
#include "kernel.cpp"
#include "opsdk_model_launch.h"
extern "C" int launch(uint8_t** gm, const uint64_t* bytes, const char** names, uint8_t* tiling,
                      uint32_t blocks, char* err, const char* costs, const char* trace) {
    return opsdk_ascendc::Run("race_kernel", [](uint8_t** g, uint8_t* w, uint8_t* t) { race_kernel(g[0], g[1], w, t); },
                              gm, bytes, names, 2, tiling, blocks, 196608, "ascend910b", 1, 1, err, 4096, costs, trace);
}
"""

# Scalar compute: every element read and written by the scalar unit (the pattern that makes
# a kernel scalar-bound), z = 2 x.
SCALAR = """#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void race_kernel(GM_ADDR x, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> inQ;
    TQue<QuePosition::VECOUT, 1> outQ;
    GlobalTensor<float> xGm, zGm;
    const uint32_t block = t.tileLength * t.tileNum;
    xGm.SetGlobalBuffer((__gm__ float*)x + block * GetBlockIdx(), block);
    zGm.SetGlobalBuffer((__gm__ float*)z + block * GetBlockIdx(), block);
    pipe.InitBuffer(inQ, 1, t.tileLength * sizeof(float));
    pipe.InitBuffer(outQ, 1, t.tileLength * sizeof(float));
    for (uint32_t i = 0; i < t.tileNum; ++i) {
        LocalTensor<float> a = inQ.AllocTensor<float>();
        DataCopy(a, xGm[i * t.tileLength], t.tileLength);
        inQ.EnQue(a);
        a = inQ.DeQue<float>();
        LocalTensor<float> b = outQ.AllocTensor<float>();
        SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
        if (i > 0) WaitFlag<HardEvent::MTE3_S>(EVENT_ID1);  // the last tile's copy-out read b
        for (uint32_t k = 0; k < t.tileLength; ++k) b.SetValue(k, a.GetValue(k) * 2.0f);
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        SetFlag<HardEvent::S_MTE2>(EVENT_ID0);
        inQ.FreeTensor(a);
        outQ.EnQue(b);
        b = outQ.DeQue<float>();
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE2>(EVENT_ID0);
        DataCopy(zGm[i * t.tileLength], b, t.tileLength);
        if (i + 1 < t.tileNum) SetFlag<HardEvent::MTE3_S>(EVENT_ID1);
        outQ.FreeTensor(b);
    }
}
"""


def _estimate(source: str, where: Path, costs: dict[str, float] | None = None,
              blocks: int = BLOCKS) -> tuple[Estimate, np.ndarray, np.ndarray]:
    """Build ``source`` (a race_kernel(x, z) of TILES tiles of TILE floats per block) on the
    model, run it with the estimate's costs and return (estimate, x, z)."""
    lib = build_model_kernel(where, source, DRIVER, "-O1")
    n = blocks * TILES * TILE
    x = np.linspace(-3.0, 3.0, 2 * n, dtype=np.float32)  # add_tque reads x then y
    z = np.zeros(n, np.float32)
    gm = (ctypes.c_void_p * 2)(x.ctypes.data, z.ctypes.data)
    sizes = (ctypes.c_uint64 * 2)(x.nbytes, z.nbytes)
    names = (ctypes.c_char_p * 2)(b"x", b"z")
    tiling = ctypes.create_string_buffer(np.array([TILE, TILES], np.uint32).tobytes() + b"\0" * 8)
    err = ctypes.create_string_buffer(4096)
    table = costs_for(SOC, costs)
    trace = where / "trace.csv"
    rc = lib.launch(gm, sizes, names, tiling, ctypes.c_uint32(blocks), err,
                    table.encoded().encode(), str(trace).encode())
    assert rc == 0, err.value.decode()
    est = Estimate("race_kernel", SOC, table, read_trace(trace), blocks, 40)
    return est, x, z


def _add(buffers: int) -> str:
    src = (RACES / "add_tque.cpp").read_text()
    assert "constexpr int32_t BUFFER_NUM = 2;" in src
    return src.replace("constexpr int32_t BUFFER_NUM = 2;", f"constexpr int32_t BUFFER_NUM = {buffers};")


def _overlap(est: Estimate, a: str, b: str) -> float:
    """Cycles during which pipes ``a`` and ``b`` of block 0 are busy at once."""
    block = est.blocks[0]
    total = 0.0
    for i in (i for i in block if i.pipe == a and i.end > i.start):
        for j in (j for j in block if j.pipe == b and j.end > j.start):
            total += max(0.0, min(i.end, j.end) - max(i.start, j.start))
    return total


def test_double_buffering_overlaps_the_copy_in_with_the_vector(tmp_path: Path) -> None:
    # vector-heavy Add, so the next tile's copy-in can hide behind it only with two buffers
    heavy = {"Add": 24.0}
    two, x, z2 = _estimate(_add(2), tmp_path / "two", heavy)
    one, _, z1 = _estimate(_add(1), tmp_path / "one", heavy)
    n = z2.size
    np.testing.assert_array_equal(z2, x[:n] + x[n:])
    np.testing.assert_array_equal(z1, z2)
    assert _overlap(two, "MTE2", "V") > 0
    assert _overlap(one, "MTE2", "V") == 0  # one buffer: MTE2 waits for the vector's free
    assert one.cycles > two.cycles
    # the figures add up: the kernel is at least its busiest pipe, at most the pipes in series
    busy = two.busy()
    assert max(busy.values()) <= two.cycles <= sum(busy.values())


def test_the_bound_follows_the_costs(tmp_path: Path) -> None:
    mem, _, _ = _estimate(_add(2), tmp_path / "mem")
    assert mem.bound == "MTE2-bound"
    assert mem.utilisation()["MTE2"] > 0.8
    vec, _, _ = _estimate(_add(2), tmp_path / "vec", {"Add": 200.0})
    assert vec.bound == "vector-bound"
    assert vec.utilisation()["V"] > 0.9
    assert vec.cycles > mem.cycles


def test_element_loops_on_the_scalar_unit_are_scalar_bound(tmp_path: Path) -> None:
    est, x, z = _estimate(SCALAR, tmp_path / "scalar")
    np.testing.assert_array_equal(z, x[: z.size] * 2)
    assert est.bound == "scalar-bound"
    assert est.busy()["S"] >= 2 * TILE * TILES  # a load and a store per element


def test_one_mte2_copy_costs_its_latency_and_bytes(tmp_path: Path) -> None:
    est, _, _ = _estimate(_add(2), tmp_path / "k")
    c = est.costs.pipes
    first = next(i for i in est.blocks[0] if i.pipe == "MTE2" and i.gm)
    assert first.gm == TILE * 4
    assert first.end - first.start == pytest.approx(c["mte2Latency"] + TILE * 4 / c["mte2Bpc"])
    add = next(i for i in est.blocks[0] if i.api == "Add")
    assert add.end - add.start == pytest.approx(np.ceil(TILE * 4 / c["repeatBytes"]) * 1)


def test_blocks_beyond_the_cores_run_one_after_another(tmp_path: Path) -> None:
    est, _, _ = _estimate(_add(2), tmp_path / "k", blocks=3)
    est.cores = 2
    spans = [max(i.end for i in b) for b in est.blocks]
    assert est.core_blocks == [[0, 2], [1]]
    assert est.cycles == pytest.approx(spans[0] + spans[2])


def test_trace_json_and_swimlane(tmp_path: Path) -> None:
    est, _, _ = _estimate(_add(2), tmp_path / "k")
    trace = json.loads(json.dumps(est.chrome_trace()))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {"MTE2", "V", "MTE3", "S"}
    assert spans and all(e["dur"] > 0 and e["ts"] >= 0 for e in spans)
    assert {e["pid"] for e in spans} == {0, 1}
    assert "not an NPU" in trace["otherData"]["label"]
    png = est.swimlane(tmp_path / "lanes.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_costs_carry_their_sources_and_the_soc_rates() -> None:
    c = costs_for("Ascend910B3")
    assert c.freq_mhz == 1800.0
    assert c.pipes["mte2Bpc"] == 32 * 20 / 40  # ddr_read_rate shared by 2 vector cores
    assert c.pipes["mte3Bpc"] == 32 * 20 / 40  # ddr_write_rate (below ub_to_ddr_rate 64), shared
    for key in [*c.pipes, *(f"vector.{k}" for k in c.vector), "freq_mhz"]:
        assert c.sources.get(key), key
    p = costs_for("Ascend310P3")
    assert (p.freq_mhz, p.pipes["mte2Bpc"]) == (1000.0, 9.0)
    assert "vec_freq" in p.sources["freq_mhz"]
    assert "mte2Latency=241.0" in c.encoded() and "vec.Exp=4.0" in c.encoded()


def test_bad_costs_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OpsdkError, match="'Exp': expected a number >= 0"):
        costs_for(SOC, {"Exp": -1})
    with pytest.raises(OpsdkError, match="'mte2Bpc': must be > 0"):
        costs_for(SOC, {"mte2Bpc": 0})
    bad = tmp_path / "costs.json"
    bad.write_text("[1, 2]")
    with pytest.raises(OpsdkError, match="expected a JSON object"):
        costs_for(SOC, bad)
    good = tmp_path / "good.json"
    good.write_text('{"Exp": {"value": 6, "source": "msprof op on a device"}}')
    c = costs_for(SOC, good)
    assert c.vector["Exp"] == 6 and c.sources["vector.Exp"] == "msprof op on a device"


def test_shipped_kernels_estimate_and_stay_correct() -> None:
    x = np.random.default_rng(0).uniform(-3, 3, 1 << 18).astype(np.float32)
    relu = AscendcModel(ROOT / "operators" / "thresholded_relu", soc=SOC).estimate(
        [x], {"alpha": 0.5})
    np.testing.assert_array_equal(relu.outputs[0], np.where(x > 0.5, x, 0).astype(np.float32))
    assert relu.bound == "MTE2-bound"
    gelu = AscendcModel(ROOT / "operators" / "gelu", soc=SOC).estimate([x])
    assert gelu.bound == "vector-bound"  # Erf's 31 basic instructions per repeat
    assert gelu.cycles > relu.cycles
    again = AscendcModel(ROOT / "operators" / "gelu", soc=SOC).estimate([x])
    assert again.as_dict() == gelu.as_dict()  # deterministic


def test_a_kernel_the_soc_cannot_build_is_refused_by_name() -> None:
    model = AscendcModel(ROOT / "operators" / "thresholded_relu", soc="Ascend910A")
    from opsdk.errors import DeviceUnavailable

    with pytest.raises(DeviceUnavailable, match="DataCopyPad: not in the Ascend C of Ascend910A"):
        model.estimate([np.ones(1024, np.float32)], {"alpha": 0.5})


def test_bench_cli_reports_an_estimate(tmp_path: Path) -> None:
    trace, png = tmp_path / "t.json", tmp_path / "s.png"
    cmd = [sys.executable, "-m", "opsdk", "bench", "ThresholdedRelu", "--device", "ascendc-model",
           "--shape", "65536", "--attr", "alpha=0.5", "--json", "--trace", str(trace),
           "--swimlane", str(png)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["label"] == "estimate from opsdk's Ascend C model (not an NPU time)"
    assert data["soc"] == SOC and data["shapes"] == {"x": [65536]}
    assert data["bound"] in ("MTE2-bound", "vector-bound", "MTE3-bound", "scalar-bound")
    assert data["microseconds"] == pytest.approx(data["cycles"] / 1800)
    assert json.loads(trace.read_text())["traceEvents"]
    assert png.stat().st_size > 0
    again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert again.returncode != 0 and "exists; remove it" in again.stderr


def test_estimate_options_need_the_model_device() -> None:
    cmd = [sys.executable, "-m", "opsdk", "bench", "Gelu", "--trace", "t.json"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "--device ascendc-model" in proc.stderr



def test_a_large_elementwise_kernel_never_beats_the_chips_gm_bandwidth() -> None:
    """All cores share the GM: ThresholdedRelu's 8 MB in and out on 910B3 cannot take less
    than 8 MB / 1.6 TB/s (the published HBM bandwidth), nor write faster than ddr_write_rate
    (32 bytes per cycle per AI Core, below ub_to_ddr_rate's 64)."""
    x = np.random.default_rng(1).uniform(-3, 3, (1024, 1024)).astype(np.float32)
    est = AscendcModel(ROOT / "operators" / "thresholded_relu", soc="Ascend910B3").estimate(
        [x], {"alpha": 0.5})
    assert est.gm_bytes == 2 * x.nbytes
    seconds = est.microseconds * 1e-6
    assert est.gm_bytes / seconds <= est.costs.gm_bytes_per_s * (1 + 1e-9)
    assert est.costs.gm_bytes_per_s <= 1.6e12
    assert est.cycles >= est.gm_cycles > 0
    assert est.costs.pipes["mte3Bpc"] == 16.0  # ddr_write_rate 32 x 20 AI / 40 vector cores
    # where no figure is published, the AI Cores' GM ports together: 310P3's 8 x 17 x 1060 MHz
    assert costs_for("Ascend310P3").gm_bytes_per_s == 8 * 17 * 1060e6
