"""The ONNX steps of a cpu ensemble, each judged as the Python backend will load it.

A cpu step that runs an ONNX model (``1/model.onnx``, opened by ``1/model.py`` with
:class:`opsdk.onnx.Session`) passes the wiring check on its config.pbtxt alone; the file
itself may be garbage or disagree with that config. Here each such step's newest
``model.onnx`` is read and opened with opsdk's Session in a child process
(``python -m opsdk.triton._step_child JOB``, so a crash of ONNX Runtime or of a kernel ends
the child, not the check), and its inputs and outputs (names, data types, dims) are compared
with the step's config.pbtxt. Each problem names the step, the tensor, the config's value
and the model's, and the fix.

Example:
    >>> onnx_step_problems(Path("repo"), "mlp")  # doctest: +SKIP
    []
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["onnx_step_problems", "onnx_step_model", "judge_step_job"]

_REBUILD = "; rebuild the step with opsdk triton pipeline"
_FIX = _REBUILD + " (or correct the step's config.pbtxt)"


def onnx_step_model(folder: Path) -> Path | None:
    """The model.onnx Triton loads for the step at ``folder`` (its newest version folder),
    or None when the step runs no ONNX model (a Python step, an npu_ge step)."""
    from ._npu_ge import BACKEND

    config = folder / "config.pbtxt"
    if not config.is_file() or f'backend: "{BACKEND}"' in config.read_text(errors="replace"):
        return None
    versions = sorted((p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()),
                      key=lambda p: int(p.name))
    if not versions:
        return None
    model = versions[-1] / "model.onnx"
    return model if model.is_file() or model.is_symlink() else None


def onnx_step_problems(repo: Path, step: str) -> list[str]:
    """The problems of the ONNX model of step ``step`` in ``repo`` (see the module)."""
    from ._check import child_died, run_check_child

    model = onnx_step_model(repo / step)
    if model is None:
        return []
    with tempfile.TemporaryDirectory(prefix="opsdk-step-") as tmp:
        result = Path(tmp) / "result.json"
        job = Path(tmp) / "job.json"
        job.write_text(json.dumps({"model": str(model), "config": str(model.parents[1] /
                                   "config.pbtxt"), "result": str(result)}))
        code, said = run_check_child("opsdk.triton._step_child", str(job))
        if code == 0 and result.is_file():
            return [f"step '{step}': {p}" for p in json.loads(result.read_text())]
    return [f"step '{step}': {child_died(model, code, said, 'opening it with opsdk.onnx.Session')}"]


def judge_step_job(job_file: str) -> None:
    """In the child: read, open and compare the step's model; write the problems."""
    job = json.loads(Path(job_file).read_text())
    Path(job["result"]).write_text(json.dumps(_judge(Path(job["model"]), Path(job["config"]))))


def _judge(model_path: Path, config_path: Path) -> list[str]:
    import onnx

    from ..errors import OpsdkError
    from ._config_check import config_problems, parse_config
    from ._onnx_io import read_graph_io

    rel = model_path.relative_to(model_path.parents[1]).as_posix()
    try:
        model = onnx.load(str(model_path))
        if not model.graph.node and not model.graph.output:
            raise ValueError("it holds no graph")
    except Exception as e:  # a truncated or random file: DecodeError and friends
        return [f"{rel} is not a readable ONNX model ({type(e).__name__}: {e}){_REBUILD}"]
    problems: list[str] = []
    try:
        problems += config_problems(parse_config(config_path), read_graph_io(model), _FIX)
    except OpsdkError as e:
        problems.append(f"{rel}: {e}")
    problems += _open(rel, model)
    return problems


def _open(rel: str, model: Any) -> list[str]:
    """What the step's model.py does first: open the model with opsdk's Session."""
    from ..onnx import Session

    try:
        Session(model)
    except Exception as e:  # ONNX Runtime's or opsdk's refusal, as the model would fail to load
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        return [f"{rel} does not open with opsdk.onnx.Session, as the step's model.py opens "
                f"it ({type(e).__name__}: {first}){_REBUILD}"]
    return []
