"""The bisector: a small set of nodes (or op types) to keep in float32 so every output passes.

Over the attribution's order (worst node first): the empty set is tried, then the whole
list; a binary search finds the shortest prefix that passes; a pruning pass then drops each
kept unit (least attributed first) whose removal still passes. Deterministic (no random
choice anywhere) and bounded: with ``n`` candidates at most ``2 + ceil(log2 n) + n`` runs
after the ``n`` runs of the attribution.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from ..._written import write_file
from ...errors import OpsdkError

__all__ = ["search_bound", "bisect", "keep_dtype_text", "mixlist_text", "write_outputs",
           "KEEP_FILE", "MIXLIST_FILE", "REPORT_FILE", "HTML_REPORT_FILE"]

KEEP_FILE = "keep_dtype.cfg"
MIXLIST_FILE = "modify_mixlist.json"
REPORT_FILE = "precision_report.json"
#: The same report as a page for a person, written beside the JSON.
HTML_REPORT_FILE = "precision_report.html"


def search_bound(n: int) -> int:
    """Most runs :func:`bisect` makes over ``n`` candidates.

    Example:
        >>> search_bound(100)
        109
    """
    return 2 + math.ceil(math.log2(n)) + n if n > 1 else n + 1


def bisect(units: Sequence[str], passes: Callable[[frozenset[str]], bool]) -> list[str] | None:
    """The units to keep (in ``units`` order), or None when keeping all of them fails too.

    Example:
        >>> bisect(["a", "b", "c", "d"], lambda k: {"b", "d"} <= k)
        ['b', 'd']
    """
    if passes(frozenset()):
        return []
    if not passes(frozenset(units)):
        return None
    lo, hi = 1, len(units)
    while lo < hi:
        mid = (lo + hi) // 2
        if passes(frozenset(units[:mid])):
            hi = mid
        else:
            lo = mid + 1
    keep = list(units[:hi])
    for u in reversed(list(keep)):
        trial = [k for k in keep if k != u]
        if trial and passes(frozenset(trial)):  # the empty set already failed
            keep = trial
    return keep


def keep_dtype_text(nodes: Sequence[str], op_types: Sequence[str] = ()) -> str:
    """ATC's ``--keep_dtype`` file: node names one per line, then ``OpType::<type>`` lines.

    The format has no comment syntax, so the file carries no banner (the report does).

    Example:
        >>> print(keep_dtype_text(["conv_3"], ["SoftmaxV2"]), end="")
        conv_3
        OpType::SoftmaxV2
    """
    return "".join(f"{n}\n" for n in nodes) + "".join(f"OpType::{t}\n" for t in op_types)


def mixlist_text(op_types: Sequence[str]) -> str:
    """ATC's ``--modify_mixlist`` JSON moving ``op_types`` to the black list.

    Example:
        >>> print(mixlist_text(["ReduceSum"]))
        {
          "black-list": {
            "to-add": [
              "ReduceSum"
            ]
          }
        }
    """
    return json.dumps({"black-list": {"to-add": sorted(set(op_types))}}, indent=2)


def write_outputs(folder: Path, files: dict[str, str], force: bool) -> list[Path]:
    """Write ``files`` into ``folder`` through opsdk's writer; an existing file that differs
    is refused unless ``force`` (the same content is left as it is)."""
    clash = [n for n, text in files.items()
             if (folder / n).exists() and (folder / n).read_text() != text]
    if clash and not force:
        raise OpsdkError(f"precision: {', '.join(str(folder / n) for n in clash)} exist(s) with "
                         "other content; pass --force to replace, or another -o folder")
    return [write_file(folder, n, text) for n, text in sorted(files.items())]
