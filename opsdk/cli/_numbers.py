"""The argparse types of every numeric option: each number is checked against its range
before a command starts work, so that no option value reaches C++, an allocation or a
server out of range.

argparse prefixes the option (``argument --requests: ...``); the message says the value,
the limit and what to pass.

Example:
    >>> count("4")
    4
    >>> count("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: -1 is below 1; pass a whole number from 1 to 9223372036854775807
"""

from __future__ import annotations

import argparse
import math
import threading
from collections.abc import Callable

from .._limits import INT_RANGES, memory_ceiling

__all__ = ["int_in", "count", "count32", "natural", "port", "seconds", "pause", "size", "int_list",
           "seed", "opset", "memory_policy", "max_batch", "queue_delay"]

_INT64_MAX = INT_RANGES["int64"][1]


def _whole(text: str) -> int:
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def int_in(lo: int, hi: int, what: str = "") -> Callable[[str], int]:
    """The argparse type of a whole number from ``lo`` to ``hi`` (inclusive).

    Example:
        >>> int_in(7, 22, "an opset")("99")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: 99 is above 22 (an opset); pass a whole number from 7 to 22
    """
    about = f" ({what})" if what else ""

    def parse(text: str) -> int:
        value = _whole(text)
        if lo <= value <= hi:
            return value
        side = f"below {lo}" if value < lo else f"above {hi}"
        raise argparse.ArgumentTypeError(
            f"{value} is {side}{about}; pass a whole number from {lo} to {hi}")

    parse.__name__ = f"int_in_{lo}_{hi}"
    return parse


#: a count of things (requests, rounds, threads, instances): 1 or more
count = int_in(1, _INT64_MAX)
count.__name__ = "count"
#: 0 or more (warm-up calls, a verbosity level)
natural = int_in(0, _INT64_MAX)
natural.__name__ = "natural"
#: a field Triton or GE reads as a 32-bit int (a batch size, an instance count), 1 or more
count32 = int_in(1, INT_RANGES["int32"][1])
count32.__name__ = "count32"
#: a TCP port
port = int_in(1, 65535, "a TCP port")
port.__name__ = "port"
#: a random seed: NumPy's legacy generators take 0 to 2**32 - 1
seed = int_in(0, 2**32 - 1, "a NumPy seed")
seed.__name__ = "seed"
#: an ai.onnx opset; the command checks the range the installed onnx knows (and names it)
opset = int_in(0, INT_RANGES["int32"][1], "an opset")
opset.__name__ = "opset"
#: GE's static-memory policy (ge.exec.staticMemoryPolicy / GE_USE_STATIC_MEMORY)
memory_policy = int_in(0, 4, "a GE static-memory policy")
memory_policy.__name__ = "memory_policy"
#: Triton's max_batch_size, an int32 (0 turns batching off)
max_batch = int_in(0, INT_RANGES["int32"][1], "a Triton max_batch_size")
max_batch.__name__ = "max_batch"
#: Triton's max_queue_delay_microseconds, a uint64
queue_delay = int_in(0, 2**64 - 1, "Triton's uint64 max_queue_delay_microseconds")
queue_delay.__name__ = "queue_delay"


def _seconds(text: str, zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        least = "0 or more" if zero else "a positive number of"
        raise argparse.ArgumentTypeError(
            f"expected {least} seconds, got {text!r}; pass e.g. {0.5 if zero else 30}")
    if value > threading.TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(
            f"{text} seconds is more than a wait can take ({threading.TIMEOUT_MAX:.3g}); "
            "pass a smaller number")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds that a wait can take (``threading.TIMEOUT_MAX``).

    Example:
        >>> seconds("1e300")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: 1e300 seconds is more than a wait can take (...); ...
    """
    return _seconds(text, zero=False)


def pause(text: str) -> float:
    """As :func:`seconds`, but 0 is allowed (no pause).

    Example:
        >>> pause("0")
        0.0
    """
    return _seconds(text, zero=True)


def size(text: str) -> int:
    """A number of elements: 1 or more, and no more bytes than the memory ceiling holds
    even at one byte an element (a command checks its own dtype's size too).

    Example:
        >>> size("0")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: 0 is below 1 (a number of elements); pass a whole number ...
    """
    limit = memory_ceiling()
    return int_in(1, limit, "a number of elements")(text)


def int_list(
    element: Callable[[str], int], example: str = "1,2,4"
) -> Callable[[str], tuple[int, ...]]:
    """The argparse type of comma-separated whole numbers, each checked by ``element``.

    Example:
        >>> int_list(count)("1,8")
        (1, 8)
        >>> int_list(port)("80,0")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: item 2 of '80,0': 0 is below 1 (a TCP port); pass ... to 65535
    """

    def parse(text: str) -> tuple[int, ...]:
        items = [x for x in text.split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated whole numbers (e.g. {example}), got {text!r}")
        values = []
        for i, item in enumerate(items, 1):
            try:
                values.append(element(item))
            except argparse.ArgumentTypeError as e:
                raise argparse.ArgumentTypeError(f"item {i} of {text!r}: {e}") from None
        return tuple(values)

    parse.__name__ = f"list_of_{getattr(element, '__name__', 'int')}"
    return parse


def byte_count(text: str) -> int:
    """A number of bytes: 0 or more, and no more than the memory ceiling.

    Example:
        >>> byte_count("8192")
        8192
    """
    return int_in(0, memory_ceiling(), "a number of bytes")(text)
