"""Pipeline descriptions the ensemble tests share: a Python step, an ONNX model (or an opsdk
operator) and a Python step, written into a folder as a user would."""

from __future__ import annotations

from pathlib import Path

import onnx

from _helpers.triton_models import mlp_model

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
