"""Executors by device: one registry, into which each wing registers the devices it serves.

The cpu executor, the isolated worker and the cross-built harness live in ``runtime/``; the
ascend wing registers ``npu`` and the ``ascendc-*`` devices, the onnx wing
``onnxruntime``. A floor below a wing never imports it: :func:`open_registered` imports the
wing module that serves a device by name (``_WINGS``) the first time that device is asked
for, and the module registers its openers with :func:`register_device`.

Example:
    >>> sorted(_WINGS)[:2]
    ['ascendc-cpu', 'ascendc-model']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import DeviceUnavailable
from ..spec import OpSpec

__all__ = ["Opener", "register_device", "open_registered", "registered_devices"]

#: ``opener(folder, spec, options) -> executor``; raises DeviceUnavailable with the reason.
Opener = Callable[[Path, OpSpec, dict[str, Any]], Any]

_OPENERS: dict[str, Opener] = {}

#: The wing module that registers each device it serves.
_WINGS: dict[str, str] = {
    "onnxruntime": "opsdk.onnx._device",
    "npu": "opsdk.ascend._devices",
    "ascendc-model": "opsdk.ascend._devices",
    "ascendc-cpu": "opsdk.ascend._devices",
    "ascendc-sim": "opsdk.ascend._devices",
}


def register_device(name: str, opener: Opener) -> None:
    """Make ``opener`` the executor factory of device ``name`` (a wing calls this)."""
    _OPENERS[name] = opener


def registered_devices() -> list[str]:
    """Every device a wing serves (registered or registrable)."""
    return sorted(set(_OPENERS) | set(_WINGS))


def open_registered(device: str, folder: Path, spec: OpSpec, options: dict[str, Any]) -> Any:
    """An executor of the operator in ``folder`` on a wing's ``device``.

    Raises:
        DeviceUnavailable: no wing serves ``device``, or the device is absent here.
    """
    if device not in _OPENERS and device in _WINGS:
        try:
            importlib.import_module(_WINGS[device])
        except ImportError as e:  # the wing's own dependencies (onnxruntime, ...) are absent
            raise DeviceUnavailable(
                f"{device} unavailable: {_WINGS[device]} cannot be imported ({e})"
            ) from e
    opener = _OPENERS.get(device)
    if opener is None:
        raise DeviceUnavailable(
            f"{spec.name}: unknown device {device!r}; expected one of "
            f"cpu, {', '.join(registered_devices())}"
        )
    return opener(folder, spec, options)
