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
        Channel,
        ChannelJunk,
        Running,
        Worker,
        arm_worker,
        dies_with_us,
        has_children,
        junk_message,
        kernel_last_words,
        reply_error,
        signal_name,
        stop_children,
        watch_natively,
    )

_PROCS = ("Channel", "ChannelJunk", "Running", "Worker", "arm_worker", "dies_with_us",
          "has_children", "junk_message", "kernel_last_words", "reply_error", "signal_name",
          "stop_children", "watch_natively")


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
    "stop_children", "Channel", "ChannelJunk", "dies_with_us", "junk_message", "watch_natively",
]
