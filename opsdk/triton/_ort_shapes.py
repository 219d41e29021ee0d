"""Output shapes on probe inputs from ONNX Runtime in one child process per build.

`opsdk triton build --target ascend` proves the output dim names it writes by running the
model with ONNX Runtime on probe inputs (:mod:`opsdk.triton._ascend_dims`). The session
lives in a child (:class:`opsdk.onnx._ort_child.OrtChild`), so a model that crashes ONNX
Runtime ends the child, not the build: the build fails naming the model, the ONNX Runtime
version, the signal and, where :mod:`opsdk.triton._crash` isolates it, the node.

Example:
    >>> runner = ChildRunner(model, "m")  # doctest: +SKIP
    >>> runner.shapes({"n": 2})  # doctest: +SKIP
    {'y': (2, 4)}
    >>> runner.close()  # doctest: +SKIP
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onnx import ModelProto

from ..onnx._model import ModelError
from ..onnx._ort_child import OrtChild, OrtChildCrash
from ._errors import TritonConfigError
from ._ort_check import OrtCrash

__all__ = ["ChildRunner"]


class ChildRunner:
    """The session in a child: ``shapes(probe, seed)`` as the in-process runner has it.

    A crash is :class:`~opsdk.triton._ort_check.OrtCrash`, on that call and every later one
    (no second child)."""

    def __init__(self, model: ModelProto, label: str,
                 values: Mapping[str, float] | None = None,
                 python: str | Path = sys.executable) -> None:
        self.model, self.label, self.values = model, label, dict(values or {})
        self.outputs = [o.name for o in model.graph.output]
        self._python = python
        self._crash: OrtCrash | None = None
        try:
            self._child = OrtChild(model, python)
        except OrtChildCrash as e:
            raise self._crashed(e, {}) from None
        except ModelError as e:
            raise TritonConfigError(f"{label}: checking the output dim names, {e}") from None
        self.version = self._child.version

    def shapes(self, probe: Mapping[str, int], seed: int | None = None,
               ) -> dict[str, tuple[int, ...]]:
        """Output shapes on ``probe``; inputs zeros, or random with ``seed``."""
        from ..onnx._probe import probe_feeds
        from ._ascend_dims import run_error

        if self._crash is not None:
            raise self._crash
        feeds = probe_feeds(self.model, dict(probe), self.values, random=seed is not None,
                            seed=seed or 0)
        try:
            got = self._child.run(feeds)
        except OrtChildCrash as e:
            raise self._crashed(e, feeds) from None
        except RuntimeError as e:
            raise run_error(self.label, self.model, dict(probe), self.values, e) from None
        return {o: tuple(got[o]) for o in self.outputs}

    def close(self) -> None:
        child = getattr(self, "_child", None)
        if child is not None:
            child.close()

    def _crashed(self, e: OrtChildCrash, feeds: Mapping[str, Any]) -> OrtCrash:
        from ._crash import isolate_crash

        found = isolate_crash(self.model, feeds, self._python)
        where = f"; the crash is node {found.node}: {found.why}" if found else ""
        fix = f"; fix: {found.fix}" if found and found.fix else ""
        words = f" (its last words: {e.last_words})" if e.last_words else ""
        self._crash = OrtCrash(f"{self.label}: checking the output dim names, {e}{where}{fix}"
                               f"{words}", e.signal, e.version, e.stage, e.last_words)
        return self._crash
