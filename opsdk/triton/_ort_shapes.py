"""Output shapes on probe inputs from ONNX Runtime in one child process per build.

`opsdk triton build --target ascend` proves the output dim names it writes by running the
model with ONNX Runtime on probe inputs (:mod:`opsdk.triton._ascend_dims`). The session
lives in a child (a small script of ONNX Runtime and numpy only, fed probe files one line
at a time), so a model that crashes ONNX Runtime ends the child, not the build: the build
fails naming the model, the ONNX Runtime version, the signal and, where
:mod:`opsdk.triton._crash` isolates it, the node.

Example:
    >>> runner = ChildRunner(model, "m")  # doctest: +SKIP
    >>> runner.shapes({"n": 2})  # doctest: +SKIP
    {'y': (2, 4)}
    >>> runner.close()  # doctest: +SKIP
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

from ..runtime._procs import signal_name
from ._errors import TritonConfigError
from ._ort_check import OrtCrash

__all__ = ["ChildRunner"]

# The child: open the model, say "opened VERSION"; then per line (a .npz of feeds) one line
# of JSON, the output shapes or ONNX Runtime's error; end at EOF.
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
    try:
        outs = sess.run(names, dict(np.load(line.strip())))
        reply = {"shapes": {n: list(np.shape(o)) for n, o in zip(names, outs)}}
    except Exception as e:
        reply = {"error": str(e)}
    print(json.dumps(reply), flush=True)
"""


class ChildRunner:
    """The session in a child: ``shapes(probe, seed)`` as the in-process runner has it.

    A crash is :class:`~opsdk.triton._ort_check.OrtCrash`, on that call and every later one
    (no second child)."""

    def __init__(self, model: ModelProto, label: str,
                 values: Mapping[str, float] | None = None,
                 python: str | Path = sys.executable) -> None:
        self.model, self.label, self.values = model, label, dict(values or {})
        self.outputs = [o.name for o in model.graph.output]
        self._python = str(python)
        self._crash: OrtCrash | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="opsdk-shapes-"))
        onnx.save(model, str(self._dir / "model.onnx"))
        self._log = open(self._dir / "stderr.txt", "w+b")  # closed in close()
        self._proc = subprocess.Popen(
            [self._python, "-c", _SERVE, str(self._dir / "model.onnx")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True)
        self.version = self._line("opening", {}).removeprefix("version ")
        first = self._line("opening", {})
        if first.startswith("error "):
            self.close()
            raise TritonConfigError(f"{label}: checking the output dim names, ONNX Runtime "
                                    f"cannot open the model: {json.loads(first[6:])[:300]}")

    def shapes(self, probe: Mapping[str, int], seed: int | None = None,
               ) -> dict[str, tuple[int, ...]]:
        """Output shapes on ``probe``; inputs zeros, or random with ``seed``."""
        from ..onnx._probe import probe_feeds
        from ._ascend_dims import run_error

        if self._crash is not None:
            raise self._crash
        feeds = probe_feeds(self.model, dict(probe), self.values, random=seed is not None,
                            seed=seed or 0)
        path = self._dir / "feeds.npz"
        np.savez(path, **dict(feeds))  # type: ignore[arg-type]
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(f"{path}\n")
            self._proc.stdin.flush()
        except OSError:
            pass  # the child is gone: _line says how
        reply = json.loads(self._line("running", feeds))
        if "error" in reply:
            raise run_error(self.label, self.model, dict(probe), self.values,
                            RuntimeError(reply["error"]))
        return {o: tuple(reply["shapes"][o]) for o in self.outputs}

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

    def _line(self, stage: str, feeds: Mapping[str, Any]) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if line:
            return line.rstrip("\n")
        self._crash = self._crashed(stage, feeds)
        raise self._crash

    def _crashed(self, stage: str, feeds: Mapping[str, Any]) -> OrtCrash:
        from ._crash import isolate_crash

        code = self._proc.wait()
        self._log.seek(0)
        said = self._log.read().decode(errors="replace").strip().splitlines()
        version = getattr(self, "version", "?")
        sig = -code if code < 0 else 0
        how = f"crashed with {signal_name(sig)} (signal {sig})" if sig else (
            f"ended with exit status {code}")
        found = isolate_crash(self.model, feeds, self._python)
        where = f"; the crash is node {found.node}: {found.why}" if found else ""
        fix = f"; fix: {found.fix}" if found and found.fix else ""
        words = said[-1] if said else ""
        if "Assertion " in words:
            words = words[words.index("Assertion "):]
        self.close()
        return OrtCrash(f"{self.label}: checking the output dim names, ONNX Runtime {version} "
                        f"{how} {stage} the model{where}{fix}"
                        + (f" (its last words: {words[-200:]})" if words else ""),
                        sig, version, stage, words)
