"""FusedConvBnRelu's AI Core kernel (a Cube kernel: img2col LoadData 3Dv2 + Mmad, ReLU in
Fixpipe; operators/fused_conv_bn_relu/op_kernel/) on opsdk's Ascend C model.

* the corpus conv shapes (benchmarks/conv_corpus.py's set, as recorded in
  benchmarks/results/conv_corpus-quiet-1t.json) in float16 and float32 against the NumPy
  reference, within the bound of float32 accumulation plus one ulp of the output: one shape
  per geometry and the largest, or all 196 with ``OPSDK_CONV_CORPUS=full``;
* calls the kernel refuses, each with its reason; the CANN project keeps AI CPU for it;
* the estimate shows the Cube's pipes (MTE1, M, FIX) and names its bound;
* mutants of the kernel (a sync removed, L0A/L0B overflowed by one fractal, a stale or reset
  accumulator, no ReLU) are each reported, and the kernel itself is not.

Estimates from opsdk's model, not NPU times.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "operators" / "fused_conv_bn_relu"
KERNEL = FOLDER / "op_kernel" / "fused_conv_bn_relu.cpp"
sys.path.insert(0, str(ROOT / "benchmarks"))

from conv_aicore import corpus_shapes, error_bound, inputs  # noqa: E402

from opsdk.ascend.ascendc.model import AscendcModel  # noqa: E402
from opsdk.errors import DeviceUnavailable, KernelError  # noqa: E402

SHAPES = corpus_shapes()


def _geometry(s: dict[str, Any]) -> tuple[Any, ...]:
    a = s["attrs"]
    kind = "dense" if a["group"] == 1 else "depthwise" if a["group"] == s["c"] else "grouped"
    return (s["kh"], s["kw"], tuple(a["strides"]), tuple(a["dilations"]), kind,
            any(a["pads"]))


def _sample(shapes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One corpus shape per geometry (kernel, strides, dilations, dense/grouped/depthwise,
    padded or not), the one with the least work, and the one with the most work overall."""
    work = {s["label"]: s["n"] * s["m"] * s["c"] * s["h"] * s["w"] * s["kh"] * s["kw"]
            for s in shapes}
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    for s in shapes:
        g = _geometry(s)
        if g not in best or work[s["label"]] < work[best[g]["label"]]:
            best[g] = s
    largest = max(shapes, key=lambda s: work[s["label"]])
    return [s for s in shapes if s in best.values() or s is largest]


#: the whole corpus with OPSDK_CONV_CORPUS=full (about 35 minutes a dtype on 2 cores; the
#: benchmark, benchmarks/conv_aicore.py, runs all of it and records every row); otherwise one
#: shape per geometry and the largest
CHECKED = SHAPES if os.environ.get("OPSDK_CONV_CORPUS") == "full" else _sample(SHAPES)
#: corpus shapes the kernel refuses, with the reason (none: it takes them all)
REFUSED: dict[str, str] = {}


def _reference() -> Any:
    sys.path.insert(0, str(FOLDER))
    from reference import reference

    return reference


@pytest.fixture(scope="module")
def model() -> AscendcModel:
    return AscendcModel(FOLDER, soc="Ascend910B3")


def _check(op: AscendcModel, x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
           attrs: dict[str, Any]) -> None:
    y = op.run([x, w, b], attrs)[0]
    ref = _reference()(x, w, b, **attrs).astype(np.float64)
    assert y.dtype == x.dtype and y.shape == ref.shape
    bias = b if b is not None else np.zeros(w.shape[0], x.dtype)
    err = np.abs(y.astype(np.float64) - ref)
    bound = error_bound(x, w, bias, attrs, ref)
    bad = np.argwhere(~(err <= bound))
    assert bad.size == 0, (f"{len(bad)} outputs off, first at {tuple(bad[0])}: "
                           f"{y[tuple(bad[0])]} vs {ref[tuple(bad[0])]}")


def test_corpus_has_its_shapes() -> None:
    assert len(SHAPES) == 196
    assert sum(s["attrs"]["group"] > 1 for s in SHAPES) == 38


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape", CHECKED, ids=[s["label"] for s in CHECKED])
def test_every_corpus_shape(model: AscendcModel, shape: dict[str, Any], dtype: str) -> None:
    """Each corpus geometry, dense, grouped and depthwise, matches the reference (or is
    refused for the reason REFUSED gives)."""
    x, w, b = inputs(shape, dtype)
    if shape["label"] in REFUSED:
        with pytest.raises(DeviceUnavailable, match=REFUSED[shape["label"]]):
            model.run([x, w, b], shape["attrs"])
        return
    _check(model, x, w, b, shape["attrs"])


def test_without_bias_and_batch(model: AscendcModel) -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (3, 20, 11, 13)).astype(np.float16)
    w = rng.uniform(-1, 1, (40, 20, 3, 2)).astype(np.float16)
    _check(model, x, w, None, {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2],
                               "group": 1})


