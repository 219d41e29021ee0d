"""Mutants of Cube kernels written for the tests (tests/data/ascendc/cube/): each sync removed,
and one text replaced by another."""

from __future__ import annotations

import re

_SYNC = re.compile(r"^\s*(SetFlag|WaitFlag)<HardEvent::(\w+)>\((\w+)\);\s*$")


def sync_mutants(source: str) -> list[tuple[str, str]]:
    """Each SetFlag, WaitFlag and PipeBarrier removed, and each SetFlag/WaitFlag pair."""
    lines = source.splitlines(keepends=True)
    out = []
    for i, line in enumerate(lines):
        if _SYNC.match(line) or line.strip().startswith("PipeBarrier<"):
            out.append((f"line {i + 1} removed: {line.strip()}", "".join(lines[:i] + lines[i + 1:])))
        if _SYNC.match(line) and line.strip().startswith("SetFlag") and _SYNC.match(lines[i + 1]):
            out.append((f"lines {i + 1}-{i + 2} removed: {line.strip()} and its WaitFlag",
                        "".join(lines[:i] + lines[i + 2:])))
    return out


def _edit(source: str, old: str | tuple[str, ...], new: str | tuple[str, ...]) -> str:
    """``source`` with each ``old`` (one place each) replaced by its ``new``."""
    olds, news = (old, new) if isinstance(old, tuple) else ((old,), (new,))
    for o, n in zip(olds, news, strict=True):
        assert source.count(o) == 1, o
        source = source.replace(o, n)
    return source
