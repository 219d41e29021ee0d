"""Warnings of the PyTorch side of opsdk, exported from :mod:`opsdk.torch`.

Example:
    >>> from opsdk.torch.errors import OnnxExportHint
    >>> from opsdk.errors import OpsdkWarning
    >>> issubclass(OnnxExportHint, OpsdkWarning)
    True
"""

from __future__ import annotations

from ..errors import OpsdkWarning

__all__ = ["TorchCppUnavailable", "OnnxExportHint", "OperatorLeftOut", "NpuHostCopies"]


class TorchCppUnavailable(OpsdkWarning):
    """Calls through ``torch.ops`` take the Python CPU implementation; the text says why."""


class OnnxExportHint(OpsdkWarning):
    """A dynamo ONNX export of a model with opsdk operators was started without their
    translations."""


class OperatorLeftOut(OpsdkWarning):
    """``import opsdk.torch`` left out operators torch cannot register (their reasons)."""


class NpuHostCopies(OpsdkWarning):
    """An operator's npu calls go through aclop with host copies (it has no aclnn API)."""