def test_empty_batch(model: AscendcModel) -> None:
    """N = 0: one block that computes nothing (the launch needs blockDim >= 1)."""
    y = model.run([np.zeros((0, 4, 5, 5), np.float16), np.ones((4, 4, 3, 3), np.float16),
                   None], {})[0]
    assert y.shape == (0, 4, 3, 3)


def test_nan_and_relu(model: AscendcModel) -> None:
    """ReLU in Fixpipe: negative sums become 0, NaN stays NaN (as the reference)."""
    x = np.ones((1, 16, 4, 4), np.float32)
    x[0, 0, 1, 1] = np.nan
    w = np.ones((32, 16, 1, 1), np.float32)
    w[16:] = -1
    y = model.run([x, w, None], {})[0]
    assert np.isnan(y[0, :, 1, 1]).all()
    assert (y[0, :16][~np.isnan(y[0, :16])] == 16).all() and (y[0, 16:, 0, 0] == 0).all()


@pytest.mark.parametrize("side, attrs, why", [
    (4, {"pads": [300, 300, 300, 300]}, "padList holds at most 255"),
    (520, {"dilations": [255, 255]}, "of A1/B1 (L1), which holds 524288"),
])
def test_refused_with_reason(model: AscendcModel, side: int, attrs: dict[str, Any],
                             why: str) -> None:
    """A call whose img2col window LoadData cannot describe, or whose smallest tile does not fit
    the SoC's L1, is refused naming the limit (the node stays on AI CPU)."""
    import re

    x = np.zeros((1, 16, side, side), np.float16)
    w = np.zeros((16, 16, 3, 3), np.float16)
    with pytest.raises(DeviceUnavailable, match=re.escape(why)) as e:
        model.run([x, w, None], attrs)
    assert "FusedConvBnRelu" in str(e.value) and "AI CPU" in str(e.value)


def test_cann_keeps_ai_cpu() -> None:
    """The op_host cannot run the Python tiling yet: the project takes the AI CPU kernel."""
    from opsdk.ascend.ascendc._kernels import project_sources
    from opsdk.ascend.project._project import _kernel
    from opsdk.registry import find_operator

    info = find_operator("FusedConvBnRelu")
    kernel, why = _kernel(info.spec, Path(info.folder))
    assert kernel is None and "op_kernel/tiling.py" in why
    from opsdk.ascend._op import cann_op

    assert project_sources(info.spec, cann_op(info.spec)) == ({}, "")


def test_estimate_shows_the_cube(model: AscendcModel) -> None:
    shape = next(s for s in SHAPES if s["label"] == "N1 64->64 56x56 3x3")
    est = model.estimate(inputs(shape, "float16"), shape["attrs"])
    util = est.utilisation()
    assert {"MTE1", "M", "FIX"} <= set(est.pipes)
    assert 0 < util["M"] <= 1 and est.block_dim <= 20  # 910B3's 20 Cube cores
    assert est.bound in {"MTE2-bound", "Cube-bound", "MTE1-bound", "FIX-bound",
                         "GM-bandwidth-bound"}
    trace = est.chrome_trace(max_blocks=1)["traceEvents"]
    busy = {est.pipes[e["tid"]] for e in trace if e["ph"] == "X" and e["pid"] == 0}
    assert {"MTE2", "MTE1", "M", "FIX"} <= busy  # the swimlanes show the cube pipes
    assert {"Mmad", "Fixpipe"} <= {e["name"].split(" ")[0] for e in trace if e["ph"] == "X"}


# ----------------------------------------------------------------------------- mutants
#: (name, text in the kernel, its replacement, shape label or attrs, what must be reported)
MUTANTS = [
    ("ones tile MTE2->MTE1 flag removed",
     "        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);\n"
     "        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);\n", "", "streamed", "race|MTE2"),
    ("M->FIX hand-off removed", "        cQue_.EnQue(acc);\n        acc = cQue_.DeQue<float>();\n",
     "", None, "race|FIX"),
    ("weight panel MTE2->MTE1 hand-off removed",
     "        b1Que_.EnQue(panel_);\n        panel_ = b1Que_.DeQue<T>();\n", "", None, "race|MTE"),
    ("L0B overflowed by one fractal", "static_cast<uint32_t>(s.b2Bytes)",
     "static_cast<uint32_t>(s.b2Bytes + 512)", None, "B2|L0B"),
    ("L0A overflowed by one fractal", "static_cast<uint32_t>(s.a2Bytes)",
     "static_cast<uint32_t>(s.a2Bytes + 512)", None, "A2|L0A"),
    ("stale accumulator: cmatrixInitVal false on the first Mmad", "mm.cmatrixInitVal = first;",
     "mm.cmatrixInitVal = false;", None, "nothing wrote|cmatrixInitVal"),
    ("accumulator reset by every Mmad", "mm.cmatrixInitVal = first;",
     "mm.cmatrixInitVal = true;", None, "outputs off"),
    ("small-Mmad PipeBarrier removed", "            PipeBarrier<PIPE_M>();\n", "", "small",
     "PipeBarrier<PIPE_M>"),
    ("ReLU left out of Fixpipe", "fix.reluEn = true;", "fix.reluEn = false;", None,
     "outputs off"),
]


