"""The ranges a number must fit before it crosses into C++ or an allocation.

One place for the limits that attribute values (:mod:`opsdk.spec`), output allocations
(:mod:`opsdk.runtime`) and command-line numbers (``opsdk/cli/_numbers.py``) are checked
against, so that a value out of range is refused naming itself and the limit instead of
reaching pybind11 ("Unable to cast"), ``std::bad_alloc`` or NumPy's "array is too big".

Example:
    >>> int_range_problem(2**70, "int64")
    'is outside the int64 range [-9223372036854775808, 9223372036854775807]'
    >>> print(allocation_problem((2**40, 2**40), 4, ceiling=2**30))  # doctest: +ELLIPSIS
    needs 4835703278458516698824704 bytes (4.8e+24), more than the memory ceiling of 1073741824 ...
"""

from __future__ import annotations

import math
import os

__all__ = [
    "INT_RANGES", "FLOAT32_MAX", "FLOAT32_TINY", "int_range_problem", "float32_problem",
    "memory_ceiling", "allocation_problem", "MEMORY_CEILING_ENV",
]

#: the inclusive range of each integer type a number may have to fit
INT_RANGES: dict[str, tuple[int, int]] = {
    "int64": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint16": (0, 2**16 - 1),
    "uint8": (0, 2**8 - 1),
}
#: the largest finite float32 (ONNX stores float attributes as float32)
FLOAT32_MAX = 3.4028234663852886e38
#: the smallest positive float32 (a subnormal); a nonzero value below it rounds to 0
FLOAT32_TINY = 1.401298464324817e-45
#: an environment variable that lowers (or raises) the memory ceiling, in bytes
MEMORY_CEILING_ENV = "OPSDK_MEMORY_CEILING"


def int_range_problem(value: int, type_name: str) -> str | None:
    """What is wrong with ``value`` as an integer of ``type_name``, or None when it fits.

    Example:
        >>> int_range_problem(-1, "int32") is None
        True
    """
    lo, hi = INT_RANGES[type_name]
    if lo <= value <= hi:
        return None
    return f"is outside the {type_name} range [{lo}, {hi}]"


def float32_problem(value: float) -> str | None:
    """What is wrong with ``value`` as a float32 attribute, or None when it fits.

    NaN and the infinities are values, not range errors; a finite value beyond float32
    becomes inf and a nonzero one below its smallest subnormal becomes 0.

    Example:
        >>> float32_problem(1e39)
        'is outside the float32 range (|value| <= 3.4028234663852886e+38)'
        >>> float32_problem(1e-310)  # doctest: +ELLIPSIS
        'is nonzero but smaller than the smallest float32 (1.40...e-45), so it rounds to 0'
    """
    if not math.isfinite(value):
        return None
    if abs(value) > FLOAT32_MAX:
        return f"is outside the float32 range (|value| <= {FLOAT32_MAX!r})"
    if value != 0 and abs(value) < FLOAT32_TINY / 2:
        return (f"is nonzero but smaller than the smallest float32 ({FLOAT32_TINY!r}), "
                "so it rounds to 0")
    return None


def memory_ceiling() -> int:
    """The most bytes one allocation may ask for: this machine's physical memory, or
    ``$OPSDK_MEMORY_CEILING`` when set (a positive integer of bytes).

    Example:
        >>> memory_ceiling() > 0
        True
    """
    text = os.environ.get(MEMORY_CEILING_ENV, "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX host
        return 2**40


def allocation_problem(
    shape: tuple[int, ...], itemsize: int, ceiling: int | None = None
) -> str | None:
    """What is wrong with allocating ``shape`` of ``itemsize``-byte elements, or None.

    A dim beyond int64 cannot be passed to C++ at all; a total beyond the memory ceiling
    (:func:`memory_ceiling`) would fail as ``std::bad_alloc`` or ``MemoryError``.
    """
    for d in shape:
        if int_range_problem(d, "int64"):
            return f"has dim {d}, beyond the int64 range a tensor dim must fit (<= {2**63 - 1})"
    nbytes = math.prod(shape) * itemsize
    limit = memory_ceiling() if ceiling is None else ceiling
    if nbytes <= limit:
        return None
    return (f"needs {nbytes} bytes ({nbytes:.2g}), more than the memory ceiling of {limit} "
            f"bytes ({limit / 2**30:.3g} GiB: this machine's memory, or ${MEMORY_CEILING_ENV}); "
            "use smaller sizes")
