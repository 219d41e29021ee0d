"""Pipeline descriptions the ensemble tests share: a Python step, an ONNX model (or an opsdk
operator) and a Python step, written into a folder as a user would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

from tests._helpers.triton_models import mlp_model

STEPS_PY = '''\
import numpy as np


def scale(raw):
    return {"x": (raw * np.float32(0.5) + np.float32(1.0)).astype(np.float32)}


def top(y):
    return {"label": np.argmax(y, axis=-1).astype(np.int64)[..., None],
            "score": np.max(y, axis=-1, keepdims=True)}
'''

PIPELINE_TOML = '''\
name = "scaled_mlp"
max_batch_size = 8
outputs = ["label", "score"]

[inputs]
raw = { dtype = "float32", dims = [16] }
z = { dtype = "float32", dims = [8] }

[[steps]]
name = "scale"
python = "steps.py:scale"
inputs = { raw = "raw" }
outputs = { x = { dtype = "float32", dims = [16] } }

[[steps]]
name = "mlp"
onnx = "mlp.onnx"
inputs = { x = "x", z = "z" }
outputs = { y = "y" }
%(extra)s
[[steps]]
name = "top"
python = "steps.py:top"
inputs = { y = "%(top_input)s" }
outputs = { label = { dtype = "int64", dims = [1] }, score = { dtype = "float32", dims = [1] } }
'''

OPERATOR_STEP = '''
[[steps]]
name = "gate"
operator = "ThresholdedRelu"
shapes = { x = ["batch", 8] }
attrs = { alpha = 2.0 }
inputs = { x = "y" }
outputs = { y = "gated" }
'''


def write_pipeline(folder: Path, operator: bool = False) -> Path:
    """folder/{pipeline.toml, steps.py, mlp.onnx}; with ``operator`` a ThresholdedRelu step
    sits between the model and the last step. Returns the TOML's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "steps.py").write_text(STEPS_PY)
    onnx.save(mlp_model(), str(folder / "mlp.onnx"))
    text = PIPELINE_TOML % ({"extra": OPERATOR_STEP, "top_input": "gated"} if operator
                            else {"extra": "", "top_input": "y"})
    path = folder / "pipeline.toml"
    path.write_text(text)
    return path


OCR = Path(__file__).resolve().parent / "ocr"
OCR_TOML = '''\
name = "ocr"
max_batch_size = 0
outputs = ["boxes", "texts"]

[inputs]
image = { dtype = "string", dims = [1] }  # one PNG or JPEG file per request

[[steps]]
name = "decode"
python = "ocr_steps.py:decode"
inputs = { image = "image" }
outputs = { pixels = { dtype = "uint8", dims = [1, 96, 320, 3] } }

[[steps]]
name = "det_pre"  # on --target ascend folded into det as AIPP
preprocess = "det_preprocess.toml"
inputs = { image = "pixels" }
outputs = { x = "x" }

[[steps]]
name = "det"
onnx = "%(det)s"
max_batch_size = 8
ascend = { max_batch_size = 0 }  # npu_ge does not merge a map of variable height and width
inputs = { x = "x" }
outputs = { "sigmoid_0.tmp_0" = "prob" }

[[steps]]
name = "det_post"
python = "ocr_steps.py:det_post"
inputs = { prob = "prob", pixels = "pixels" }
outputs = { boxes = { dtype = "int32", dims = [-1, 4] }, crops = { dtype = "float32", dims = [-1, 3, 48, 320] } }

[[steps]]
name = "rec"
onnx = "%(rec)s"
max_batch_size = 16
ascend = { max_batch_size = 0 }
inputs = { x = "crops" }
outputs = { "softmax_11.tmp_0" = "probs" }

[[steps]]
name = "rec_post"
python = "ocr_steps.py:rec_post"
files = ["ppocr_keys.txt"]
inputs = { probs = "probs", boxes = "boxes" }
outputs = { texts = { dtype = "string", dims = [-1] } }
'''


def write_ocr_pipeline(folder: Path, det: Path, rec: Path) -> Path:
    """folder/{pipeline.toml, ocr_steps.py, det_preprocess.toml, ppocr_keys.txt}: PP-OCR det
    and rec of the corpus as one pipeline; the dictionary is the one the rec model carries
    (its ``character`` metadata). Returns the TOML's path."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("ocr_steps.py", "det_preprocess.toml"):
        shutil.copy(OCR / name, folder / name)
    meta = {p.key: p.value for p in onnx.load(str(rec), load_external_data=False).metadata_props}
    (folder / "ppocr_keys.txt").write_text(meta["character"], encoding="utf-8")
    path = folder / "pipeline.toml"
    path.write_text(OCR_TOML % {"det": det, "rec": rec})
    return path


def png_bytes(image: np.ndarray) -> bytes:
    """The PNG file (Pillow's encoder) of an RGB uint8 [H, W, 3] image."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(image).save(out, format="PNG")
    return out.getvalue()


def text_images(words: list[list[str]], seed: int = 0) -> list[np.ndarray]:
    """One 96x320 RGB uint8 image per entry, its lines of words rendered with Pillow."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=26)
    rng = np.random.default_rng(seed)
    images = []
    for lines in words:
        img = Image.new("RGB", (320, 96), (255, 255, 255))
        draw = ImageDraw.Draw(img)
        for row, text in enumerate(lines):
            x, y = int(rng.integers(8, 40)), 10 + 44 * row
            draw.text((x, y), text, fill=(0, 0, 0), font=font)
        images.append(np.asarray(img, dtype=np.uint8).copy())
    return images


AIPP_TOML = '''\
name = "pooled"
outputs = ["mean"]

[inputs]
image = { dtype = "uint8", dims = [1, 16, 24, 3] }

[[steps]]
name = "pre"
soc = "Ascend310P3"  # whose AIPP rules decide the fold on --target ascend
preprocess = "%(declaration)s"
outputs = { x = "normalized" }
inputs = { image = "image" }

[[steps]]
name = "pool"
inputs = { x = "normalized" }
onnx = "pool.onnx"
outputs = { y = "mean" }
'''
DECLARATIONS = {
    "pre.toml": 'format = "BGR888_U8"\nsource_size = [24, 16]\nchannels = "RGB"\n\n'
                '[normalize]\nmean = [123.675, 116.28, 103.53]\nstd = [58.395, 57.12, 57.375]\n',
    # AIPP resizes only on a few SoCs (not the 310P3): this one keeps its CPU step
    "resize.toml": 'format = "RGB888_U8"\nsource_size = [48, 32]\n\n'
                   '[resize]\nsize = [24, 16]\n',
}


def pool_model() -> onnx.ModelProto:
    """x float32 [n, 3, h, w] -> y [n, 3]: the mean over the image (opset 13)."""
    from onnx import TensorProto as T
    from onnx import helper

    node = helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=0)
    g = helper.make_graph([node], "pool",
                          [helper.make_tensor_value_info("x", T.FLOAT, ["n", 3, "h", "w"])],
                          [helper.make_tensor_value_info("y", T.FLOAT, ["n", 3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def write_aipp_pipeline(folder: Path, declaration: str = "pre.toml") -> Path:
    """folder/{pipeline.toml, pool.onnx, pre.toml, resize.toml}: a preprocess step (the
    ``declaration``) in front of an ONNX model. Returns the TOML's path."""
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(pool_model(), str(folder / "pool.onnx"))
    for name, text in DECLARATIONS.items():
        (folder / name).write_text(text)
    text = AIPP_TOML % {"declaration": declaration}
    if declaration == "resize.toml":
        text = text.replace("[1, 16, 24, 3]", "[1, 32, 48, 3]")
    path = folder / "pipeline.toml"
    path.write_text(text)
    return path


def build_cpu_repo(factory: Any) -> Path:
    """The --target cpu repository of :func:`write_pipeline`'s pipeline, in two fresh
    folders of the pytest tmp_path_factory ``factory`` (a module fixture's body)."""
    from opsdk.triton import build_pipeline, load_pipeline

    pipeline = write_pipeline(factory.mktemp("pipeline"))
    repo: Path = factory.mktemp("repo")
    build_pipeline(load_pipeline(pipeline), repo, operators_path=())
    return repo