def _mutant_folder(tmp: Path, old: str, new: str) -> Path:
    folder = tmp / "fused_conv_bn_relu"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__", "test_*", "tuning.json"))
    src = folder / "op_kernel" / KERNEL.name
    text = src.read_text()
    assert text.count(old) == 1, f"the mutation's text is not in the kernel once: {old!r}"
    src.write_text(text.replace(old, new))
    return folder


def _mutant_call(which: str | None) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray],
                                             dict[str, Any]]:
    """A call where the mutated line matters: 128 output channels, a 3x3 filter and 16x16
    outputs (tiles of 128 x 128, L0A and L0B full with double buffering, weights resident in
    L1); "streamed": weights too large to stay in L1 (the ones tile is the first MTE2 -> MTE1
    hand-off); "small": a tile of one fractal row (Mmads under 10 fractals)."""
    rng = np.random.default_rng(11)
    c, m, side = {"small": (16, 16, 4), "streamed": (128, 128, 6)}.get(which or "", (32, 128, 16))
    x = rng.uniform(-1, 1, (1, c, side, side)).astype(np.float16)
    w = rng.uniform(-1, 1, (m, c, 3, 3)).astype(np.float16)
    b = rng.uniform(-1, 1, (w.shape[0],)).astype(np.float16)
    return (x, w, b), {"pads": [1, 1, 1, 1]}


def test_mutants_are_caught_and_the_kernel_is_not(tmp_path: Path, model: AscendcModel) -> None:
    """Each mutant fails (the checker's message or the reference), the kernel passes."""
    import re

    for which in (None, "small", "streamed"):
        arrays, attrs = _mutant_call(which)
        _check(model, *arrays, attrs)  # no false positive
    caught = []
    for k, (name, old, new, which, expect) in enumerate(MUTANTS):
        op = AscendcModel(_mutant_folder(tmp_path / str(k), old, new), soc="Ascend910B3")
        arrays, attrs = _mutant_call(which)
        try:
            _check(op, *arrays, attrs)
            message = ""
        except (KernelError, AssertionError) as e:
            message = str(e)
        if message and re.search(expect, message):
            caught.append(name)
        else:
            print(f"not caught: {name}: {message[:300]}")
    print(f"cube mutants of the shipped kernel: {len(caught)} of {len(MUTANTS)} caught")
    assert len(caught) == len(MUTANTS)


# ------------------------------------------------------------------------------- tune
def test_tune_searches_the_cube_tiling(tmp_path: Path) -> None:
    """``opsdk tune`` on the Cube kernel: candidates past L0C are dropped with the reason, the
    lowest estimate wins, the pick is the same twice and lands in tuning.json, which the
    tiling then uses."""
    from opsdk.ascend.ascendc import aicore_kernel
    from opsdk.ascend.ascendc._tune_cube import tune_cube
    from opsdk.registry import load_spec

    folder = tmp_path / "fused_conv_bn_relu"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__", "test_*",
                                                                  "tuning.json"))
    tiling = folder / "op_kernel" / "tiling.py"
    tiling.write_text(tiling.read_text() + '''
def candidates():
    return [{"mCap": 128, "nCap": 128, "kCap": 0, "dbuf": 1},
            {"mCap": 256, "nCap": 256, "kCap": 0, "dbuf": 1},
            {"mCap": 64, "nCap": 32, "kCap": 2, "dbuf": 0}]


TUNE_CALLS = ({"shapes": [(1, 32, 16, 16), (256, 32, 3, 3), (256,)], "attrs": {"pads": [1, 1, 1, 1]}},)
''')
    spec = load_spec(folder)
    picks: list[dict[str, int]] = []
    for _ in range(2):
        kernel = aicore_kernel(spec, folder)
        r = tune_cube(spec, folder, kernel, soc="Ascend910B3", dtype="float16", write=not picks)
        picks.append(r.chosen.knobs)
        assert "CO1 (L0C)" in r.trials[1].problem and r.trials[1].cycles is None
        best = min((t for t in r.trials if t.cycles), key=lambda t: t.cycles or 0)
        assert r.chosen is best and r.as_dict()["knobs"] == best.knobs
    assert picks[0] == picks[1]
    assert json.loads((folder / "tuning.json").read_text())["knobs"] == picks[0]
    steps = dict(aicore_kernel(spec, folder).tiling.steps)
    assert f"ceildiv(nPad, {picks[0]['nCap']})" == steps["nTiles"]
