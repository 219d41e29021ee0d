"""One ONNX Runtime session in a child process, so a crash in ONNX Runtime cannot end ours.

Commands that open a model only to judge it (the doctor's example shapes, the dim check of
``opsdk triton build``) run it through :class:`OrtChild`: a small script of ONNX Runtime and
numpy, fed one ``.npz`` of inputs per line. A child that dies is :class:`OrtChildCrash`,
naming the ONNX Runtime version, the signal and whether it was opening or running.

Example:
    >>> child = OrtChild(model)  # doctest: +SKIP
    >>> child.version, child.run({"x": x})  # doctest: +SKIP
    ('1.32.0', {'y': [2, 4]})
    >>> child.close()  # doctest: +SKIP
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto

from ..runtime._procs import dies_with_us, signal_name
from ._model import ModelError

__all__ = ["OrtChild", "OrtChildCrash"]

# The child: say "version V", open the model, say "opened" (or "error" and why); then per
# line (a .npz of feeds, and a tab and a .npz to write the outputs to, if wanted) one line
# of JSON: the output shapes or ONNX Runtime's error.
_SERVE = r"""
import json, sys
import numpy as np
import onnxruntime as ort
print("version " + ort.__version__, flush=True)
opts = ort.SessionOptions()
opts.log_severity_level = 4
try:
    sess = ort.InferenceSession(sys.argv[1], opts, providers=["CPUExecutionProvider"])
except Exception as e:
    print("error " + json.dumps(str(e)), flush=True)
    sys.exit(0)
names = [o.name for o in sess.get_outputs()]
print("opened", flush=True)
for line in sys.stdin:
    feeds_path, _, out_path = line.rstrip("\n").partition("\t")
    try:
        outs = sess.run(names, dict(np.load(feeds_path)))
        if out_path:
            np.savez(out_path, *outs)
        reply = {"shapes": {n: list(np.shape(o)) for n, o in zip(names, outs)}}
    except Exception as e:
        reply = {"error": str(e)}
    print(json.dumps(reply), flush=True)
"""


class OrtChildCrash(ModelError):
    """ONNX Runtime died in its child: ``signal`` (0 for an exit), ``version``, ``stage``
    ("opening" or "running") and its ``last_words`` (the last line it printed)."""

    def __init__(self, message: str, signal: int, version: str, stage: str,
                 last_words: str) -> None:
        super().__init__(message)
        self.signal, self.version, self.stage, self.last_words = (signal, version, stage,
                                                                  last_words)


class OrtChild:
    """``model`` opened by the ONNX Runtime of ``python`` in a child process.

    Raises (here): :class:`ModelError` when ONNX Runtime refuses the model,
    :class:`OrtChildCrash` when it dies opening it. After a crash every call raises it again
    (no second child)."""

    def __init__(self, model: ModelProto, python: str | Path = sys.executable) -> None:
        self.version = "?"
        self._crash: OrtChildCrash | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="opsdk-ort-"))
        onnx.save(model, str(self._dir / "model.onnx"))
        self._log = open(self._dir / "stderr.txt", "w+b")  # closed in close()
        self._proc = subprocess.Popen(
            [str(python), "-c", _SERVE, str(self._dir / "model.onnx")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
            **dies_with_us())
        self.version = self._line("opening").removeprefix("version ")
        first = self._line("opening")
        if first.startswith("error "):
            self.close()
            raise ModelError(f"ONNX Runtime {self.version} cannot open the model: "
                             f"{json.loads(first[6:]).splitlines()[0][:300]}")

    def run(self, feeds: Mapping[str, Any]) -> dict[str, list[int]]:
        """The output shapes on ``feeds``; ONNX Runtime's error is RuntimeError."""
        shapes: dict[str, list[int]] = self._ask(feeds, "")["shapes"]
        return shapes

    def outputs(self, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        """The outputs on ``feeds``, in the model's order; errors as :meth:`run`."""
        path = self._dir / "outputs.npz"
        self._ask(feeds, str(path))
        with np.load(path) as saved:
            return [saved[f"arr_{i}"] for i in range(len(saved.files))]

    def _ask(self, feeds: Mapping[str, Any], out_path: str) -> dict[str, Any]:
        if self._crash is not None:
            raise self._crash
        path = self._dir / "feeds.npz"
        np.savez(path, **{k: np.asarray(v) for k, v in feeds.items()})  # type: ignore[arg-type]
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(f"{path}\t{out_path}\n" if out_path else f"{path}\n")
            self._proc.stdin.flush()
        except OSError:
            pass  # the child is gone: _line says how
        reply: dict[str, Any] = json.loads(self._line("running"))
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def close(self) -> None:
        """End the child (EOF on its stdin) and remove its files."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except OSError:  # the child is gone and the pipe broken
                pass
        self._proc.wait()
        for f in (self._proc.stdout, self._log):
            if f is not None:
                f.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def _line(self, stage: str) -> str:
        if self._crash is not None:
            raise self._crash
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if line:
            return line.rstrip("\n")
        code = self._proc.wait()
        self._log.seek(0)
        said = self._log.read().decode(errors="replace").strip().splitlines()
        words = said[-1] if said else ""
        if "Assertion " in words:  # a failed assertion: its condition says most
            words = words[words.index("Assertion "):]
        words = words if len(words) <= 200 else "..." + words[-200:]
        sig = -code if code < 0 else 0
        how = (f"crashed with {signal_name(sig)} (signal {sig})" if sig
               else f"ended with exit status {code}")
        self._crash = OrtChildCrash(f"ONNX Runtime {self.version} {how} {stage} the model",
                                    sig, self.version, stage, words)
        self.close()
        raise self._crash

