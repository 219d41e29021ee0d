"""C++ spellings of spec values: literals, lists and names as CANN expects them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["cpp_string", "cpp_float", "cpp_literal", "cpp_list", "json_float"]

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def cpp_string(value: str) -> str:
    """A C++ string literal.

    Example:
        >>> cpp_string('a"b')
        '"a\\\\"b"'
    """
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def cpp_float(value: float) -> str:
    """A C++ float literal (``f`` suffix) that round-trips the value.

    Example:
        >>> cpp_float(1.0), cpp_float(1e-5), cpp_float(0.5)
        ('1.0f', '1e-05f', '0.5f')
    """
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"cannot write {value!r} as a C++ float literal")
    text = repr(float(value))
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def json_float(value: float) -> float:
    """A float default as JSON writes it (kept as a float, never an int)."""
    return float(value)


def cpp_literal(attr_type: str, value: Any) -> str:
    """The C++ literal of an attribute value; lists become braced lists (``{1, 1}``).

    Example:
        >>> cpp_literal("ints", [1, 1]), cpp_literal("bool", True), cpp_literal("floats", [0.5])
        ('{1, 1}', 'true', '{0.5f}')
    """
    if attr_type == "int":
        return str(int(value))
    if attr_type == "float":
        return cpp_float(value)
    if attr_type == "bool":
        return "true" if value else "false"
    if attr_type == "string":
        return cpp_string(value)
    if attr_type == "ints":
        return cpp_list(str(int(v)) for v in value)
    if attr_type == "floats":
        return cpp_list(cpp_float(v) for v in value)
    raise ValueError(f"unknown attribute type {attr_type!r}")


def cpp_list(items: Sequence[str] | Any) -> str:
    """``{a, b}`` from already-spelled items.

    Example:
        >>> cpp_list(["ge::DT_FLOAT16", "ge::DT_FLOAT"])
        '{ge::DT_FLOAT16, ge::DT_FLOAT}'
    """
    return "{" + ", ".join(items) + "}"
