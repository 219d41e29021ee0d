"""Finding, loading and running one operator: :func:`load` and friends, the executor
registry (``cpu``, the built module, here; npu, onnxruntime and triton executors register
themselves) and the worker processes that isolate a kernel.

Example:
    >>> from opsdk.runtime import load
    >>> relu = load("Relu")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._devices import open_registered, register_device, registered_devices
from ._load import build_op, list_operators, load
from ._registration import spec_registration_cpp
from .cpu import Operator, load_module

if TYPE_CHECKING:  # imported on first use: ``python -m opsdk.runtime._procs`` runs it
    from ._procs import (
        Running,
        Worker,
        arm_worker,
        has_children,
        kernel_last_words,
        reply_error,
        signal_name,
        stop_children,
    )

_PROCS = ("Running", "Worker", "arm_worker", "has_children", "kernel_last_words", "reply_error",
          "signal_name", "stop_children")


def __getattr__(name: str) -> Any:
    if name not in _PROCS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("._procs", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Operator", "load_module", "load", "build_op", "list_operators", "open_registered",
    "register_device", "registered_devices", "spec_registration_cpp", "Running", "Worker",
    "arm_worker", "has_children", "kernel_last_words", "reply_error", "signal_name",
    "stop_children",
]
