"""Executors of one operator: ``cpu`` (the built module); npu, onnxruntime and triton
executors live beside it."""

from .cpu import Operator, load_module

__all__ = ["Operator", "load_module"]
