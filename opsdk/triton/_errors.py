"""Errors and warnings of the Triton side of opsdk, exported from :mod:`opsdk.triton`.

Example:
    >>> from opsdk.triton import TritonConfigError
    >>> issubclass(TritonConfigError, ValueError)
    True
"""

from __future__ import annotations

from ..errors import DeviceUnavailable, OpsdkError, OpsdkWarning
from ..onnx.errors import OrtCrashFacts

__all__ = ["TritonConfigError", "TritonConfigWarning", "TritonServerError", "ServeEnvMissing",
           "PipelineError", "OrtCrash", "ExpressionError"]


class TritonConfigError(ValueError, OpsdkError):
    """A model cannot be turned into a Triton model repository as asked."""


class TritonConfigWarning(OpsdkWarning):
    """A model repository was written, but a server will not use it as one may expect."""


class TritonServerError(RuntimeError, OpsdkError):
    """tritonserver failed to start, to become ready or to stop cleanly."""


class ServeEnvMissing(DeviceUnavailable):
    """No serving environment (the venv with nvidia-pytriton and numpy<2) was found."""


class PipelineError(TritonConfigError):
    """A pipeline description that cannot become an ensemble (names the place and the fix)."""


class OrtCrash(OrtCrashFacts, TritonConfigError):
    """The ONNX Runtime of npu_ge died in its child process (a signal; :class:`OrtCrashFacts`
    holds the version that crashed, the stage and its last words)."""


class ExpressionError(ValueError, OpsdkError):
    """npu_ge cannot evaluate this name (the message says why)."""
