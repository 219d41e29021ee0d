"""Which node of a model crashes ONNX Runtime 1.23.2 (as inside npu_ge), after a crash.

The bisection is :mod:`opsdk.onnx._crash`'s; each of its runs here is a
:func:`~opsdk.triton._ort_check.run_ort_child` (the pinned runtime, with the feeds).

Example:
    >>> found = isolate_crash(model, feeds, python)  # doctest: +SKIP
    >>> found.node, found.fixed is not None
    ('#1 (com.opsdk::LayerNormalization)', True)
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
from onnx import ModelProto

from ..onnx import Isolated, _crash
from ._errors import TritonConfigError
from ._ort_check import OrtCrash, run_ort_child

__all__ = ["Isolated", "isolate_crash"]


def isolate_crash(model: ModelProto, feeds: Mapping[str, np.ndarray],
                  python: str | Path) -> Isolated | None:
    """The node of ``model`` (top-level graph) that crashes the ONNX Runtime of ``python``.

    None when no single node can be blamed (the whole model crashes, each part alone runs).
    """
    return _crash.isolate_crash(model, lambda m: _crashes(m, feeds, python),
                                ", and rebuild the folder with opsdk triton build")


def _crashes(model: ModelProto, feeds: Mapping[str, np.ndarray], python: str | Path) -> bool:
    with tempfile.TemporaryDirectory(prefix="opsdk-bisect-") as tmp:
        path = Path(tmp) / "model.onnx"
        onnx.save(model, str(path))
        try:
            run_ort_child(python, path, feeds)
        except OrtCrash:
            return True
        except TritonConfigError:
            return False  # refused, not crashed: not this part
    return False
