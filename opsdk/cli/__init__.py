"""The ``opsdk`` command.

Every subcommand lives in its own module ``opsdk/cli/cmd_<name>.py`` that defines
``register(subparsers)``; the parser it adds sets ``func(args) -> int``. Modules are
discovered automatically, so adding a command touches no shared file.

Example:
    >>> from opsdk.cli import main
    >>> main(["--version"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from ..errors import OpsdkError

__all__ = ["main", "build_parser"]


def _command_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("cmd_"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``opsdk`` argument parser: every discovered subcommand, or just ``only``.

    Registering one command imports only its module, so ``opsdk build`` does not pay for
    importing ONNX or the test harness.
    """
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="opsdk",
        description="Write, build, validate, export, serve and package custom NPU operators.",
    )
    parser.add_argument("--version", action="version", version=f"opsdk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = _command_modules()
    if only is not None:
        names = [n for n in names if n == f"cmd_{only}"]
    for name in names:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    known = first is not None and f"cmd_{first}" in _command_modules()
    parser = build_parser(first if known else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except OpsdkError as e:
        print(f"opsdk {args.command}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"opsdk {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
