"""``ascendc-cpu`` and ``ascendc-sim``: an installed CANN toolkit's own CPU-debug mode and
simulator, for the same AI Core kernel that ``ascendc-model`` runs on opsdk's model.

Both need the Ascend C toolkit (``$ASCEND_HOME_PATH``, set by the toolkit's ``set_env.sh``):
the CPU-debug library (``tools/tikicpulib``) and the simulator (``tools/simulator``). Where
they are absent, :func:`open_toolkit_device` raises
:class:`~opsdk.errors.DeviceUnavailable` with the reason, so the tests skip. Running on an
installed toolkit is not implemented in this release: it also raises DeviceUnavailable,
saying so, rather than pretending.

Example:
    >>> open_toolkit_device("ascendc-cpu", Path("operators/gelu"), spec)  # doctest: +SKIP
    Traceback (most recent call last):
    opsdk.errors.DeviceUnavailable: ascendc-cpu unavailable: no CANN toolkit ...
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import DeviceUnavailable
from ..spec import OpSpec

__all__ = ["open_toolkit_device", "toolkit_parts"]

_PARTS = {"ascendc-cpu": "tools/tikicpulib", "ascendc-sim": "tools/simulator"}


def toolkit_parts(device: str) -> Path:
    """The toolkit folder ``device`` needs; raises DeviceUnavailable naming what is missing."""
    home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
    if not home:
        raise DeviceUnavailable(
            f"{device} unavailable: no CANN toolkit (ASCEND_HOME_PATH is not set; source "
            "<toolkit>/set_env.sh); ascendc-model runs the same kernel on opsdk's model")
    part = Path(home) / _PARTS[device]
    if not part.is_dir():
        raise DeviceUnavailable(f"{device} unavailable: the toolkit at {home} has no {part}")
    return part


def open_toolkit_device(device: str, folder: Path, spec: OpSpec) -> Any:
    """The executor of ``device``; see the module docstring."""
    part = toolkit_parts(device)
    raise DeviceUnavailable(
        f"{device}: found {part}, but opsdk does not yet drive the toolkit's "
        f"{'CPU-debug mode' if device == 'ascendc-cpu' else 'simulator'}; use ascendc-model")
