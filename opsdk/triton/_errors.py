"""Errors of the Triton side of opsdk."""

from __future__ import annotations

from ..errors import DeviceUnavailable, OpsdkError

__all__ = ["TritonConfigError", "TritonConfigWarning", "TritonServerError", "ServeEnvMissing"]


class TritonConfigError(ValueError, OpsdkError):
    """A model cannot be turned into a Triton model repository as asked."""


class TritonConfigWarning(UserWarning):
    """A model repository was written, but a server will not use it as one may expect."""


class TritonServerError(RuntimeError, OpsdkError):
    """tritonserver failed to start, to become ready or to stop cleanly."""


class ServeEnvMissing(DeviceUnavailable):
    """No serving environment (the venv with nvidia-pytriton and numpy<2) was found."""
