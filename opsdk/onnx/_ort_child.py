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

from ..runtime import dies_with_us, signal_name
from .errors import ModelError, OrtChildCrash

__all__ = ["OrtChild", "OrtChildCrash"]

#: The child's program (run with ``-c``: the file's text, so nothing of opsdk is imported).
_SERVE = Path(__file__).with_name("_ort_serve_child.py")


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
            [str(python), "-c", _SERVE.read_text(), str(self._dir / "model.onnx")],
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

