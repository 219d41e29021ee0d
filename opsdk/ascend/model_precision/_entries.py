"""``--keep_dtype`` op types and ``--modify_mixlist`` entries must name op types of the model.

ATC matches both by CANN's op type (``Conv2D``, not ONNX's ``Conv``) and ignores an entry
that matches nothing, silently: the setting the user meant is not applied. opsdk refuses
such an entry, naming the close match: the CANN name of an ONNX op type the entry spells
(``Conv`` -> ``Conv2D``, CANN's name for ONNX Conv), else the model's CANN op type nearest in
spelling, else the model's op types.

Example:
    >>> import onnx.helper as h
    >>> nodes = [h.make_node("Conv", ["x", "w"], ["y"], name="conv")]
    >>> check_list_entries(nodes, PrecisionMode("allow_mix_precision",
    ...                    keep_dtype=frozenset({"Conv"})), "m.onnx", keep_file="keep.cfg")
    Traceback (most recent call last):
    ...
    opsdk.errors.SpecError: m.onnx: --keep-dtype file keep.cfg: OpType::Conv names no op type \
of the model (ATC would ignore it); did you mean OpType::Conv2D (Conv2D, CANN's name for ONNX \
Conv)? The model's CANN op types: Conv2D
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import SpecError
from ..precision import PrecisionMode
from ._lists import cann_name

__all__ = ["check_list_entries", "model_cann_types"]

_STANDARD = ("", "ai.onnx")


def model_cann_types(nodes: Iterable[Any]) -> dict[str, str]:
    """``{CANN op type: ONNX op type}`` of ``nodes`` (a custom node: its own op type).

    Example:
        >>> import onnx.helper as h
        >>> model_cann_types([h.make_node("Conv", ["x", "w"], ["y"])])
        {'Conv2D': 'Conv'}
    """
    return {(cann_name(n.op_type) if n.domain in _STANDARD else n.op_type): n.op_type
            for n in nodes}


def check_list_entries(nodes: Sequence[Any], pm: PrecisionMode, where: str, *,
                       keep_file: str | Path | None = None,
                       mix_file: str | Path | None = None) -> None:
    """Refuse a ``--keep_dtype`` ``OpType::`` line or a ``--modify_mixlist`` entry of ``pm``
    that names no op type of ``nodes`` (see the module docstring).

    Raises:
        SpecError: naming ``where`` (the model), the file, the entry and the close match.
    """
    types = model_cann_types(nodes)
    for flag, path, entries, show in (
            ("--keep-dtype", keep_file, pm.keep_dtype, "OpType::{}"),
            ("--modify-mixlist", mix_file, pm.white | pm.black, "{!r}")):
        for entry in sorted(entries - set(types)):
            source = f"{flag} file {path}" if path else flag
            raise SpecError(
                f"{where}: {source}: {show.format(entry)} names no op type of the model (ATC "
                f"would ignore it); {_close_match(entry, types, show)}The model's CANN op "
                f"types: {', '.join(sorted(types)) or 'none'}")


def _close_match(entry: str, types: Mapping[str, str], show: str) -> str:
    """"did you mean ...? " for ``entry``, or "" when nothing is close."""
    by_onnx = {onnx: cann for cann, onnx in types.items()}
    cann = by_onnx.get(entry) or next((c for o, c in by_onnx.items()
                                       if o.lower() == entry.lower()), None)
    if cann is not None:
        return (f"did you mean {show.format(cann)} ({cann}, CANN's name for ONNX "
                f"{types[cann]})? ")
    lowered = {t.lower(): t for t in types}
    near = difflib.get_close_matches(entry.lower(), list(lowered), n=1, cutoff=0.6)
    if near:
        cann = lowered[near[0]]
        what = f", CANN's name for ONNX {types[cann]}" if types[cann] != cann else ""
        return f"did you mean {show.format(cann)} ({cann}{what})? "
    return ""
