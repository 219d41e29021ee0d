"""Reading the text files users write (CSV cases, Python steps, keep_dtype lists, TOML,
JSON) as UTF-8, with an error that names the file, the byte and the fix instead of a bare
``UnicodeDecodeError``.

Example:
    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "steps.py"
    >>> _ = f.write_bytes("# caf\\xe9\\n".encode("latin-1"))
    >>> read_text(f, "steps file")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    opsdk._text.TextFileError: steps file .../steps.py: byte 5 (0xe9) is not UTF-8 ...
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import TextFileError

__all__ = ["TextFileError", "read_text", "undecodable"]


def undecodable(path: str | os.PathLike[str], e: UnicodeDecodeError, what: str = "file") -> str:
    """The message for ``e`` met while reading ``path``: the file, the byte and the fix.

    Example:
        >>> try:
        ...     b"ab\\xff".decode("utf-8")
        ... except UnicodeDecodeError as e:
        ...     print(undecodable("x.csv", e, "case file"))
        case file x.csv: byte 2 (0xff) is not UTF-8 (invalid start byte); save the file as UTF-8
    """
    byte = e.object[e.start] if e.start < len(e.object) else 0
    return (f"{what} {path}: byte {e.start} (0x{byte:02x}) is not UTF-8 ({e.reason}); save the "
            "file as UTF-8")


def read_text(path: str | os.PathLike[str], what: str = "file", *,
              error: type[Exception] = TextFileError, encoding: str = "utf-8") -> str:
    """The text of ``path`` read as UTF-8 (``encoding`` may be ``utf-8-sig``); ``error``
    naming the file (as ``what``) and the fix when it is missing, a folder or not UTF-8."""
    p = Path(path)
    try:
        return p.read_text(encoding=encoding)
    except UnicodeDecodeError as e:
        raise error(undecodable(p, e, what)) from None
    except FileNotFoundError:
        raise error(f"{what} {p} does not exist; check the path") from None
    except IsADirectoryError:
        raise error(f"{what} {p} is a folder; pass a file") from None
    except OSError as e:
        raise error(f"{what} {p}: cannot be read ({e.strerror}); check the path and its "
                    "permissions") from None
