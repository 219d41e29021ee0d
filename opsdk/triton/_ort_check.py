"""Open and run a model the way npu_ge does: ONNX Runtime 1.23.2, no custom ops registered.

The pinned runtime lives in its own venv (``$OPSDK_ORT_VENV``, else
``<opsdk cache>/onnxruntime-1.23.2``), apart from opsdk's environment, whose ONNX Runtime
is newer. :func:`ensure_ort_env` creates it with pip from PyPI;
``scripts/setup.d/30-onnxruntime-1.23.2.sh`` runs it for CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import venv
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DeviceUnavailable
from ..runtime._procs import dies_with_us
from . import _npu_ge as ge
from ._errors import OrtCrash, TritonConfigError

__all__ = ["OrtCrash", "OrtRun", "ort_env_dir", "ort_python", "ensure_ort_env",
           "run_like_npu_ge", "run_ort_child"]

#: The child's program (run with ``-c``: the file's text, so nothing of opsdk is imported).
_SCRIPT = Path(__file__).with_name("_ort_run_child.py")


@dataclass(frozen=True)
class OrtRun:
    """What the pinned ONNX Runtime saw: its version, the I/O with dims, and the outputs."""

    version: str
    inputs: list[tuple[str, str, list[Any]]]
    outputs: list[tuple[str, str, list[Any]]]
    results: dict[str, np.ndarray]


def ort_env_dir() -> Path:
    """Where the ONNX Runtime 1.23.2 venv lives (it may not exist yet)."""
    env = os.environ.get("OPSDK_ORT_VENV")
    if env:
        return Path(env).expanduser()
    from ..build import cache_dir

    return cache_dir() / f"onnxruntime-{ge.ORT_VERSION}"


def ort_python() -> Path | None:
    """The venv's interpreter if it holds onnxruntime==1.23.2, else None."""
    root = ort_env_dir()
    stamp = root / ".opsdk-ready"
    py = root / "bin" / "python"
    return py if py.is_file() and stamp.is_file() else None


def ensure_ort_env() -> Path:
    """Create the venv (once) and return its interpreter.

    Raises:
        DeviceUnavailable: pip could not install onnxruntime==1.23.2 (the reason is given).

    Example:
        >>> ensure_ort_env()  # doctest: +SKIP
        PosixPath('/root/.cache/opsdk/onnxruntime-1.23.2/bin/python')
    """
    found = ort_python()
    if found is not None:
        return found
    root = ort_env_dir()
    if root.exists() and any(root.iterdir()) and not (root / "pyvenv.cfg").is_file():
        raise DeviceUnavailable(
            f"{root} exists and is not a venv; opsdk will not replace it: point "
            "OPSDK_ORT_VENV at a new folder or remove it yourself"
        )
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    py = root / "bin" / "python"
    # numpy is all an InferenceSession needs; onnxruntime's other requirements (sympy,
    # protobuf, coloredlogs, flatbuffers) serve its tools and would triple the venv
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    proc = subprocess.run(pip + ["numpy"], capture_output=True, text=True, **dies_with_us())
    if proc.returncode == 0:
        proc = subprocess.run(pip + ["--no-deps", f"onnxruntime=={ge.ORT_VERSION}"],
                              capture_output=True, text=True, **dies_with_us())
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise DeviceUnavailable(
            f"could not install onnxruntime=={ge.ORT_VERSION} into {root}: {' | '.join(tail)}; "
            "this needs PyPI and a platform ONNX Runtime publishes wheels for"
        )
    (root / ".opsdk-ready").write_text(f"onnxruntime=={ge.ORT_VERSION}\n")
    return py


def run_like_npu_ge(
    model: str | Path, feeds: Mapping[str, np.ndarray], python: str | Path | None = None
) -> OrtRun:
    """Open ``model`` with ONNX Runtime 1.23.2 and no custom ops, run ``feeds``.

    Raises:
        DeviceUnavailable: no pinned ONNX Runtime venv (see :func:`ensure_ort_env`).
        TritonConfigError: ONNX Runtime 1.23.2 cannot open or run the model, as npu_ge
            would fail to load it; the message has ONNX Runtime's error.

    Example:
        >>> run = run_like_npu_ge("repo/m/1/model.onnx", {"x": x})  # doctest: +SKIP
        >>> run.version
        '1.23.2'
    """
    py = Path(python) if python else ort_python()
    if py is None:
        raise DeviceUnavailable(
            f"no ONNX Runtime {ge.ORT_VERSION} venv at {ort_env_dir()}; create it with "
            "bash scripts/setup.d/30-onnxruntime-1.23.2.sh (or opsdk.triton.ensure_ort_env())"
        )
    try:
        return run_ort_child(py, model, feeds)
    except OrtCrash:
        raise
    except TritonConfigError as e:
        raise TritonConfigError(
            f"ONNX Runtime {ge.ORT_VERSION} (as inside npu_ge) cannot run {model}: {e}"
        ) from None


def run_ort_child(python: str | Path, model: str | Path,
                  feeds: Mapping[str, np.ndarray]) -> OrtRun:
    """Open and run ``model`` with the ONNX Runtime of ``python``, in a child process.

    Inputs of ``feeds`` the model does not take are left out (a bisected part of a model).

    Raises:
        OrtCrash: the child died of a signal (naming it, the version and the stage).
        TritonConfigError: ONNX Runtime refused the model (its last error line).

    Example:
        >>> run_ort_child("venv/bin/python", "m.onnx", {"x": x}).version  # doctest: +SKIP
        '1.23.2'
    """
    with tempfile.TemporaryDirectory(prefix="opsdk-ort-") as tmp:
        arrays_in: dict[str, Any] = {k: np.asarray(v) for k, v in feeds.items()}
        np.savez(Path(tmp) / "feeds.npz", **arrays_in)
        out = Path(tmp) / "out.npz"
        proc = subprocess.run(
            [str(python), "-c", _SCRIPT.read_text(), str(model), str(Path(tmp) / "feeds.npz"),
             str(out)],
            capture_output=True, text=True, env=_clean_env(), **dies_with_us(),
        )
        lines = proc.stdout.strip().splitlines()
        err = proc.stderr.strip().splitlines()
        if proc.returncode < 0:
            raise _crash(-proc.returncode, lines, err, model)
        if proc.returncode != 0:
            raise TritonConfigError(err[-1] if err else f"exit code {proc.returncode}")
        info = json.loads(lines[-1])
        with np.load(out) as data:
            arrays = [data[f"arr_{i}"] for i in range(len(info["outputs"]))]
    names = [o[0] for o in info["outputs"]]
    return OrtRun(info["version"], [tuple(i) for i in info["inputs"]],
                  [tuple(o) for o in info["outputs"]], dict(zip(names, arrays, strict=True)))


def _crash(sig: int, out: list[str], err: list[str], model: str | Path) -> OrtCrash:
    from ..runtime import signal_name

    version = next((ln.split()[1] for ln in out if ln.startswith("opsdk-ort-version ")), "?")
    stage = "running" if "opsdk-ort-opened" in out else "opening"
    words = err[-1] if err else ""
    if "Assertion " in words:  # a failed assertion: its condition is what says most
        words = words[words.index("Assertion "):]
    words = words if len(words) <= 200 else "..." + words[-200:]
    return OrtCrash(f"ONNX Runtime {version} crashed with {signal_name(sig)} (signal {sig}) "
                    f"{stage} {model}" + (f" ({words})" if words else ""),
                    sig, version, stage, words)


def _clean_env() -> dict[str, str]:
    """The environment without this interpreter's package paths."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}

