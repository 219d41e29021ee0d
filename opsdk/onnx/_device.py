"""The onnx wing's ``onnxruntime`` device in the executor registry
(:mod:`opsdk.runtime._devices`): the operator as a custom-domain node in an ONNX graph,
run by ONNX Runtime with the operator's kernel library."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DeviceUnavailable
from ..runtime import load, register_device
from ..spec import OpSpec

__all__ = ["OnnxRuntimeDevice"]


class OnnxRuntimeDevice:
    """The operator as a custom-domain node in an ONNX graph, run by ONNX Runtime
    through :class:`opsdk.onnx.Session` (one session per input signature and attrs)."""

    def __init__(self, folder: Path, spec: OpSpec) -> None:
        try:
            from ._session import Session
        except ImportError as e:
            raise DeviceUnavailable(
                f"onnxruntime unavailable: opsdk.onnx.Session cannot be imported ({e})"
            ) from e

        self._session_cls: Any = Session
        self.spec = spec
        self._kernels = {f"{spec.domain}::{spec.name}": load(str(folder))}
        self._sessions: dict[Any, Any] = {}

    def run(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        attrs = dict(attrs or {})
        key = (
            tuple(None if a is None else (a.dtype.str, a.ndim) for a in inputs),
            tuple(sorted((k, repr(v)) for k, v in attrs.items())),
        )
        sess = self._sessions.get(key)
        if sess is None:
            sess = self._session_cls.for_op(
                self.spec, attrs=attrs, inputs=list(inputs), kernels=self._kernels
            )
            self._sessions[key] = sess
        feed = {d.name: a for d, a in zip(self.spec.inputs, inputs, strict=False) if a is not None}
        return [np.asarray(o) for o in sess.run(None, feed)]


register_device("onnxruntime", lambda folder, spec, options: OnnxRuntimeDevice(folder, spec))
