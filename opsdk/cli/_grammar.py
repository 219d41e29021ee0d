"""The command line's one grammar for input shapes and SoCs, shared by every command.

``--shape NAME=D0,D1,...`` and ``--input-shape NAME=D0,D1,...`` are one repeatable option
wherever a command takes shapes; ``NAME:D0,D1,...`` (ATC's spelling) is taken too, and so
are several shapes joined by ``;`` in one value (``"x:1,3;y:2"``, as ATC writes them). Each
command reads the dims its own way (symbolic names, ``-1``, ATC's ``lo~hi``).

``--soc SOC`` names a SoC version in every command; the default is the one default SoC of
the SoC table (:data:`opsdk.ascend.socs.DEFAULT_SOC`). ``--soc-version`` and ``--soc_version``
are kept as hidden aliases.

Example:
    >>> named_shapes(["x=1,3", "y:2;ids:4,8"])
    [('x', '1,3'), ('y', '2'), ('ids', '4,8')]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..ascend.socs import DEFAULT_SOC
from ..errors import SpecError

__all__ = ["SHAPE_METAVAR", "SHAPE_HELP", "SOC_HELP", "add_shape_option", "add_soc_option",
           "named_shapes", "atc_shapes", "equals_form"]

SHAPE_METAVAR = "NAME=D0,D1,..."
#: The sentence every command's shape option starts its help with.
SHAPE_HELP = ("shape of input NAME; repeatable; --shape and --input-shape are one option, "
              "NAME:D0,D1,... (ATC's spelling) and several joined by ';' work too")
#: The sentence every command's SoC option starts its help with.
SOC_HELP = f"SoC version, e.g. Ascend910B3 or Ascend310P3 (npu-smi info); default {DEFAULT_SOC}"


def add_shape_option(p: argparse.ArgumentParser, dims: str, **kwargs: Any) -> None:
    """The one shape option of a command (dest ``shape``); ``dims`` says what a dim may be.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_shape_option(p, "integers")
        >>> p.parse_args(["--input-shape", "x:1,3", "--shape", "y=2"]).shape
        ['x:1,3', 'y=2']
    """
    kwargs.setdefault("action", "append")
    p.add_argument("--shape", "--input-shape", dest="shape", default=[], metavar=SHAPE_METAVAR,
                   help=f"{SHAPE_HELP}; {dims}", **kwargs)


def add_soc_option(p: argparse.ArgumentParser, what: str = "", repeatable: bool = False) -> None:
    """The one SoC option of a command (dest ``soc``), with its old spellings hidden.

    ``repeatable`` collects a list (None when not given: the command's default list is the
    default SoC's compute unit).

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_soc_option(p)
        >>> p.parse_args([]).soc, p.parse_args(["--soc-version", "Ascend310P3"]).soc
        ('Ascend910B3', 'Ascend310P3')
    """
    kind: dict[str, Any] = ({"action": "append", "default": None} if repeatable
                            else {"default": DEFAULT_SOC})
    more = "; repeatable" if repeatable else ""
    p.add_argument("--soc", dest="soc", metavar="SOC", help=f"{SOC_HELP}{more}{what}", **kind)
    p.add_argument("--soc-version", "--soc_version", dest="soc", help=argparse.SUPPRESS,
                   **{k: v for k, v in kind.items() if k != "default"})


def named_shapes(items: Sequence[str], flag: str = "--shape") -> list[tuple[str, str]]:
    """``NAME=DIMS`` or ``NAME:DIMS`` items (several may be joined by ``;``) as (name, dims).

    A name may hold ``:`` (``input:0=1,3`` or ``input:0:1,3``): the last ``=``, else the last
    ``:``, ends it. Empty dims (``sr:``, as ATC writes a scalar) are a rank-0 shape.

    Raises:
        SpecError: naming the item and the two spellings.
    """
    out = []
    for item in items:
        for part in filter(None, (p.strip() for p in item.split(";"))):
            name, sep, dims = part.rpartition("=") if "=" in part else part.rpartition(":")
            if not sep or not name.strip():
                raise SpecError(f"{flag} {part!r}: expected NAME=VALUE, the VALUE dims D0,D1,... "
                                "(NAME:D0,D1,... as ATC writes it works too), e.g. --shape "
                                "x=1,3,224,224")
            out.append((name.strip(), dims.strip()))
    return out


def atc_shapes(items: Sequence[str]) -> str | None:
    """The shape options as ATC's one ``--input_shape`` value (``"x:1,3;y:-1,8"``).

    Example:
        >>> atc_shapes(["x=1,3", "y:-1,8"])
        'x:1,3;y:-1,8'
    """
    pairs = named_shapes(items)
    return ";".join(f"{n}:{d}" for n, d in pairs) if pairs else None


def equals_form(items: Sequence[str]) -> list[str]:
    """The shape options as one string per shape, a named one as ``NAME=DIMS``; an item
    without a name (``opsdk bench``'s positional shorthand, ``4096x1024``) is kept as it is.

    Example:
        >>> equals_form(["64x4096", "Scale:1024;B=1024"])
        ['64x4096', 'Scale=1024', 'B=1024']
    """
    out = []
    for item in items:
        for part in filter(None, (p.strip() for p in item.split(";"))):
            if "=" not in part and ":" in part:
                name, _, dims = part.rpartition(":")
                part = f"{name}={dims}"
            out.append(part)
    return out
