"""RepositoryOptions from one flat set of keywords (the tests' builders take them so)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from opsdk.triton import AscendOptions, CpuOptions, RepositoryOptions

_ASCEND = {f.name for f in fields(AscendOptions)}
_CPU = {f.name for f in fields(CpuOptions)}


def options(**kw: Any) -> RepositoryOptions:
    """``RepositoryOptions`` with the ascend-only and cpu-only keywords nested.

    Example:
        >>> options(name="m", target="ascend", static_model=True).npu.static_model
        True
    """
    asc = {k: kw.pop(k) for k in list(kw) if k in _ASCEND}
    cpu = {k: kw.pop(k) for k in list(kw) if k in _CPU}
    return RepositoryOptions(**kw, ascend=AscendOptions(**asc) if asc else None,
                             cpu=CpuOptions(**cpu) if cpu else None)
