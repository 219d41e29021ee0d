"""Checks of command-line paths, made before any long work starts."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .._paths import make_writable_dir
from .errors import OutputPathError


def check_output_dir(path: str | os.PathLike[str], flag: str) -> Path:
    """Make sure ``path`` is (or can become) a folder this process can write.

    Example:
        >>> check_output_dir("/proc/version", "-o")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        opsdk.cli.errors.OutputPathError: -o /proc/version: it is a file, not a folder; ...
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputPathError(f"{flag} {p}: it is a file, not a folder; pass a folder path")
    try:
        make_writable_dir(p)
    except OSError as e:
        raise OutputPathError(
            f"{flag} {p}: cannot write there ({e.strerror or e}); pass a folder you can write"
        ) from None
    return p


def check_output_file(path: str | os.PathLike[str], flag: str) -> Path:
    """Make sure ``path`` names a file that can be created (its folder exists or can).

    Example:
        >>> check_output_file("/proc", "-o")
        Traceback (most recent call last):
        ...
        opsdk.cli.errors.OutputPathError: -o /proc: it is a folder; pass a file path
    """
    p = Path(path)
    if p.is_dir():
        raise OutputPathError(f"{flag} {p}: it is a folder; pass a file path")
    check_output_dir(p.parent if str(p.parent) else ".", f"{flag} {p}: its folder")
    return p


def probe_value(text: str) -> tuple[str, float]:
    """``--probe-values NAME=V`` -> (name, number); an integer stays an integer.

    Example:
        >>> probe_value("sr=16000")
        ('sr', 16000)
    """
    name, sep, value = text.partition("=")
    try:
        number = float(value)
        if not sep or not name.strip():
            raise ValueError(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected INPUT=VALUE (an input name and a number, e.g. sr=16000), got {text!r}"
        ) from None
    return name.strip(), int(number) if number.is_integer() else number
