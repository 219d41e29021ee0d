"""Every spelling of an operator name, derived in one place.

Example:
    >>> from opsdk.naming import spellings
    >>> spellings("MyOp")
    Spellings(camel='MyOp', snake='my_op', upper='MY_OP')
    >>> spellings("GELU2d").snake
    'gelu2d'
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .errors import ScaffoldError

__all__ = ["Spellings", "spellings", "snake_case", "check_op_name", "check_vendor_name"]


#: An op type: UpperCamelCase letters and digits.
OP_NAME_RE = re.compile(r"^[A-Z][A-Za-z0-9]*$")

#: C++ keywords and common macros an op or field name must not collide with.
CPP_KEYWORDS = frozenset(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq NULL""".split()
)


#: longest op type: it becomes folder, file, C++ and ONNX names (255-byte file name limits)
MAX_OP_NAME = 64


class Spellings(NamedTuple):
    camel: str
    snake: str
    upper: str


def snake_case(name: str) -> str:
    """``FusedConvBnRelu`` -> ``fused_conv_bn_relu``; acronyms stay together (``GELU`` -> ``gelu``).

    Example:
        >>> snake_case("LayerNormalization"), snake_case("HTTPServer2D")
        ('layer_normalization', 'http_server2_d')
    """
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def check_op_name(name: str) -> None:
    """Raise :class:`ScaffoldError` unless ``name`` is a usable UpperCamelCase op type.

    Example:
        >>> check_op_name("my_op")
        Traceback (most recent call last):
        ...
        opsdk.errors.ScaffoldError: invalid op name 'my_op': ...
    """
    why = None
    if not name:
        why = "it is empty"
    elif len(name) > MAX_OP_NAME:
        why = f"it is {len(name)} characters long, at most {MAX_OP_NAME} are allowed"
    elif not OP_NAME_RE.match(name):
        if not name[0].isupper():
            why = "it must start with an uppercase letter"
        else:
            why = "only letters and digits are allowed (no spaces, '_', '/', '.' or '-')"
    elif name in CPP_KEYWORDS:
        why = "it is a C++ keyword"
    if why:
        raise ScaffoldError(
            f"invalid op name {name!r}: {why}. Op types are UpperCamelCase like 'MyOp' "
            "(regex ^[A-Z][A-Za-z0-9]*$)"
        )


def check_vendor_name(vendor: str) -> str:
    """Return ``vendor`` if it is usable as a CANN vendor_name, else raise ScaffoldError.

    It becomes a folder (``vendors/<vendor>``), a CMake preset value and part of file
    names, so only letters, digits and '_' are allowed.

    Example:
        >>> check_vendor_name("bad vendor/..")
        Traceback (most recent call last):
        ...
        opsdk.errors.ScaffoldError: --vendor 'bad vendor/..': use letters, digits and '_' ...
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,63}", vendor):
        raise ScaffoldError(
            f"--vendor {vendor!r}: use letters, digits and '_' (starting with a letter, at "
            "most 64), e.g. --vendor my_company; it becomes the vendors/<vendor> folder"
        )
    return vendor


def spellings(name: str) -> Spellings:
    """All spellings of an op name, after checking it."""
    check_op_name(name)
    snake = snake_case(name)
    return Spellings(name, snake, snake.upper())
