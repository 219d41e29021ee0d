"""The OCR case (issue 31, item 3): PP-OCRv4 det + rec of the model corpus as one pipeline,
PNG bytes in, text boxes and strings out: the image decoded with Pillow, the detector's
preprocessing a preprocess step (an opsdk.preprocess declaration), DB postprocessing, the
recogniser's crops, CTC decoding with the dictionary the rec model carries. Served by a real tritonserver, the output equals the
same steps in one process on text images rendered with Pillow; the ascend ensemble is
generated (the detector's preprocessing folded into it as AIPP) and checked (its npu_ge
models under ONNX Runtime 1.23.2), never served."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opsdk.testing import corpus
from opsdk.triton import (
    Pipeline,
    PipelineRun,
    TritonServer,
    build_pipeline,
    check_ensemble,
    load_pipeline,
)
from opsdk.triton.testing import serve_env_or_skip
from tests._helpers.pipelines import png_bytes, text_images, write_ocr_pipeline

pytestmark = pytest.mark.slow
SETUP = "bash scripts/setup.d/35-model-corpus.sh"
WORDS = [["opsdk 2026", "Triton"], ["HELLO WORLD"], ["ensemble 31", "load report"]]


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    det, rec = corpus.find("ppocr-det"), corpus.find("ppocr-rec")
    if det is None or rec is None:
        pytest.skip(f"the PP-OCR models of the corpus are not fetched ({SETUP}; needs PyPI)")
    pytest.importorskip("PIL", reason="the test images are rendered with Pillow")
    return load_pipeline(write_ocr_pipeline(tmp_path_factory.mktemp("ocr"), det, rec))


@pytest.fixture(scope="module")
def server(pipe: Pipeline, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TritonServer]:
    repo = tmp_path_factory.mktemp("repo")
    build_pipeline(pipe, repo)
    env = serve_env_or_skip()
    with TritonServer(repo, venv=env.venv) as srv:
        yield srv
    assert srv.pid is None


def _served(server: TritonServer, image: np.ndarray) -> Any:
    import tritonclient.http as http

    t = http.InferInput("image", list(image.shape), "BYTES")
    t.set_data_from_numpy(image)
    with http.InferenceServerClient(server.http_url) as client:
        return client.infer("ocr", [t])


def _file(data: bytes) -> np.ndarray:
    return np.array([data], dtype=object)


def test_served_ocr_equals_the_steps_in_one_process(server: TritonServer,
                                                    pipe: Pipeline) -> None:
    run = PipelineRun(pipe)
    for pixels, lines in zip(text_images(WORDS), WORDS, strict=True):
        image = _file(png_bytes(pixels))
        got = _served(server, image)
        want = run({"image": image})
        np.testing.assert_array_equal(got.as_numpy("boxes"), want["boxes"])
        texts = [t.decode("utf-8") for t in got.as_numpy("texts")]
        assert texts == [t.decode("utf-8") for t in want["texts"]]
        assert texts == lines  # PP-OCRv4 reads Pillow's bundled font back as written
        assert want["boxes"].shape == (len(lines), 4)


def test_a_payload_that_is_no_image_fails_its_request_only(server: TritonServer) -> None:
    from tritonclient.utils import InferenceServerException

    good = png_bytes(text_images(WORDS[1:2])[0])
    for payload, says in ((b"not an image at all", "is not a readable PNG or JPEG file"),
                          (good[: len(good) // 2], "is not a readable PNG or JPEG file")):
        with pytest.raises(InferenceServerException, match=f"decode: ValueError: .*{says}"):
            _served(server, _file(payload))
    texts = [t.decode("utf-8") for t in _served(server, _file(good)).as_numpy("texts")]
    assert texts == WORDS[1]  # the server is still up and answers the next request


def test_ascend_ocr_ensemble_is_generated_and_checked(pipe: Pipeline, tmp_path: Path,
                                                      ort_1232: Path) -> None:
    folder = build_pipeline(pipe, tmp_path, target="ascend")
    report = check_ensemble(folder, models=True)
    assert report.ok, report.problems
    # det_pre (the detector's declaration) is folded into det as AIPP: det takes the pixels
    assert report.steps == ["decode", "det", "det_post", "rec", "rec_post"]
    assert sorted(report.models) == ["det", "rec"]
    for step in ("det", "rec"):  # npu_ge does not merge these maps: the ascend table says 0
        assert "max_batch_size: 0" in (tmp_path / step / "config.pbtxt").read_text()
    edge = next(e for e in report.edges if e.consumer == "input 'x' of step 'det'")
    assert (edge.tensor, edge.data_type, edge.dims) == ("pixels", "TYPE_UINT8", (1, 96, 320, 3))
    assert (tmp_path / "det" / "1" / "insert_op.cfg").read_text().count("aipp_op {") == 1
