"""Inputs Triton can carry: scalars on both targets, value inputs probed with values the
model takes, and dims derived through control flow and stride arithmetic (issue 24).

The cpu target is served by a real tritonserver (the serving venv); the ascend model file is
run by ONNX Runtime here and, where the venv exists, by ONNX Runtime 1.23.2 as npu_ge does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from opsdk.onnx import Session
from opsdk.triton import (
    AscendOptions,
    RepositoryOptions,
    build_repository,
    check_npu_ge_folder,
)
from opsdk.triton.testing import triton_server  # noqa: F401


def _branch(name: str, k: float) -> onnx.GraphProto:
    nodes = [helper.make_node("Constant", [], [f"{name}_k"],
                              value=numpy_helper.from_array(np.array(k, np.float32))),
             helper.make_node("Mul", ["x", f"{name}_k"], [f"{name}_y"])]
    return helper.make_graph(nodes, name, [],
                             [helper.make_tensor_value_info(f"{name}_y", T.FLOAT, ["n", "t"])])


def scalar_model() -> onnx.ModelProto:
    """silero-vad's pattern: a rank-0 int64 ``sr`` whose value picks an If branch (x * 2 at
    16000, x * 3 otherwise), and a rank-0 output ``total``."""
    nodes = [
        helper.make_node("Constant", [], ["c16k"],
                         value=numpy_helper.from_array(np.array(16000, np.int64))),
        helper.make_node("Equal", ["sr", "c16k"], ["is16k"]),
        helper.make_node("If", ["is16k"], ["y"], then_branch=_branch("then", 2.0),
                         else_branch=_branch("else", 3.0)),
        helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, "scalar",
        [helper.make_tensor_value_info("x", T.FLOAT, ["n", "t"]),
         helper.make_tensor_value_info("sr", T.INT64, [])],
        [helper.make_tensor_value_info("y", T.FLOAT, ["n", "t"]),
         helper.make_tensor_value_info("total", T.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def _config_dims(text: str, name: str) -> str:
    block = text.split(f'name: "{name}"', 1)[1]
    return block.split("dims:", 1)[1].split("\n", 1)[0].strip()


# ----------------------------------------------------------------------------- item 2
@pytest.mark.slow
def test_scalar_input_and_output_are_served(tmp_path: Path, triton_server: Any,  # noqa: F811
                                            ) -> None:
    """Item 2: a rank-0 input (silero-vad's ``sr``) and a rank-0 output travel as dims
    [ 1 ] (tritonserver refuses ``dims: [ ]``, and an empty reshape outside batching
    models), and reach the model as rank 0; the If on the value takes the right branch."""
    import tritonclient.http as http

    path = tmp_path / "scalar.onnx"
    onnx.save(scalar_model(), str(path))
    folder = build_repository(path, tmp_path / "repo", RepositoryOptions("scalar"))
    config = (folder / "config.pbtxt").read_text()
    assert "dims: [  ]" not in config and "dims: [ ]" not in config
    assert _config_dims(config, "sr") == "[ 1 ]" and _config_dims(config, "total") == "[ 1 ]"
    server = triton_server(tmp_path / "repo")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    session = Session(str(path))
    with http.InferenceServerClient(server.http_url) as client:
        for rate in (16000, 8000):
            xin = http.InferInput("x", [2, 3], "FP32")
            xin.set_data_from_numpy(x)
            sr = http.InferInput("sr", [1], "INT64")
            sr.set_data_from_numpy(np.array([rate], np.int64))
            result = client.infer("scalar", [xin, sr])
            want_y, want_total = session.run(None, {"x": x, "sr": np.array(rate, np.int64)})
            np.testing.assert_array_equal(result.as_numpy("y"), want_y)
            assert result.as_numpy("total").shape == (1,)
            assert result.as_numpy("total")[0] == want_total
        assert not np.array_equal(*(client.infer("scalar", _feeds(x, r)).as_numpy("y")
                                    for r in (16000, 8000)))


def _feeds(x: np.ndarray, rate: int) -> list[Any]:
    import tritonclient.http as http

    xin = http.InferInput("x", list(x.shape), "FP32")
    xin.set_data_from_numpy(x)
    sr = http.InferInput("sr", [1], "INT64")
    sr.set_data_from_numpy(np.array([rate], np.int64))
    return [xin, sr]


def test_ascend_model_takes_and_gives_scalars_as_shape_1(tmp_path: Path) -> None:
    """Item 2, ascend: the model file npu_ge loads has shape [1] where the model had rank 0
    (npu_ge compares config dims with ONNX dims index by index), reshaped inside the graph,
    and computes what the original did."""
    path = tmp_path / "scalar.onnx"
    onnx.save(scalar_model(), str(path))
    notes: list[str] = []
    folder = build_repository(path, tmp_path / "repo",
                              RepositoryOptions("scalar", target="ascend"), report=notes.append)
    config = (folder / "config.pbtxt").read_text()
    assert _config_dims(config, "sr") == "[ 1 ]" and _config_dims(config, "total") == "[ 1 ]"
    written = onnx.load(str(folder / "1" / "model.onnx"))
    shapes = {v.name: [d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim]
              for v in [*written.graph.input, *written.graph.output]}
    assert shapes["sr"] == [1] and shapes["total"] == [1]
    assert any("scalar 'sr', 'total'" in n for n in notes)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    import onnxruntime as ort

    sess = ort.InferenceSession(str(folder / "1" / "model.onnx"),
                                providers=["CPUExecutionProvider"])
    original = Session(scalar_model())
    for rate in (16000, 8000):
        y, total = sess.run(None, {"x": x, "sr": np.array([rate], np.int64)})
        want_y, want_total = original.run(None, {"x": x, "sr": np.array(rate, np.int64)})
        np.testing.assert_array_equal(y, want_y)
        assert total.shape == (1,) and total[0] == want_total


def test_ascend_scalar_folder_passes_the_check(tmp_path: Path, ort_1232: Path) -> None:
    """Item 2, ascend: ONNX Runtime 1.23.2 (as in npu_ge) opens and runs the folder."""
    path = tmp_path / "scalar.onnx"
    onnx.save(scalar_model(), str(path))
    folder = build_repository(path, tmp_path / "repo", RepositoryOptions("scalar",
                                                                          target="ascend"))
    assert _config_dims((folder / "config.pbtxt").read_text(), "sr") == "[ 1 ]"
    report = check_npu_ge_folder(folder, python=ort_1232)
    assert report.ok, report.problems


# ----------------------------------------------------------------------------- item 7
def _yolo_level(k: int, feat: str, nodes: list[onnx.NodeProto]) -> tuple[str, str]:
    """One detection level: the head's [b, 6, hi*wi] and the anchor grid's [hi*wi, 2] as
    YOLOv8's exporter writes them (Shape -> Gather -> Range -> Expand)."""
    p = f"l{k}_"
    nodes += [
        helper.make_node("Conv", [feat, "head_w"], [p + "head"]),
        helper.make_node("Shape", [p + "head"], [p + "shape"]),
        helper.make_node("Slice", [p + "shape", "i0", "i1"], [p + "batch"]),
        helper.make_node("Concat", [p + "batch", "six", "minus1"], [p + "flat_shape"], axis=0),
        helper.make_node("Reshape", [p + "head", p + "flat_shape"], [p + "flat"]),
        helper.make_node("Gather", [p + "shape", "two"], [p + "h"], axis=0),
        helper.make_node("Gather", [p + "shape", "three"], [p + "w"], axis=0),
    ]
    for axis, dim in (("y", "h"), ("x", "w")):
        nodes += [helper.make_node("Cast", [p + dim], [p + dim + "f"], to=T.FLOAT),
                  helper.make_node("Range", ["zero_f", p + dim + "f", "one_f"], [p + axis])]
    nodes += [
        helper.make_node("Unsqueeze", [p + "y", "ax1"], [p + "y2"]),
        helper.make_node("Unsqueeze", [p + "x", "ax0"], [p + "x2"]),
        helper.make_node("Unsqueeze", [p + "h", "ax0"], [p + "h1"]),
        helper.make_node("Unsqueeze", [p + "w", "ax0"], [p + "w1"]),
        helper.make_node("Concat", [p + "h1", p + "w1"], [p + "grid_shape"], axis=0),
        helper.make_node("Expand", [p + "y2", p + "grid_shape"], [p + "gy"]),
        helper.make_node("Expand", [p + "x2", p + "grid_shape"], [p + "gx"]),
        helper.make_node("Unsqueeze", [p + "gx", "axm1"], [p + "gx3"]),
        helper.make_node("Unsqueeze", [p + "gy", "axm1"], [p + "gy3"]),
        helper.make_node("Concat", [p + "gx3", p + "gy3"], [p + "grid"], axis=-1),
        helper.make_node("Reshape", [p + "grid", "pairs"], [p + "anchors"]),
    ]
    return p + "flat", p + "anchors"


def yolo_like_model(batch_only: bool = False) -> onnx.ModelProto:
    """YOLOv8's detection output: three levels at strides 8, 16, 32 (stride-2 convs
    stacked), each flattened to [b, 6, hi*wi] and concatenated, plus an anchor grid from
    Shape -> Range -> Expand added to two channels; y is [b, 6, A] with
    A = ceil(h/8)ceil(w/8) + ceil(h/16)ceil(w/16) + ceil(h/32)ceil(w/32)."""
    rng = np.random.default_rng(0)
    consts = {"down_w": rng.standard_normal((3, 3, 3, 3)).astype(np.float32) * 0.2,
              "head_w": rng.standard_normal((6, 3, 1, 1)).astype(np.float32),
              "i0": np.array([0], np.int64), "i1": np.array([1], np.int64),
              "six": np.array([6], np.int64), "minus1": np.array([-1], np.int64),
              "two": np.array(2, np.int64), "three": np.array(3, np.int64),
              "zero_f": np.array(0.0, np.float32), "one_f": np.array(1.0, np.float32),
              "ax0": np.array([0], np.int64), "ax1": np.array([1], np.int64),
              "axm1": np.array([-1], np.int64), "pairs": np.array([-1, 2], np.int64),
              "c0": np.array([0], np.int64), "c2": np.array([2], np.int64),
              "c6": np.array([6], np.int64)}
    nodes: list[onnx.NodeProto] = []
    feat, flats, grids = "x", [], []
    for k in range(5):  # strides 2, 4, 8, 16, 32
        nodes.append(helper.make_node("Conv", [feat, "down_w"], [f"down{k}"], strides=[2, 2],
                                      pads=[1, 1, 1, 1]))
        feat = f"down{k}"
        if k >= 2:
            flat, grid = _yolo_level(k, feat, nodes)
            flats.append(flat)
            grids.append(grid)
    nodes += [
        helper.make_node("Concat", flats, ["boxes"], axis=2),
        helper.make_node("Concat", grids, ["anchors"], axis=0),
        helper.make_node("Transpose", ["anchors"], ["anchors_t"], perm=[1, 0]),
        helper.make_node("Slice", ["boxes", "c0", "c2", "ax1"], ["xy"]),
        helper.make_node("Slice", ["boxes", "c2", "c6", "ax1"], ["rest"]),
        helper.make_node("Add", ["xy", "anchors_t"], ["xy_abs"]),
        helper.make_node("Concat", ["xy_abs", "rest"], ["y"], axis=1),
    ]
    dims = ["b", 3, 320, 320] if batch_only else ["b", 3, "h", "w"]
    out = ["b", 6, 2100] if batch_only else ["b", 6, None]
    graph = helper.make_graph(nodes, "yolo_like",
                              [helper.make_tensor_value_info("x", T.FLOAT, dims)],
                              [helper.make_tensor_value_info("y", T.FLOAT, out)],
                              [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def _anchors(h: int, w: int) -> int:
    return sum(-(-h // s) * -(-w // s) for s in (8, 16, 32))


def test_yolo_anchor_count_is_derived_from_the_strides(tmp_path: Path) -> None:
    """Item 7: the anchor count is an expression of the input dims, not "a data-dependent
    size?"; stacked stride-2 layers give one division per level (ceil(h/8) written
    ``(h+7)/8``), and it equals ONNX Runtime's count on sizes no probe used."""
    from opsdk.onnx._dimprop import propagate_dims
    from opsdk.triton import _npu_ge_expr as ge_expr

    model = yolo_like_model()
    (b, six, anchors), = [propagate_dims(model)["y"]]
    assert str(b) == "b" and str(six) == "6"
    assert str(anchors) == ("floor((h + 15)/16)*floor((w + 15)/16) + floor((h + 31)/32)*"
                            "floor((w + 31)/32) + floor((h + 7)/8)*floor((w + 7)/8)")
    path = tmp_path / "yolo.onnx"
    onnx.save(model, str(path))
    notes: list[str] = []
    folder = build_repository(path, tmp_path / "repo", RepositoryOptions("yolo", target="ascend"),
                              report=notes.append)
    written = onnx.load(str(folder / "1" / "model.onnx"))
    name = written.graph.output[0].type.tensor_type.shape.dim[2].dim_param
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for h, w in ((320, 320), (100, 37), (33, 65)):
        (y,) = sess.run(None, {"x": np.zeros((1, 3, h, w), np.float32)})
        assert y.shape[2] == _anchors(h, w) == ge_expr.evaluate(name, {"h": h, "w": w})


def test_a_model_with_only_a_batch_dim_gets_a_plain_message(tmp_path: Path) -> None:
    """Item 7: an unbatched model whose only variable input dim is the leading one, which
    npu_ge leaves out, is told so, not "input dims are named nothing"."""
    from opsdk.triton import TritonConfigError

    x = helper.make_tensor_value_info("x", T.FLOAT, ["N", 3, 8])
    graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 2, 0])],
                              "t", [x], [helper.make_tensor_value_info("y", T.FLOAT, [3, 8, "N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "t.onnx"
    onnx.save(model, str(path))
    with pytest.raises(TritonConfigError) as err:
        build_repository(path, tmp_path / "repo", RepositoryOptions("t", target="ascend"))
    text = str(err.value)
    assert "named nothing" not in text
    assert "the inputs' only variable dim is N, their leading dim" in text
    assert "--max-batch-size N" in text


# ----------------------------------------------------------------------------- item 6
def _untyped(name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, T.FLOAT, None)


def if_model() -> onnx.ModelProto:
    """y = If(sr == 16000, Concat(x, x), Tile(x, [1, 2])): ONNX shape inference leaves the
    doubled dim unknown; both branches give [n, 2*t]."""
    then = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["ty"], axis=1)], "then",
                             [], [_untyped("ty")])
    other = helper.make_graph([helper.make_node("Tile", ["x", "reps"], ["ey"])], "else", [],
                              [_untyped("ey")])
    nodes = [helper.make_node("Equal", ["sr", "c16k"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], then_branch=then, else_branch=other)]
    graph = helper.make_graph(
        nodes, "if_model",
        [helper.make_tensor_value_info("x", T.FLOAT, ["n", "t"]),
         helper.make_tensor_value_info("sr", T.INT64, [])],
        [helper.make_tensor_value_info("y", T.FLOAT, [None, None])],
        [numpy_helper.from_array(np.array(16000, np.int64), "c16k"),
         numpy_helper.from_array(np.array([1, 2], np.int64), "reps")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def loop_model() -> onnx.ModelProto:
    """A Loop of n iterations (n from Shape): carried acc [n, t] (+= x), scan output
    acc's first row [t] per iteration, so the scan is [n, t]."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Gather", ["acc_out", "zero"], ["row"], axis=0)],
        "body",
        [helper.make_tensor_value_info("i", T.INT64, []),
         helper.make_tensor_value_info("cond_in", T.BOOL, []), _untyped("acc_in")],
        [helper.make_tensor_value_info("cond_out", T.BOOL, []), _untyped("acc_out"),
         _untyped("row")])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Loop", ["n", "", "x"], ["acc", "rows"], body=body)]
    graph = helper.make_graph(
        nodes, "loop_model", [helper.make_tensor_value_info("x", T.FLOAT, ["n", "t"])],
        [helper.make_tensor_value_info("acc", T.FLOAT, None),
         helper.make_tensor_value_info("rows", T.FLOAT, None)],
        [numpy_helper.from_array(np.array(0, np.int64), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def scan_model() -> onnx.ModelProto:
    """A Scan over x's columns (scan_input_axes 1): state s [n] += column; each step's s is
    a scan output stacked on axis 1, so acc is [n] and cums [n, t]."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "col"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["step"])],
        "body", [_untyped("s_in"), _untyped("col")], [_untyped("s_out"), _untyped("step")])
    nodes = [helper.make_node("ReduceSum", ["x", "one"], ["s0"], keepdims=0),
             helper.make_node("Scan", ["s0", "x"], ["acc", "cums"], body=body,
                              num_scan_inputs=1, scan_input_axes=[1], scan_output_axes=[1])]
    graph = helper.make_graph(
        nodes, "scan_model", [helper.make_tensor_value_info("x", T.FLOAT, ["n", "t"])],
        [helper.make_tensor_value_info("acc", T.FLOAT, None),
         helper.make_tensor_value_info("cums", T.FLOAT, None)],
        [numpy_helper.from_array(np.array([1], np.int64), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def pad_lstm_model() -> onnx.ModelProto:
    """torch's pad arithmetic (ConstantOfShape -> Concat -> Reshape -> Slice(step -1) ->
    Transpose -> Reshape, all constants) before a Pad, then an LSTM: y is [t+64, 1, n, 8]."""
    rng = np.random.default_rng(0)
    consts = {"two": np.array([2], np.int64), "pad_spec": np.array([0, 64], np.int64),
              "pairs": np.array([-1, 2], np.int64), "m1": np.array([-1], np.int64),
              "big": np.array([-2**63 + 1], np.int64), "z": np.array([0], np.int64),
              "ax2": np.array([2], np.int64),
              "W": rng.standard_normal((1, 32, 1)).astype(np.float32),
              "R": rng.standard_normal((1, 32, 8)).astype(np.float32)}
    nodes = [
        helper.make_node("ConstantOfShape", ["two"], ["zeros"],
                         value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Concat", ["pad_spec", "zeros"], ["spec"], axis=0),
        helper.make_node("Reshape", ["spec", "pairs"], ["spec2"]),
        helper.make_node("Slice", ["spec2", "m1", "big", "z", "m1"], ["rev"]),
        helper.make_node("Transpose", ["rev"], ["revt"], perm=[1, 0]),
        helper.make_node("Reshape", ["revt", "m1"], ["pads"]),
        helper.make_node("Pad", ["x", "pads"], ["xp"]),   # x [n, t] -> [n, t+64]
        helper.make_node("Unsqueeze", ["xp", "ax2"], ["x3"]),
        helper.make_node("Transpose", ["x3"], ["seq"], perm=[1, 0, 2]),
        helper.make_node("LSTM", ["seq", "W", "R"], ["y"], hidden_size=8),
    ]
    graph = helper.make_graph(nodes, "pad_lstm",
                              [helper.make_tensor_value_info("x", T.FLOAT, ["n", "t"])],
                              [helper.make_tensor_value_info("y", T.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize(("make", "feeds", "expected"), [
    (if_model, {"sr": np.array(16000, np.int64)}, {"y": ["n", "2*t"]}),
    (if_model, {"sr": np.array(8000, np.int64)}, {"y": ["n", "2*t"]}),
    (loop_model, {}, {"acc": ["n", "t"], "rows": ["n", "t"]}),
    (scan_model, {}, {"acc": ["n"], "cums": ["n", "t"]}),
    (pad_lstm_model, {}, {"y": ["t + 64", "1", "n", "8"]}),
])
def test_dims_through_if_loop_folded_constants_and_lstm(make: Any, feeds: dict[str, Any],
                                                        expected: dict[str, list[str]]) -> None:
    """Item 6: dim propagation enters If branches (the dims both agree on), Loop bodies
    (carried values, scan outputs with the trip count) and Scan bodies (states, scan outputs
    with the sequence length on their axis), folds constant index arithmetic, and sizes LSTM
    outputs; each expression equals ONNX Runtime's shape."""
    import onnxruntime as ort

    from opsdk.onnx._dimprop import propagate_dims

    model = make()
    derived = propagate_dims(model)
    assert {k: [str(d) for d in v] for k, v in derived.items() if v is not None} == expected
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, t in ((2, 5), (3, 7)):
        x = np.ones((n, t), np.float32)
        outs = sess.run(None, {"x": x, **feeds})
        for o, got in zip(model.graph.output, outs, strict=True):
            want = [d.evaluate({"n": n, "t": t}) for d in derived[o.name] or ()]
            assert list(got.shape) == want


def value_branch_model() -> onnx.ModelProto:
    """y = If(sr == 16000, x * 2, Reshape(x, [-1, 7])): the 8 kHz branch runs only when
    n*t divides by 7, so probing with sr = 0 fails where sr = 16000 runs."""
    other = helper.make_graph([helper.make_node("Reshape", ["x", "seven"], ["ey"])], "else",
                              [], [_untyped("ey")])
    model = scalar_model()
    model.graph.initializer.append(numpy_helper.from_array(np.array([-1, 7], np.int64),
                                                           "seven"))
    for a in model.graph.node[2].attribute:
        if a.name == "else_branch":
            a.g.CopyFrom(other)
    return model


def test_value_candidates_come_from_the_graphs_comparisons() -> None:
    """Item 6: the values a model compares its inputs with, through Cast/Reshape and into
    subgraphs, on either side of the comparison."""
    from opsdk.onnx._probe import value_candidates

    assert value_candidates(scalar_model()) == {"sr": [16000]}
    inner = helper.make_graph(
        [helper.make_node("Less", ["three", "kf"], ["big"])], "b", [],
        [helper.make_tensor_value_info("big", T.BOOL, [])])
    nodes = [helper.make_node("Cast", ["k"], ["kf"], to=T.FLOAT),
             helper.make_node("Greater", ["mode", "two"], ["g"]),
             helper.make_node("If", ["g"], ["y"], then_branch=inner, else_branch=inner)]
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("k", T.INT64, [1]),
                     helper.make_tensor_value_info("mode", T.INT32, [])],
        [helper.make_tensor_value_info("y", T.BOOL, [])],
        [numpy_helper.from_array(np.array(3.0, np.float32), "three"),
         numpy_helper.from_array(np.array(2, np.int32), "two")])
    assert value_candidates(helper.make_model(graph)) == {"k": [3.5], "mode": [3]}


def test_value_inputs_are_probed_with_the_models_own_values(tmp_path: Path) -> None:
    """Item 6: the ascend build probes ``sr`` with 16000, the value the graph compares it
    with (zeros took the branch that fails); --probe-values overrides it, and a failing
    value is named in the error with the fix."""
    from opsdk.triton import TritonConfigError

    path = tmp_path / "vb.onnx"
    onnx.save(value_branch_model(), str(path))
    notes: list[str] = []
    build_repository(path, tmp_path / "a", RepositoryOptions("vb", target="ascend"),
                     report=notes.append)
    assert any("checked with ONNX Runtime on 2 probes" in n and n.endswith("and values sr=16000")
               for n in notes)
    with pytest.raises(TritonConfigError, match=r"values sr=8000.*--probe-values NAME=VALUE"):
        build_repository(path, tmp_path / "b", RepositoryOptions(
            "vb", target="ascend", ascend=AscendOptions(probe_values=(("sr", 8000),))))
    build_repository(path, tmp_path / "c", RepositoryOptions(
        "vb", target="ascend", ascend=AscendOptions(probe_values=(("sr", 16000),))))


def test_cli_probe_values_on_build_and_check(tmp_path: Path, ort_1232: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Item 6: ``--probe-values INPUT=VALUE`` on ``opsdk triton build`` and ``check``."""
    from opsdk.cli import main

    path = tmp_path / "vb.onnx"
    onnx.save(value_branch_model(), str(path))
    args = ["triton", "build", str(path), "-o", str(tmp_path / "r"), "--name", "vb",
            "--target", "ascend"]
    assert main([*args, "--probe-values", "sr=8000"]) == 1
    assert "values sr=8000" in capsys.readouterr().err
    assert main([*args, "--probe-values", "sr=16000"]) == 0
    folder = str(tmp_path / "r" / "vb")
    assert main(["triton", "check", folder, "--probe-values", "sr=16000"]) == 0
    assert main(["triton", "check", folder, "--probe-values", "sr=8000"]) == 1
    with pytest.raises(SystemExit):
        main(["triton", "build", str(path), "-o", str(tmp_path / "s"), "--name", "vb",
              "--probe-values", "sr=fast"])
    assert "expected INPUT=VALUE" in capsys.readouterr().err


# ---------------------------------------------------------------------------- item 11
def test_cpu_repository_with_a_custom_op_is_relocatable(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 11: the model folder holds a copy of the custom operator's source folder and
    OPSDK_OPERATORS_PATH names it relative to the model folder, so no path of the building
    checkout is written; moved elsewhere, the registry finds the operator in the copy (as
    model.py resolves the path)."""
    import json
    import shutil

    from opsdk import registry
    from opsdk.triton._target_cpu import OPERATORS_DIR
    from tests._helpers.triton_models import custom_op_model

    user_ops = tmp_path / "my_ops"
    shutil.copytree(Path(registry.find_operator("ThresholdedRelu").folder),
                    user_ops / "thresholded_relu")
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(user_ops))
    path = tmp_path / "custom.onnx"
    onnx.save(custom_op_model("com.opsdk", "ThresholdedRelu"), str(path))
    notes: list[str] = []
    folder = build_repository(path, tmp_path / "repo", RepositoryOptions("custom"),
                              report=notes.append)
    config = (folder / "config.pbtxt").read_text()
    assert str(user_ops) not in config and str(Path.cwd()) not in config
    assert 'string_value: "operators"' in config
    copied = folder / OPERATORS_DIR / "thresholded_relu"
    assert (copied / "spec.py").read_text() == (user_ops / "thresholded_relu" / "spec.py"
                                                ).read_text()
    assert any("copied operators/thresholded_relu" in n for n in notes)
    listed = json.loads((folder / ".opsdk-files.json").read_text())["files"]
    assert "operators/thresholded_relu/kernel.cpp" in listed
    moved = tmp_path / "elsewhere" / "repo"
    shutil.move(str(tmp_path / "repo"), str(moved))
    shutil.rmtree(user_ops)
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str((moved / "custom" / "operators").resolve()))
    info = registry.find_operator("com.opsdk::ThresholdedRelu")
    assert info.origin == "source" and info.folder.is_relative_to(moved.resolve())
    build_repository(path, moved, RepositoryOptions("custom"), force=True)  # replaces its own


@pytest.mark.slow
def test_first_kernel_build_of_a_session_prints_progress(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capfd: pytest.CaptureFixture[str],
                                                         ) -> None:
    """Item 11: a Session whose custom node's kernel is not in the cache says on stderr that
    it is compiling it (the first build took up to 86 s in silence); a cached one is quiet.
    The scaffolded operator's kernel gets a unique comment, so it really compiles."""
    import uuid

    from opsdk.cli import main
    from opsdk.onnx import export_model

    assert main(["new", "ProgressProbe", "--dir", str(tmp_path / "ops")]) == 0
    kernel = tmp_path / "ops" / "progress_probe" / "kernel.cpp"
    kernel.write_text(kernel.read_text() + f"\n// {uuid.uuid4()}\n")
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(tmp_path / "ops"))
    model = export_model("ProgressProbe", shapes={"x": ("N", 4)})
    capfd.readouterr()
    x = np.ones((2, 4), np.float32)
    Session(model).run(None, {"x": x})
    err = capfd.readouterr().err
    assert ("opsdk: com.example::ProgressProbe is used for the first time, its kernel is "
            "compiled once into the opsdk cache: building progress_probe (kernel.cpp) ...") in err
    Session(model).run(None, {"x": x})
    assert "compiled once" not in capfd.readouterr().err


def test_a_scalar_output_that_other_nodes_read_stays_in_order(tmp_path: Path) -> None:
    """Item 2: a rank-0 output that the graph also reads (s = x + x; t = s * s, both
    outputs): its readers read the rank-0 value, the Reshape to [1] comes last; the readers
    used to read the Reshape's output before it was computed."""
    nodes = [helper.make_node("Add", ["x", "x"], ["s"]), helper.make_node("Mul", ["s", "s"], ["t"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.FLOAT, [])],
                              [helper.make_tensor_value_info("s", T.FLOAT, []),
                               helper.make_tensor_value_info("t", T.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(tmp_path / "m.onnx"))
    folder = build_repository(tmp_path / "m.onnx", tmp_path / "repo",
                              RepositoryOptions("m", target="ascend"))
    written = onnx.load(str(folder / "1" / "model.onnx"))
    onnx.checker.check_model(written, full_check=True)
    import onnxruntime as ort

    s, t = ort.InferenceSession(written.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(
        None, {"x": np.array([1.5], np.float32)})
    assert s.tolist() == [3.0] and t.tolist() == [9.0]
