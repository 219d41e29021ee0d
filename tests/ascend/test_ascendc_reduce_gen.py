"""Generated AI Core kernels of decompositions with reductions over the last axis: RMSNorm
scaffolded with `opsdk new --decomposition` runs on the Ascend C model for 910B3 and 310P3 in
every dtype, with the row in the Unified Buffer (read once) and streamed (a row too long for
it, read once per pass); LayerNorm (two passes), L2 normalisation and a softmax of ReduceMax
and ReduceSum too; what is out of reach is refused with the reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opsdk._decomposition import decomposition_source
from opsdk._generated import BANNER
from opsdk.ascend.ascendc import GenerateRefused, generate
from opsdk.ascend.ascendc._estimate import reference_problem
from opsdk.ascend.ascendc._tiling import evaluate
from opsdk.ascend.ascendc.model import AscendcModel
from opsdk.ascend.socs import core_resources
from opsdk.cli import main
from opsdk.dtypes import to_numpy
from opsdk.errors import DeviceUnavailable
from opsdk.onnx import build_function
from opsdk.registry import load_spec
from tests._helpers.golden import check_golden

RMS = "x * Reciprocal(Sqrt(ReduceMean(x * x, axes=-1, keepdims=1) + epsilon)) * gamma"
FLOATS = "float16,bfloat16,float32"
#: name -> (inputs, attrs, decomposition) of the operators scaffolded here
OPS = {
    "RmsNorm": (["x", "gamma"], ["epsilon:float=1e-6"], RMS),
    # LayerNorm's mean and variance (without its bias, whose sum with a normalised value
    # near its negative cancels in float32 beyond the standard's small-value bound)
    "LnStats": (["x", "gamma"], ["epsilon:float=1e-5"],
                "(x - ReduceMean(x, axes=[-1])) * Reciprocal(Sqrt(ReduceMean((x - ReduceMean("
                "x, axes=[-1])) * (x - ReduceMean(x, axes=[-1])), axes=[-1]) + epsilon)) * gamma"),
    "L2Norm": (["x"], ["epsilon:float=1e-12"],
               "x * Reciprocal(Max(ReduceL2(x, axes=-1), epsilon))"),
    "RowSoftmax": (["x"], [], "Exp(x - ReduceMax(x, axes=-1)) / ReduceSum(Exp(x - ReduceMax(x, "
                              "axes=-1)), axes=-1)"),
    "MinSq": (["x"], [], "(x - ReduceMin(x, axes=-1)) * ReduceSumSquare(x, axes=-1, keepdims=1)"),
}
SNAKE = {"RmsNorm": "rms_norm", "LnStats": "ln_stats", "L2Norm": "l2_norm",
         "RowSoftmax": "row_softmax", "MinSq": "min_sq"}


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reduce_ops")
    for name, (inputs, attrs, expr) in OPS.items():
        args = ["new", name, "--inputs", *[f"{i}:{FLOATS}" for i in inputs], "--outputs", "y",
                "--domain", "com.test", "--dir", str(root), "--decomposition", expr]
        assert main(args + (["--attrs", *attrs] if attrs else [])) == 0
        # opsdk new declares the inputs of a reducing decomposition in +-1e4, as the norm
        # starters and LayerNormalization do (a float32 sum of squares overflows beyond
        # ~1.8e19, where the float64 reference does not)
        text = (root / SNAKE[name] / "spec.py").read_text()
        assert text.count("values=Values(range=(-10000.0, 10000.0))") == len(inputs), text
    return root


@pytest.mark.parametrize("soc", ["Ascend910B3", "Ascend310P3"])
def test_scaffolded_rms_norm_passes_the_harness_on_the_model(ops: Path, soc: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(ops / "rms_norm"), "-q", "-p", "no:cacheprovider",
         "--opsdk-device", "ascendc-model"], capture_output=True, text=True, check=False,
        env={**os.environ, "OPSDK_ASCEND_SOC": soc}, timeout=1800)
    summary = re.search(r"opsdk: (\d+) cases compared, 0 failed\b", proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert summary is not None and int(summary.group(1)) >= 30, proc.stdout[-2000:]


def _inputs(name: str, shape: tuple[int, ...], dtype: str) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.uniform(-2.0, 2.0, shape).astype(to_numpy(dtype))
    rows = [rng.uniform(0.5, 1.5, shape[-1:]).astype(to_numpy(dtype))
            for _ in OPS[name][0][1:]]
    return [x, *rows]


def _mte2_bytes(est: object) -> int:
    return sum(i.gm for b in est.blocks for i in b if i.pipe == "MTE2")  # type: ignore[attr-defined]


def _tile_num(op: AscendcModel, shape: tuple[int, ...], itemsize: int, inputs: int) -> int:
    facts = {"totalLength": int(np.prod(shape)), "lastDim": shape[-1], "typeBytes": itemsize,
             "coreNum": op.cores, "ubBytes": op.ub_bytes,
             "rowInputs": sum(1 << i for i in range(1, inputs))}
    return evaluate(op.kernel.tiling, facts)[1]["tileNum"]


def test_decomposition_takes_negative_and_list_axes() -> None:
    src = decomposition_source("ReduceMean(x, axes=-1, keepdims=1)", ["x"], {})
    assert 'fb.op("ReduceMean", x, axes=-1, keepdims=1)' in src, src
    src = decomposition_source("ReduceSum(x, axes=(-2, -1))", ["x"], {})
    assert 'axes=[-2, -1]' in src, src


def test_axes_becomes_an_input_where_the_opset_wants_one(ops: Path) -> None:
    spec = load_spec(ops / "rms_norm")
    old = [n for n in build_function(spec, 17).node if n.op_type == "ReduceMean"][0]
    new = [n for n in build_function(spec, 18).node if n.op_type == "ReduceMean"][0]
    assert [a.name for a in old.attribute if a.name == "axes"] == ["axes"] and len(old.input) == 1
    assert len(new.input) == 2 and not [a for a in new.attribute if a.name == "axes"]


def test_rms_norm_kernel_is_written_with_the_banner_and_matches_its_golden(ops: Path) -> None:
    folder = ops / "rms_norm"
    written = (folder / "op_kernel" / "rms_norm.cpp").read_text()
    assert "ReduceSum(q0, v2, work, static_cast<int32_t>(n));" in written
    kernel = generate(load_spec(folder), BANNER)
    assert kernel.rows and kernel.source.startswith(f"// {BANNER}\n")
    check_golden("ascendc_rows/rms_norm.cpp", kernel.source)
    check_golden("ascendc_rows/ln_stats.cpp", generate(load_spec(ops / "ln_stats"), BANNER).source)


CASES = [(soc, dt, path) for soc, dts in (("Ascend910B3", ("float16", "bfloat16", "float32")),
                                          ("Ascend310P3", ("float16", "float32")))
         for dt in dts for path in ("row", "stream")]


@pytest.mark.parametrize(("soc", "dtype", "path"), CASES)
def test_rms_norm_on_the_model(ops: Path, soc: str, dtype: str, path: str) -> None:
    folder = ops / "rms_norm"
    op = AscendcModel(folder, soc=soc)
    itemsize = np.dtype(to_numpy(dtype)).itemsize
    ub, _ = core_resources(soc)
    shape = (24, 1024) if path == "row" else (3, ub // itemsize)  # a row of x alone fills UB
    tiles = _tile_num(op, shape, itemsize, 2)
    assert (tiles == 1) == (path == "row"), tiles
    inputs = _inputs("RmsNorm", shape, dtype)
    est = op.estimate(inputs, {"epsilon": 1e-6})
    assert reference_problem(op.spec, inputs, {"epsilon": 1e-6}, est.outputs) == ""
    x, gamma = inputs[0].nbytes, inputs[1].nbytes
    if path == "row":  # x once, gamma once per core
        assert _mte2_bytes(est) == x + gamma * est.block_dim
    else:  # a pass for the mean of squares, one for the output: x twice, gamma with it
        assert _mte2_bytes(est) == 2 * x + 2 * gamma * shape[0]
    assert est.microseconds > 0 and est.bound


@pytest.mark.parametrize("name", ["LnStats", "L2Norm", "RowSoftmax", "MinSq"])
@pytest.mark.parametrize("path", ["row", "stream"])
def test_other_reductions_on_the_model(ops: Path, name: str, path: str) -> None:
    op = AscendcModel(ops / SNAKE[name], soc="Ascend910B3")
    shape = (6, 160) if path == "row" else (2, 30000)
    assert (_tile_num(op, shape, 4, len(OPS[name][0])) == 1) == (path == "row")
    inputs = _inputs(name, shape, "float32")
    attrs = {"epsilon": 1e-5} if OPS[name][1] else {}
    outputs = op.run(inputs, attrs)
    assert reference_problem(op.spec, inputs, attrs, outputs) == ""


def test_a_row_input_of_another_shape_is_out_of_reach(ops: Path) -> None:
    op = AscendcModel(ops / "rms_norm", soc="Ascend910B3")
    x = np.ones((4, 64), np.float32)
    with pytest.raises(DeviceUnavailable, match=r"input 1 has shape \[4, 1\]; the row kernel"):
        op.run([x, np.ones((4, 1), np.float32)], {"epsilon": 1e-6})


@pytest.mark.parametrize("shape", [(5, 100), (40, 7), (2, 9000)])
def test_rows_of_part_blocks_on_a_soc_without_data_copy_pad(ops: Path,
                                                            shape: tuple[int, int]) -> None:
    """310P3: the whole blocks by DataCopy, a part block by the scalar unit; rows shorter
    than one block staged (at least a block of rows per core); a streamed row's last tile
    never shorter than one block."""
    op = AscendcModel(ops / "rms_norm", soc="Ascend310P3")
    inputs = _inputs("RmsNorm", shape, "float16")
    outputs = op.run(inputs, {"epsilon": 1e-6})
    assert reference_problem(op.spec, inputs, {"epsilon": 1e-6}, outputs) == ""


@pytest.mark.parametrize(("expr", "why"), [
    ("x * ReduceSum(x, axes=0)", "ReduceSum with axes=[0], keepdims=1; the generator reduces"),
    ("x * ReduceSum(x, axes=-1, keepdims=0)", "keepdims=0; the generator reduces the last axis"),
    ("ReduceMean(x, axes=-1)", "output 'y' is one value per row; broadcast it back"),
    ("x * ReduceProd(x, axes=-1)", "ReduceProd (the generator takes ReduceSum, ReduceMean"),
])
def test_out_of_reach_reductions_are_refused_with_the_reason(tmp_path: Path, expr: str,
                                                             why: str) -> None:
    assert main(["new", "Bad", "--inputs", "x:float32", "--outputs", "y", "--dir", str(tmp_path),
                 "--decomposition", expr]) == 0
    with pytest.raises(GenerateRefused, match="Bad: no AI Core kernel generated: ") as e:
        generate(load_spec(tmp_path / "bad"))
    assert why in str(e.value), str(e.value)


def test_the_row_kernel_has_no_tuned_table_and_its_tiling_func_reads_row_inputs(ops: Path) -> None:
    from opsdk.ascend.ascendc._gen import TuningRow
    from opsdk.ascend.ascendc._tiling import cpp_tiling

    spec = load_spec(ops / "rms_norm")
    with pytest.raises(GenerateRefused, match="opsdk tune searches elementwise generated kernels"):
        generate(spec, BANNER, [TuningRow(None)])
    text = cpp_tiling(generate(spec).tiling)
    assert "rowInputs |= uint64_t{1} << i;" in text and "tiling.set_rowMask(" in text
