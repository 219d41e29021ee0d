"""The PyTorch way in: every opsdk operator is a ``torch.library`` custom op.

``import opsdk.torch`` registers every operator opsdk finds (source folders, installed
wheels, shipped ones) as ``torch.ops.<namespace>.<Name>``, where the namespace is the
operator's domain with dots as underscores (``com.opsdk`` -> ``com_opsdk``):

- the schema comes from spec.py (inputs, optional ones as ``Tensor?``, outputs, keyword-only
  attributes with their defaults);
- the CPU implementation is the compiled opsdk kernel on zero-copy NumPy views of the
  tensors (bfloat16 included); the fake implementation is the spec's shape and dtype
  inference, symbolic sizes included, so ``torch.compile`` and ``torch.export`` work;
- gradients come from the operator's own backward (``@SPEC.register_backward``) or from
  differentiating its decomposition (``@SPEC.register_function``);
- ONNX export writes one node per call in the spec's domain (:func:`export`,
  :func:`onnx_translations`); a plain ``torch.onnx.export(dynamo=True)`` without them warns
  naming the operator (:class:`OnnxExportHint`); :func:`replace` swaps standard layers for
  opsdk operators.

Importing :mod:`opsdk` never imports torch; only this subpackage does.

Example:
    >>> import torch, opsdk.torch
    >>> gelu = opsdk.torch.load("Gelu")  # doctest: +SKIP
    >>> gelu(torch.ones(2), approximate="tanh")  # doctest: +SKIP
    tensor([0.8412, 0.8412])
    >>> opsdk.torch.ops.com_opsdk.Softmax(torch.ones(2))  # doctest: +SKIP
    tensor([0.5000, 0.5000])
"""

from __future__ import annotations

from typing import Any

from ._autograd import gradient_source
from ._check import GradcheckResult, OpcheckReport, gradcheck, opcheck
from ._npu import npu_unavailable
from ._npu_ext import build_npu_kernel, render_npu_kernel
from ._onnx_export import export, onnx_translations
from ._register import OPS, OperatorLeftOut, Registered, register, register_all, registered
from ._replace import ReplaceReport, replace
from ._schema import namespace, schema
from .errors import NpuHostCopies, OnnxExportHint, TorchCppUnavailable

__all__ = [
    "ops", "load", "register", "register_all", "registered", "Registered", "schema",
    "namespace", "opcheck", "OpcheckReport", "gradcheck", "GradcheckResult",
    "gradient_source", "export",
    "onnx_translations", "OnnxExportHint", "OperatorLeftOut", "TorchCppUnavailable", "replace",
    "ReplaceReport",
    "npu_unavailable", "NpuHostCopies", "render_npu_kernel", "build_npu_kernel",
]

#: ``ops.<namespace>.<Name>`` is ``torch.ops.<namespace>.<Name>``, registered on first use.
ops = OPS


def load(name: str) -> Any:
    """Register one operator (``MyOp``, ``domain::MyOp`` or a folder) and return its torch op.

    Example:
        >>> relu = load("ThresholdedRelu")  # doctest: +SKIP
        >>> relu(torch.tensor([0.5, 2.0]), alpha=1.0)  # doctest: +SKIP
        tensor([0., 2.])
    """
    return register(name).packet


register_all(strict=False)
