"""Errors of the ONNX side of opsdk, exported from :mod:`opsdk.onnx`.

Example:
    >>> from opsdk.onnx import ModelError
    >>> issubclass(ModelError, ValueError)
    True
"""

from __future__ import annotations

from ..errors import OpsdkError

__all__ = ["ModelError", "OrtCrashFacts", "OrtChildCrash", "ProbeTooBig"]


class ModelError(ValueError, OpsdkError):
    """An ONNX model cannot be read, or its graph is malformed."""


class OrtCrashFacts(OpsdkError):
    """What is known of an ONNX Runtime that died in a child process: ``signal`` (0 for an
    exit), ``version``, ``stage`` ("opening" or "running") and its ``last_words`` (the last
    line it printed). A base of the crash errors, never raised alone."""

    def __init__(self, message: str, signal: int, version: str, stage: str,
                 last_words: str) -> None:
        super().__init__(message)
        self.signal, self.version, self.stage, self.last_words = (signal, version, stage,
                                                                  last_words)


class OrtChildCrash(OrtCrashFacts, ModelError):
    """ONNX Runtime died in its child (:class:`OrtCrashFacts` holds what is known)."""


class ProbeTooBig(ValueError, OpsdkError):
    """A probe input would be too big to allocate (the model's fixed dims are huge)."""
