"""``opsdk precision`` in a child process, so a crash of ONNX Runtime cannot end the command.

The whole analysis (every session: the float32 model, the switchboard's configurations, the
attribution's per-node variants, the ``--fix`` search and its re-check) runs in one child
interpreter; before each session opens or runs, the child says what runs (and, for a
per-node variant, which node) on a pipe. When the child dies, the parent raises
:class:`ModelError` naming the model, the ONNX Runtime version, the signal and what ran,
and the node: the variant's own, else the one more children isolate
(:func:`opsdk.onnx._crash.crash_note`) on the float32 model or on the lowered one.
One child for the whole run: the analysis is as fast as in-process, plus one start.

Example:
    >>> report = analyze_model_in_child("det.onnx", "force_fp16")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...onnx import ModelError
from ...runtime import dies_with_us, signal_name
from ._engine import Progress

__all__ = ["analyze_model_in_child"]

_CHILD = "from opsdk.ascend.model_precision._child import serve; serve()"


def analyze_model_in_child(model_path: str | Path, mode: str, *,
                           progress: Progress | None = None, **kwargs: Any) -> Any:
    """:func:`~._analyze.analyze_model` (the same arguments) run by a child of this
    interpreter: its report, or its error raised here; a crash of ONNX Runtime is a
    :class:`ModelError` naming the model, the version, what ran and the node.

    Example:
        >>> r = analyze_model_in_child("det.onnx", "force_fp16")  # doctest: +SKIP
        >>> r.failing  # doctest: +SKIP
        []
    """
    kwargs = {"model_path": model_path, "mode": mode, **kwargs}
    work = Path(tempfile.mkdtemp(prefix="opsdk-precision-"))
    try:
        (work / "args.pkl").write_bytes(pickle.dumps(dict(kwargs)))
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[3])  # where opsdk imports from
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(work)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, **dies_with_us())
        last: list[str] = []  # the child's last stderr line, for a crash's message
        tee = threading.Thread(target=_relay, args=(proc, last), daemon=True)
        tee.start()
        try:
            said = _follow(proc, progress)
        except BaseException:  # interrupted (or a progress hook failed): end the child
            proc.kill()
            proc.wait()
            raise
        code = proc.wait()
        tee.join()
        if said.get("done"):
            return pickle.loads((work / "result.pkl").read_bytes())
        if said.get("raised"):
            raise _error(work)
        raise _crash_error(kwargs, said, code, last[-1] if last else "")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _relay(proc: subprocess.Popen[str], last: list[str]) -> None:
    """The child's stderr (ONNX Runtime's and the operators' messages) on ours, as it
    comes, keeping its last non-empty line in ``last``."""
    assert proc.stderr is not None
    for line in proc.stderr:
        sys.stderr.write(line)
        sys.stderr.flush()
        if line.strip():
            last[:] = [line.strip()]
    proc.stderr.close()


def _error(work: Path) -> Exception:
    """The child's error as it raised it (its message as a ModelError if that fails)."""
    try:
        error = pickle.loads((work / "result.pkl").read_bytes())
    except Exception:  # an exception type whose arguments do not round-trip
        return ModelError((work / "message.txt").read_text())
    return error if isinstance(error, Exception) else ModelError(str(error))


def _follow(proc: subprocess.Popen[str], progress: Progress | None) -> dict[str, Any]:
    """Read the child's lines: its ONNX Runtime version, progress, stages, the end."""
    said: dict[str, Any] = {"version": "?", "what": "starting", "node": None}
    assert proc.stdout is not None
    for line in proc.stdout:
        kind, _, rest = line.rstrip("\n").partition(" ")
        if kind == "version":
            said["version"] = rest
        elif kind == "progress" and progress is not None:
            progress(json.loads(rest))
        elif kind == "stage":
            said["what"], said["node"] = json.loads(rest)
        elif kind in ("done", "raised"):
            said[kind] = True
    proc.stdout.close()
    return said


def _crash_error(kwargs: Mapping[str, Any], said: Mapping[str, Any], code: int,
                 last_words: str) -> ModelError:
    path = kwargs["model_path"]
    sig = -code if code < 0 else 0
    how = (f"crashed with {signal_name(sig)} (signal {sig})" if sig
           else f"ended with exit status {code}")
    words = f" ({last_words[-200:]})" if last_words else ""
    return ModelError(
        f"{path}: ONNX Runtime {said['version']} {how} {said['what']}{words}"
        + _node_note(kwargs, said["node"]) + f"; opsdk precision needs every run of the model "
        f"to complete: check it with opsdk doctor {path}")


def _node_note(kwargs: Mapping[str, Any], node: str | None) -> str:
    """Which node the crash is: the per-node variant's, else isolated by children on the
    float32 model, else on the lowered one ("" when neither crashes alone or none is
    isolated)."""
    if node is not None:
        return f"; the crash is node {node}: the run with it alone lowered crashed"
    from ...onnx import child_crashes, crash_note
    from ._analyze import setup

    names = ("keep_dtype", "modify_mixlist", "soc", "input_shape", "input_files", "overflow",
             "fuse")
    try:
        su = setup(Path(kwargs["model_path"]), kwargs["mode"],
                   **{k: kwargs[k] for k in names if k in kwargs})
    except Exception:  # the child got as far as ONNX Runtime: the parent does too
        return ""
    crashes = child_crashes(su.feeds, sys.executable)
    for model, of in ((su.original, "the float32 model"),
                      (su.lowered(), f"the model lowered under {kwargs['mode']}")):
        if crashes(model):
            return crash_note(model, su.feeds, sys.executable, of)
    return ""


def serve() -> None:
    """The child: run the analysis of ``argv[1]/args.pkl``, saying what runs (module doc)."""
    import onnxruntime

    from ._analyze import analyze_model
    from ._engine import announce_stages

    work = Path(sys.argv[1])

    def say(kind: str, value: Any) -> None:
        print(f"{kind} {json.dumps(value)}", flush=True)

    print(f"version {onnxruntime.__version__}", flush=True)
    announce_stages(lambda what, node: say("stage", [what, node]))
    kwargs = pickle.loads((work / "args.pkl").read_bytes())
    try:
        result: Any = analyze_model(**kwargs, progress=lambda m: say("progress", m))
        kind = "done"
    except Exception as e:  # handed to the parent, which raises it
        result, kind = e, "raised"
    if kind == "raised":
        from ...errors import OpsdkError

        (work / "message.txt").write_text(
            str(result) if isinstance(result, OpsdkError) else f"{type(result).__name__}: {result}")
    try:
        data = pickle.dumps(result)
    except Exception:  # an error that does not pickle: the parent reads its message
        data, kind = b"", "raised"
    (work / "result.pkl").write_bytes(data)
    print(kind, flush=True)
