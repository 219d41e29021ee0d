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

from opsdk.errors import DeviceUnavailable
from opsdk.onnx import Session
from opsdk.triton import (
    RepositoryOptions,
    build_repository,
    check_npu_ge_folder,
    ensure_ort_env,
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


@pytest.fixture(scope="module")
def ort_1232() -> Path:
    try:
        return ensure_ort_env()
    except DeviceUnavailable as e:
        pytest.skip(str(e))


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
    report = check_npu_ge_folder(folder, python=ort_1232)
    assert report.ok, report.problems
