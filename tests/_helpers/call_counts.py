"""Count how often named functions run while a block runs, whatever way they were imported
(by the function's code object, through a profile hook on this thread)."""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any


def _code(target: str) -> CodeType:
    module, _, name = target.rpartition(".")
    func: Any = getattr(importlib.import_module(module), name)
    return getattr(func, "__wrapped__", func).__code__  # type: ignore[no-any-return]


@contextmanager
def counting(targets: Mapping[str, str]) -> Iterator[Counter[str]]:
    """``{label: "module.function"}``: the counter holds each label's calls once the block
    ends.

    Example:
        >>> with counting({"dumps": "json.dumps"}) as n:
        ...     import json; _ = json.dumps(1), json.dumps(2)
        >>> n["dumps"]
        2
    """
    codes = {_code(t): label for label, t in targets.items()}
    counts: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            label = codes.get(frame.f_code)
            if label is not None:
                counts[label] += 1

    old = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield counts
    finally:
        sys.setprofile(old)
