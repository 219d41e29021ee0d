"""The AI Core kernel of an operator: hand-written in its folder, or generated.

A hand-written kernel lives in ``operators/<op>/op_kernel/<op>.cpp`` with its tiling
description in ``op_kernel/tiling.py`` (``TILING``: a :class:`~._ascendc_tiling.Tiling`,
and optionally ``applicable(shapes, attrs) -> reason or None``). Otherwise the kernel is
generated from the decomposition (:mod:`._ascendc_gen`).
"""

from __future__ import annotations

import importlib.util
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..spec import OpSpec
from ._ascendc_gen import AicoreKernel, GenerateRefused, generate
from ._ascendc_tiling import Tiling, cpp_tiling
from ._model import CannOp, cann_op

__all__ = [
    "aicore_kernel", "tiling_header", "pack_tiling", "TilingSlot", "tiling_slots", "project_sources"
]


def _load_module(path: Path) -> Any:
    name = f"_opsdk_tiling_{path.parent.parent.name}"
    mod_spec = importlib.util.spec_from_file_location(name, path)
    if mod_spec is None or mod_spec.loader is None:  # pragma: no cover - defensive
        raise SpecError(f"cannot import {path}")
    module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    return module


def aicore_kernel(spec: OpSpec, folder: str | Path | None = None) -> AicoreKernel:
    """The operator's AI Core kernel; raises GenerateRefused when it has none.

    Example:
        >>> from opsdk.registry import load_spec
        >>> aicore_kernel(load_spec("operators/thresholded_relu")).origin  # doctest: +SKIP
        'generated'
    """
    if folder is not None:
        src = Path(folder) / "op_kernel" / f"{spec.snake_name}.cpp"
        desc = Path(folder) / "op_kernel" / "tiling.py"
        if src.is_file():
            if not desc.is_file():
                raise SpecError(f"{spec.name}: {src} has no tiling description; add {desc} "
                                "defining TILING = Tiling(...)")
            module = _load_module(desc)
            tiling = getattr(module, "TILING", None)
            if not isinstance(tiling, Tiling):
                raise SpecError(f"{spec.name}: {desc} must define TILING = Tiling(...)")
            names = tuple(p.name for p in [*spec.inputs, *spec.outputs] if hasattr(p, "name"))
            return AicoreKernel(spec.name, spec.snake_name, src.read_text(), tiling, names,
                                "DTYPE_" + spec.inputs[0].name.upper(), str(src),
                                needs_same_shape=False,
                                applicable=getattr(module, "applicable", None))
    return generate(spec, cann_op(spec).banner)


@dataclass(frozen=True)
class TilingSlot:
    """One field of the tiling struct, in struct order."""

    name: str
    ctype: str
    size: int
    length: int = 0


_SIZES = {"uint64_t": 8, "int64_t": 8, "uint32_t": 4, "float": 4, "uint8_t": 1}
_FORMATS = {"uint64_t": "Q", "int64_t": "q", "uint32_t": "I", "float": "f", "uint8_t": "B"}


def tiling_slots(spec: OpSpec, kernel: AicoreKernel, op: CannOp | None = None) -> list[TilingSlot]:
    """Every field of the kernel's tiling struct: the project's fields plus the kernel's."""
    from ._project import _tiling_fields

    op = op if op is not None else cann_op(spec)
    base = [TilingSlot(f.name, f.ctype, f.size, f.length) for f in _tiling_fields(op)]
    have = {s.name for s in base}
    extra = [TilingSlot(f.name, f.ctype, _SIZES[f.ctype]) for f in kernel.tiling.fields
             if f.name not in have]
    return sorted(base + extra, key=lambda s: -s.size)


def tiling_header(spec: OpSpec, kernel: AicoreKernel, op: CannOp | None = None) -> str:
    """op_host/<op>_tiling.h with every field the kernel reads."""
    from ._project import _env

    op = op if op is not None else cann_op(spec)
    return _env().get_template("op_host_tiling.h.jinja").render(
        op=op, fields=tiling_slots(spec, kernel, op))


def project_sources(spec: OpSpec, op: CannOp) -> tuple[dict[str, str], str]:
    """The AI Core kernel's files of the CANN project (``op_kernel/<op>.cpp`` and
    ``op_host/<op>_tiling.h``) and its TilingFunc statements; ``({}, "")`` when the
    operator has no AI Core kernel (the project then keeps its TODO kernel).

    Example:
        >>> from opsdk.registry import find_operator
        >>> from opsdk.cann._model import cann_op
        >>> spec = find_operator("ThresholdedRelu").spec
        >>> files, tiling = project_sources(spec, cann_op(spec))
        >>> sorted(files), "SetBlockDim" in tiling
        (['op_host/thresholded_relu_tiling.h', 'op_kernel/thresholded_relu.cpp'], False)
    """
    from ..errors import OperatorNotFound
    from ..registry import find_operator

    try:
        folder: Path | None = find_operator(f"{spec.domain}::{spec.name}").folder
    except OperatorNotFound:
        folder = None
    try:
        kernel = aicore_kernel(spec, folder)
    except GenerateRefused:
        return {}, ""
    source = re.sub(rf"__aicore__ void {kernel.snake}\(", f"__aicore__ void {op.snake}(",
                    kernel.source)
    if kernel.origin != "generated":
        rel = Path(kernel.origin).name
        note = f"// {op.banner}: a copy of op_kernel/{rel} of the operator; edit that file\n"
        source = note + source
    files = {f"op_kernel/{op.snake}.cpp": source,
             f"op_host/{op.snake}_tiling.h": tiling_header(spec, kernel, op)}
    return files, cpp_tiling(kernel.tiling)


def _attr_value(slot: TilingSlot, value: Any) -> list[Any]:
    if slot.length == 0:
        return [bool(value) if slot.ctype == "uint8_t" else value]
    if isinstance(value, str):
        raw = value.encode()
        if len(raw) >= slot.length:
            raise SpecError(f"string attribute of {len(raw)} bytes; the tiling carries at most "
                            f"{slot.length - 1}")
        return list(raw.ljust(slot.length, b"\0"))
    items = list(value)
    if len(items) > slot.length:
        raise SpecError(f"list attribute of {len(items)} elements; the tiling carries at most "
                        f"{slot.length}")
    return items + [0] * (slot.length - len(items))


def pack_tiling(spec: OpSpec, kernel: AicoreKernel, computed: Mapping[str, int],
                attrs: Mapping[str, Any], total: int) -> bytes:
    """The tiling bytes the kernel's GET_TILING_DATA reads (struct order, natural alignment)."""
    out = b""
    values = {**{a: v for a, v in attrs.items()}, **computed, "totalLength": total}
    for a, v in attrs.items():
        if isinstance(v, list | tuple):
            values[a + "_len"] = len(v)
    for slot in tiling_slots(spec, kernel):
        if slot.name not in values:
            raise SpecError(f"{spec.name}: tiling field {slot.name!r} has no value")
        fmt = _FORMATS[slot.ctype]
        items = _attr_value(slot, values[slot.name]) if slot.name in attrs else [values[slot.name]]
        out += struct.pack(f"<{len(items)}{fmt}", *items)
    return out + b"\0" * (16 - len(out) % 8)


def refused(spec: OpSpec, folder: str | Path | None = None) -> str | None:
    """Why the operator has no AI Core kernel, or None when it has one."""
    try:
        aicore_kernel(spec, folder)
    except GenerateRefused as e:
        return str(e)
    return None


def with_source(kernel: AicoreKernel, source: str) -> AicoreKernel:
    """The same kernel with another source text (an author's edited copy)."""
    return replace(kernel, source=source)
