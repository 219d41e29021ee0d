"""The ``opsdk`` command.

Every subcommand lives in its own module ``opsdk/cli/cmd_<name>.py`` that defines
``register(subparsers)``; the parser it adds sets ``func(args) -> int``. Modules are
discovered automatically, so adding a command touches no shared file. A module
``cmd_<name>_<action>.py`` holds actions of ``<name>`` and is registered by ``cmd_<name>``.

Example:
    >>> from opsdk.cli import main
    >>> main(["--version"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import pkgutil
import sys
from collections.abc import Sequence

from ..errors import OpsdkError
from ._io import OneLineParser
from .errors import CaseFileArgError, IsolationArgError, OutputPathError

__all__ = ["main", "build_parser", "OutputPathError", "IsolationArgError", "CaseFileArgError"]


def _command_modules() -> list[str]:
    """The top-level command modules: ``cmd_<name>``, but not ``cmd_<name>_<action>``, which
    holds actions of ``cmd_<name>`` (``opsdk triton pipeline``) and is registered by it."""
    names = {m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("cmd_")}
    return sorted(n for n in names
                  if not any(n.startswith(f"{parent}_") for parent in names if parent != n))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``opsdk`` argument parser: every discovered subcommand, or just ``only``.

    Registering one command imports only its module, so ``opsdk build`` does not pay for
    importing ONNX or the test harness.
    """
    from .._version import __version__

    parser = OneLineParser(
        prog="opsdk",
        description="Write, build, validate, export, serve and package custom NPU operators.",
    )
    parser.add_argument("--version", action="version", version=f"opsdk {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = _command_modules()
    if only is not None:
        names = [n for n in names if n == f"cmd_{only}"]
    for name in names:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code.

    Every failure is one line on stderr naming the command (``opsdk build: error: ...``)
    and a non-zero exit; ``opsdk --debug COMMAND ...`` shows the traceback instead.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    known = first is not None and f"cmd_{first}" in _command_modules()
    parser = build_parser(first if known else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    command = " ".join([args.command] + [  # `opsdk triton build`, not `opsdk triton`
        v for k, v in vars(args).items() if k.endswith("_command") and isinstance(v, str)])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"opsdk {command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `opsdk check X | head -2`: the reader left, stop quietly
        _silence_stdout()
        return 141
    except Exception as e:
        if args.debug:
            raise
        print(f"opsdk {command}: error: {_one_line(e)}", file=sys.stderr)
        return 1


def _one_line(e: Exception) -> str:
    """The message of ``e`` for a person; unexpected errors also say how to see more."""
    if isinstance(e, OpsdkError):
        return str(e)
    if isinstance(e, OSError) and e.strerror:
        where = f" {e.filename!r}" if e.filename else ""
        hint = _OS_HINTS.get(e.errno or 0, "check the path and try again")
        return f"cannot use{where}: {e.strerror}; {hint}"
    text = " ".join(str(e).split()) or "(no message)"
    return f"{type(e).__name__}: {text} (add --debug before the command for the traceback)"


_OS_HINTS = {
    errno.EISDIR: "it is a folder: pass a file path",
    errno.ENOTDIR: "a part of the path is a file, not a folder: pick another path",
    errno.EEXIST: "it already exists: remove it or pick another path",
    errno.EACCES: "no permission: pick a path you can write, or fix its permissions",
    errno.EPERM: "no permission: pick a path you can write, or fix its permissions",
    errno.EROFS: "the file system is read-only: pick another path",
    errno.ENAMETOOLONG: "the name is too long: use a shorter path",
    errno.ENOSPC: "the disk is full: free some space",
    errno.ENOENT: "it does not exist: check the path",
}


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the exit flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
