"""The tuned table of a generated kernel in ``<operator>/tuning.json`` (written by ``opsdk
tune``, :mod:`._tune`; read by the kernel generator through :func:`read_tuning`)."""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import SpecError
from ._gen import TuningRow

__all__ = ["TUNING_FILE", "read_tuning", "read_params"]

#: The file in an operator's folder that holds its tuned table.
TUNING_FILE = "tuning.json"


def read_params(folder: Path, op: str, search: dict[str, tuple[int, ...]]
                ) -> list[tuple[int | None, dict[str, int]]] | None:
    """The tuned search parameters of a hand-written kernel in ``folder/tuning.json`` (rows
    ``{"up_to": N or null, "params": {name: value}}``), or None when there is none.

    Example:
        >>> read_params(Path("operators/softmax"), "Softmax", {}) is None  # doctest: +SKIP
        True
    """
    path = folder / TUNING_FILE
    if not path.is_file():
        return None
    fix = f"re-run opsdk tune {op} --force, or delete the file"
    try:
        rows = [(r["up_to"], {str(k): int(v) for k, v in r["params"].items()})
                for r in json.loads(path.read_text())["rows"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SpecError(f"{op}: {path} is not a tuned table of search parameters "
                        f"({type(e).__name__}: {e}); {fix}") from e
    for _, params in rows:
        bad = {k: v for k, v in params.items() if v not in search.get(k, ())}
        if bad:
            raise SpecError(f"{op}: {path}: {bad} is not among the candidates op_kernel/tiling.py "
                            f"declares ({search}); {fix}")
    if not rows or rows[-1][0] is not None or any(r[0] is None for r in rows[:-1]):
        raise SpecError(f"{op}: {path}: the rows must end with one whose up_to is null (every "
                        f"larger call); {fix}")
    return rows


def read_tuning(folder: Path, op: str) -> list[TuningRow] | None:
    """The tuned table in ``folder/tuning.json``, or None when there is none.

    Example:
        >>> read_tuning(Path("operators/gelu"), "Gelu") is None  # doctest: +SKIP
        True
    """
    path = folder / TUNING_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        rows = [TuningRow(r["up_to"], int(r["buffers"]), int(r["tile_cap"]), int(r["cores"]))
                for r in data["rows"]]
    except SpecError as e:
        raise SpecError(f"{op}: {path}: {e}; re-run opsdk tune {op} --force") from e
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SpecError(f"{op}: {path} is not a tuned table ({type(e).__name__}: {e}); "
                        f"re-run opsdk tune {op} --force, or delete the file") from e
    if not rows or rows[-1].up_to is not None or any(r.up_to is None for r in rows[:-1]):
        raise SpecError(f"{op}: {path}: the rows must end with one whose up_to is null (every "
                        f"larger call); re-run opsdk tune {op} --force")
    return rows
