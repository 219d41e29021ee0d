"""Checks of command-line paths, made before any long work starts."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import NoReturn

from .._paths import make_writable_dir
from .errors import OutputPathError


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command and the help, as
    every other failure of ``opsdk`` is (a subcommand's parser is of its parent's class).

    Example:
        >>> OneLineParser(prog="opsdk x").parse_args(["--y"])  # doctest: +SKIP
        opsdk x: error: unrecognized arguments: --y (see opsdk x --help)
    """

    def error(self, message: str) -> NoReturn:
        text = " ".join(message.split())
        fix = next((f for start, f in _ARGPARSE_FIXES if start in text), "")
        self.exit(2, f"{self.prog}: error: {text}{fix} (see {self.prog} --help)\n")


#: the fix of each of argparse's own messages (the option types' messages carry theirs)
_ARGPARSE_FIXES = (
    ("the following arguments are required", "; pass them"),
    ("unrecognized arguments", "; remove them or check their spelling"),
    ("invalid choice", "; pick one of those"),
    ("expected one argument", "; give the option its value"),
    ("expected at least one argument", "; give the option its values"),
    ("not allowed with argument", "; drop one of the two"),
    ("ambiguous option", "; write the option out in full"),
    ("invalid ", "; pass a value of that type"),
)


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
        if not sep or not name.strip() or not math.isfinite(number):
            raise ValueError(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected INPUT=VALUE (an input name and a finite number, e.g. sr=16000), got "
            f"{text!r}"
        ) from None
    return name.strip(), int(number) if number.is_integer() and abs(number) < 2**63 else number
