"""Reading the TOML files users write (declarations, descriptions): the standard library's
tomllib (Python 3.11+), else the tomli package it came from, with errors that name the file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ._text import undecodable

__all__ = ["read_toml"]


def read_toml(path: str | Path, error: type[Exception], what: str = "file") -> dict[str, Any]:
    """The tables of the TOML file at ``path``; ``error`` (naming the file and ``what`` it
    is) when it is missing, unreadable as TOML, or tomllib/tomli is not there.

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "a.toml"
        >>> _ = f.write_text('x = [1, 2]')
        >>> read_toml(f, ValueError)
        {'x': [1, 2]}
    """
    p = Path(path)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise error(f"{p}: reading TOML needs Python 3.11+ (tomllib) or the tomli "
                        "package on 3.10; pip install tomli") from None
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{what} {p} does not exist; check the path") from None
    except UnicodeDecodeError as e:
        raise error(undecodable(p, e, what)) from None
    except tomllib.TOMLDecodeError as e:
        raise error(f"{p}: not valid TOML: {e}") from None
