"""Real models whose inputs test serving (issue 24 items 2, 6, 7, 8): silero-vad (a rank-0
``sr`` whose value picks nested If branches, an LSTM state whose batch must match the
input's) and YOLOv8n (an anchor count fixed by the strides), from the ``silero-vad`` and
``nudenet`` wheels on PyPI (``scripts/setup.d/36-serving-models.sh``; the tests skip with
the reason where the models were not fetched).

Each model is served on the cpu target by one real tritonserver and compared with
``opsdk.onnx.Session``; built for the ascend target, its output dim names are evaluated as
npu_ge evaluates them against ONNX Runtime; the doctor's placeholder shapes run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from opsdk.ascend.atc.doctor import diagnose
from opsdk.onnx import Session
from opsdk.testing import corpus
from opsdk.triton import (
    RepositoryOptions,
    build_repository,
    check_npu_ge_folder,
)
from opsdk.triton import _npu_ge_expr as ge_expr
from opsdk.triton.testing import triton_server  # noqa: F401

SETUP = "bash scripts/setup.d/36-serving-models.sh"
SILERO_DIMS = (("output", ("input_0", "1")), ("stateN", ("2", "input_0", "128")))


def _model(name: str) -> Path:
    path = corpus.find(name)
    if path is None:
        pytest.skip(f"{name} is not fetched ({SETUP}; needs PyPI)")
    return path


@pytest.fixture(scope="module")
def silero() -> Path:
    return _model("silero-vad")


@pytest.fixture(scope="module")
def yolo() -> Path:
    return _model("yolov8n")


def silero_feeds(batch: int = 1, rate: int = 16000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"input": rng.standard_normal((batch, 512)).astype(np.float32) * 0.1,
            "state": np.zeros((2, batch, 128), np.float32), "sr": np.array(rate, np.int64)}


@pytest.mark.slow
def test_both_served_by_one_tritonserver(silero: Path, yolo: Path, tmp_path: Path,
                                         triton_server: Any) -> None:  # noqa: F811
    """Items 2 and 7 on the cpu target: silero-vad's rank-0 ``sr`` travels as [1] (its
    config used to say ``dims: [ ]``, which took the whole repository down) and YOLOv8n
    serves; both equal Session's results."""
    import tritonclient.http as http

    build_repository(silero, tmp_path / "repo", RepositoryOptions("silero"))
    build_repository(yolo, tmp_path / "repo", RepositoryOptions("yolo"))
    server = triton_server(tmp_path / "repo")
    feeds = silero_feeds()
    image = np.random.default_rng(1).random((1, 3, 320, 320)).astype(np.float32)
    with http.InferenceServerClient(server.http_url) as client:
        inputs = []
        for name, value in feeds.items():
            value = value.reshape(value.shape or (1,))
            dtype = "INT64" if value.dtype == np.int64 else "FP32"
            inputs.append(http.InferInput(name, list(value.shape), dtype))
            inputs[-1].set_data_from_numpy(value)
        got = client.infer("silero", inputs)
        x = http.InferInput("images", list(image.shape), "FP32")
        x.set_data_from_numpy(image)
        boxes = client.infer("yolo", [x]).as_numpy("output0")
    want = Session(str(silero)).run(None, feeds)
    np.testing.assert_allclose(got.as_numpy("output"), want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.as_numpy("stateN"), want[1], rtol=1e-5, atol=1e-6)
    (want_boxes,) = Session(str(yolo)).run(None, {"images": image})
    assert boxes.shape == (1, 22, 2100)
    np.testing.assert_allclose(boxes, want_boxes, rtol=1e-4, atol=1e-3)


