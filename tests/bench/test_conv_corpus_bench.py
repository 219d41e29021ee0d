"""benchmarks/conv_corpus.py reads every Conv's geometry from a model as it runs: input
shapes from one ONNX Runtime run, weights from initializers or Constant nodes, auto_pad
resolved, identical geometries counted once per model. Nothing here times anything."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("conv_corpus", ROOT / "benchmarks" / "conv_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("conv_corpus", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _model() -> onnx.ModelProto:
    """x (1, 3, 9, 11) -> Conv 3->8 3x3 s2 SAME_UPPER (initializer) -> Relu -> depthwise 3x3
    (Constant weights, explicit pads) twice, the second on the first's output."""
    rng = np.random.default_rng(0)
    w0 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w0")
    w1 = helper.make_tensor("w1v", TensorProto.FLOAT, (8, 1, 3, 3),
                            rng.standard_normal(72).astype(np.float32).tolist())
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("Relu", ["c0"], ["r0"]),
        helper.make_node("Constant", [], ["w1"], value=w1),
        helper.make_node("Conv", ["r0", "w1"], ["c1"], group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c1", "w1"], ["y"], group=8, pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w0])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_conv_shapes_come_from_a_run_of_the_model() -> None:
    cc = _bench()
    shapes = cc.conv_shapes(_model(), (1, 3, 9, 11))
    first = cc.ConvShape(1, 3, 9, 11, 8, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1)
    # SAME_UPPER at stride 2: H 9 -> 5 needs 2 rows of padding (1 + 1), W 11 -> 6 needs 2
    assert shapes[0] == first
    dw = cc.ConvShape(1, 8, 5, 6, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 8)
    assert shapes[1:] == [dw, dw]
    assert shapes[1].label == "N1 8->8 5x6 3x3 dw" and first.label == "N1 3->8 9x11 3x3 s2"


def test_rows_count_each_geometry_once_per_model(tmp_path: Path) -> None:
    cc = _bench()
    cc.INPUTS["tiny"] = (1, 3, 9, 11)
    try:
        rows = cc.corpus_rows({"tiny": _model()})
    finally:
        del cc.INPUTS["tiny"]
    assert [r.models for r in rows] == [{"tiny": 1}, {"tiny": 2}]
    for r, ms in zip(rows, ((2.0, 1.0), (1.0, 4.0)), strict=True):
        r.ms = {1: ms}
    assert cc.summary(rows, [1])[0].startswith("1 thread(s): median ratio 1.12x, max 2.00x; 1 of 2")
    runs = []
    for k in (1, 2):  # the --json format, the second run twice as fast for opsdk
        data = [{"label": r.shape.label, "models": r.models,
                 "ms": {"1": {"opsdk": r.ms[1][0] / k, "onnxruntime": r.ms[1][1]}}} for r in rows]
        runs.append(tmp_path / f"run{k}.json")
        runs[-1].write_text(json.dumps(data))
    table = cc.compare(str(runs[0]), str(runs[1]), [1]).splitlines()
    assert table[2] == "| N1 3->8 9x11 3x3 s2 | tiny | 1.000 | 1.000 | 2.00x | 1.00x |"
    assert table[3] == "| N1 8->8 5x6 3x3 dw | tiny x2 | 4.000 | 0.500 | 0.25x | 0.12x |"
