"""The one-line hint of a plain ``torch.onnx.export(dynamo=True)`` that lacks opsdk's table.

torch's dynamo exporter has no hook for an operator it cannot translate: it fails at the
end with ``Failed to convert the exported program to an ONNX model``. What opsdk has is its
fake kernel, which torch runs while it traces the model for the export. There, while
``torch.onnx.is_in_onnx_export()``, the hint looks for the exporter's registry among the
callers' frames (the ``registry`` local of torch's ``torch.onnx._internal.exporter``); when
the registry has no translation for the operator, it warns once per export with
:class:`OnnxExportHint`. An exporter it does not recognise (another torch release) gives no
hint rather than a wrong one. An ``ExportedProgram`` traced before ``torch.onnx.export``
is not traced again, so it gets no hint.

Example:
    >>> torch.onnx.export(model, (x,), dynamo=True)  # doctest: +SKIP
    OnnxExportHint: torch.onnx.export(dynamo=True) has no ONNX translation for the opsdk
    operator com_opsdk::Softmax: export with opsdk.torch.export(model, args, path), or pass
    custom_translation_table=opsdk.torch.onnx_translations()
"""

from __future__ import annotations

import sys
import warnings
import weakref
from types import FrameType
from typing import Any

from ..spec import OpSpec
from ._schema import namespace, qualified_name
from .errors import OnnxExportHint

__all__ = ["OnnxExportHint", "hint_if_exporting"]

_EXPORTER = "torch.onnx._internal.exporter"
_MAX_FRAMES = 400
# per registry of an export (one per torch.onnx.export call): the ops already hinted
_told: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def hint_if_exporting(spec: OpSpec) -> None:
    """Called by the fake kernel: warn when torch's ONNX exporter traces ``spec``'s op and
    its registry cannot translate it."""
    import torch

    if not torch.onnx.is_in_onnx_export():
        return
    registry = _exporter_registry()
    if registry is None:
        return
    overload = getattr(getattr(torch.ops, namespace(spec.domain)), spec.name).default
    try:
        known = bool(registry.is_registered(overload))
        told = _told.setdefault(registry, set())
    except Exception:  # a registry of another shape: stay quiet
        return
    if known or spec.name in told:
        return
    told.add(spec.name)
    warnings.warn(
        f"torch.onnx.export(dynamo=True) has no ONNX translation for the opsdk operator "
        f"{qualified_name(spec)}: export with opsdk.torch.export(model, args, path), or pass "
        "custom_translation_table=opsdk.torch.onnx_translations()",
        OnnxExportHint, stacklevel=_user_stacklevel(),
    )


def _user_stacklevel() -> int:
    """The stacklevel of the first caller outside torch and opsdk (the user's export call)."""
    import os

    import torch

    inside = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)))
    frame: FrameType | None = sys._getframe(1)
    level = 1  # hint_if_exporting's frame is stacklevel 1
    while frame is not None and level < _MAX_FRAMES:
        if not frame.f_code.co_filename.startswith(inside):
            return level
        frame, level = frame.f_back, level + 1
    return 2


def _exporter_registry() -> Any:
    """The ``registry`` local of the nearest frame of torch's dynamo exporter, or None."""
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_MAX_FRAMES):
        if frame is None:
            return None
        if str(frame.f_globals.get("__name__", "")).startswith(_EXPORTER):
            reg = frame.f_locals.get("registry")
            if reg is not None and hasattr(reg, "is_registered"):
                return reg
        frame = frame.f_back
    return None