def test_yolov8_ascend_names_the_anchor_count(yolo: Path, tmp_path: Path, ort_1232: Path,
                                              ) -> None:
    """Item 7: YOLOv8n's anchor count is derived from its strides, written for npu_ge, and
    equals ONNX Runtime's count on sizes the probes did not use; ONNX Runtime 1.23.2 (as in
    npu_ge) runs the folder."""
    folder = build_repository(yolo, tmp_path / "repo", RepositoryOptions("yolo",
                                                                         target="ascend"))
    written = onnx.load(str(folder / "1" / "model.onnx"))
    name = written.graph.output[0].type.tensor_type.shape.dim[2].dim_param
    # its FPN concatenates upsampled and lateral maps, so it runs only on multiples of 32,
    # where (h/8)(w/8) + (h/16)(w/16) + (h/32)(w/32) is 21 (h/32)(w/32)
    assert name == "21*((height+31)/32)*((width+31)/32)"
    sess = ort.InferenceSession(str(yolo), providers=["CPUExecutionProvider"])
    for h, w in ((320, 320), (256, 416), (96, 640)):
        (y,) = sess.run(None, {"images": np.zeros((1, 3, h, w), np.float32)})
        assert y.shape[2] == ge_expr.evaluate(name, {"height": h, "width": w})
    report = check_npu_ge_folder(folder, python=ort_1232)
    assert report.ok, report.problems


def test_silero_ascend_builds_with_its_own_sample_rate(silero: Path, tmp_path: Path,
                                                       ort_1232: Path) -> None:
    """Items 2 and 6: silero-vad builds for ascend: ``sr`` becomes shape [1], the probes
    fill it with 16000 (the value its If compares with; zeros took the 8 kHz branch) and
    size the LSTM state's batch like the input's; the output dims its If hides from the
    graph are fitted on probes (it needed --output-dims before); the check passes."""
    notes: list[str] = []
    folder = build_repository(silero, tmp_path / "repo", RepositoryOptions(
        "silero", target="ascend"), report=notes.append)
    written = onnx.load(str(folder / "1" / "model.onnx"))
    dims = {o.name: tuple(str(d.dim_param or d.dim_value) for d in o.type.tensor_type.shape.dim)
            for o in written.graph.output}
    assert dims == dict(SILERO_DIMS)
    probes = next(n for n in notes if "checked with ONNX Runtime" in n)
    assert probes.endswith("and values sr=16000")
    assert "input_0=2, input_1=640, state_1=2" in probes
    assert any("scalar 'sr' taken and given as shape [1]" in n for n in notes)
    report = check_npu_ge_folder(folder, python=ort_1232)
    assert report.ok, report.problems


def test_doctor_placeholders_run(silero: Path, yolo: Path) -> None:
    """Item 8: the doctor suggests shapes ONNX Runtime runs (it said images:1,3,1,1 and
    input:1,1, on which both models fail)."""
    for path, expected in ((yolo, {"images": "1,3,32,32"}),
                           (silero, {"input": "1,224", "state": "2,1,128"})):
        fixes = {f.node: f.fix for f in diagnose(str(path), target="ascend-cann8")
                 if f.code == "dynamic-shape"}
        for name, shape in expected.items():
            assert f'--input_shape="{name}:{shape}"' in fixes[f"graph input '{name}'"]
    sess = ort.InferenceSession(str(silero), providers=["CPUExecutionProvider"])
    feeds = silero_feeds()
    feeds["input"] = np.zeros((1, 224), np.float32)
    sess.run(None, feeds)
    sess = ort.InferenceSession(str(yolo), providers=["CPUExecutionProvider"])
    sess.run(None, {"images": np.zeros((1, 3, 32, 32), np.float32)})
    with pytest.raises(Exception, match="Concat|Invalid|dimension"):
        sess.run(None, {"images": np.zeros((1, 3, 1, 1), np.float32)})


def test_atc_procedure_for_both(silero: Path, yolo: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """Done-when of issue 24: each model gets the full host procedure from ``opsdk atc``
    (CANN 8.1.RC1's rules, the shapes given, nothing blocking); silero-vad's scalar ``sr``
    is written ``sr:`` (an empty shape)."""
    import json

    from opsdk.cli import main

    for path, shape in ((yolo, "images:1,3,320,320"),
                        (silero, "input:1,512;state:2,1,128;sr:")):
        assert main(["atc", str(path), "--output", str(tmp_path / path.stem), "--cann",
                     "8.1.RC1", "--soc-version", "Ascend910B1", "--input-shape", shape,
                     "--dry-run", "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)
        assert not plan["blocking"] and plan["cann"] == "8.1.RC1"
        assert plan["procedure"][0] == "source /usr/local/Ascend/ascend-toolkit/set_env.sh"
        assert plan["procedure"][-1] == plan["shell"]
        assert f"--input_shape={shape}" in plan["command"]
