"""Where opsdk's own data lives: in a source checkout, or inside the installed package.

In a checkout the top-level ``templates/``, ``cmake/`` and ``operators/`` folders are used;
an installed copy carries them under ``opsdk/_data/`` (see setup.py).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT = PACKAGE_DIR.parent


def data_dir(name: str) -> Path:
    """Return the folder ``name`` (templates, cmake, operators) of this opsdk install."""
    bundled = PACKAGE_DIR / "_data" / name
    if bundled.is_dir():
        return bundled
    return _CHECKOUT / name


def include_dir() -> Path:
    """The folder holding ``opsdk/custom_op.h``."""
    return PACKAGE_DIR / "include"


def entry_source() -> Path:
    """The generic pybind11 entry point compiled into every operator module."""
    return PACKAGE_DIR / "csrc" / "entry.cpp"


def entry_parts() -> list[Path]:
    """The headers ``entry.cpp`` includes from ``csrc/py/`` (one concern each), sorted."""
    return sorted((PACKAGE_DIR / "csrc" / "py").glob("*.h"))


def runtime_source() -> Path:
    """The Python-free runtime (thread pool, invocation core) linked next to every kernel."""
    return PACKAGE_DIR / "csrc" / "runtime.cpp"


def make_writable_dir(path: Path) -> None:
    """Create ``path`` (and parents) and prove a file can be written in it; OSError if not.

    Example:
        >>> make_writable_dir(Path("/proc/opsdk"))
        Traceback (most recent call last):
        ...
        FileNotFoundError: [Errno 2] No such file or directory: '/proc/opsdk'
    """
    path.mkdir(parents=True, exist_ok=True)
    probe = path / f".opsdk-write-test.{os.getpid()}"
    probe.touch()
    probe.unlink()
