"""Errors of the Triton side of opsdk."""

from __future__ import annotations

from ..errors import DeviceUnavailable, OpsdkError

__all__ = ["TritonConfigError", "TritonServerError", "ServeEnvMissing"]


class TritonConfigError(ValueError, OpsdkError):
    """A model cannot be turned into a Triton model repository as asked."""


class TritonServerError(RuntimeError, OpsdkError):
    """tritonserver failed to start, to become ready or to stop cleanly."""


class ServeEnvMissing(DeviceUnavailable):
    """No serving environment (the venv with nvidia-pytriton and numpy<2) was found."""
