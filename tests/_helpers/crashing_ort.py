"""An interpreter whose ONNX Runtime really crashes (SIGSEGV) on chosen models.

The wrapper runs this interpreter with a ``sitecustomize`` that, in every process it starts
(children included), patches ``onnxruntime.InferenceSession`` to kill the process with
SIGSEGV when it opens a model of the given kind: a real signal in a real child, for the
tests of the commands that must survive a crash of ONNX Runtime.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

# "when" is the body of crash(model, path) -> bool, run on each model ONNX Runtime opens
# (path: the file it opens, or None for bytes); "run_when" of crash_run(feeds) -> bool, run
# on the feeds of each run
_SITE = '''\
import os, signal
try:
    import onnx, onnxruntime
except ImportError:  # an interpreter without them: nothing to patch
    onnxruntime = None

def _crash(model, path):
{when}

def _crash_run(feeds):
{run_when}

if onnxruntime is not None:
    _open = onnxruntime.InferenceSession.__init__

    def _init(self, what, *a, **k):
        path = what if isinstance(what, (str, os.PathLike)) else None
        model = onnx.load(str(path)) if path is not None else onnx.load_from_string(what)
        if _crash(model, path):
            os.kill(os.getpid(), signal.SIGSEGV)
        _open(self, what, *a, **k)

    onnxruntime.InferenceSession.__init__ = _init
    _run = onnxruntime.InferenceSession.run

    def _run_or_crash(self, names, feeds, *a, **k):
        if _crash_run(feeds):
            os.kill(os.getpid(), signal.SIGSEGV)
        return _run(self, names, feeds, *a, **k)

    onnxruntime.InferenceSession.run = _run_or_crash
'''

#: Never crashes.
NEVER = "    return False"

#: Crashes opening any model that has a node of op type Softsign (the default domain).
SOFTSIGN = '    return any(n.op_type == "Softsign" for n in model.graph.node)'

#: Crashes opening any model file (``model.onnx``, as OrtChild writes) of ai.onnx opset 18.
OPSET_18 = ('    return str(path).endswith("model.onnx") and any(\n'
            '        o.domain in ("", "ai.onnx") and o.version == 18 for o in model.opset_import)')


def crashing_python(tmp_path: Path, when: str = SOFTSIGN, run_when: str = NEVER) -> Path:
    """An executable wrapper of this interpreter whose ONNX Runtime dies with SIGSEGV
    opening a model for which ``when`` (a function body over ``model`` and ``path``)
    returns true, or running on feeds for which ``run_when`` (over ``feeds``) does.

    Example:
        >>> python = crashing_python(tmp_path)  # doctest: +SKIP
        >>> monkeypatch.setattr(sys, "executable", str(python))  # doctest: +SKIP
    """
    site = tmp_path / "crashing-site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_SITE.format(when=when, run_when=run_when))
    wrapper = tmp_path / "crashing-python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" '
                       f'exec "{sys.executable}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper
