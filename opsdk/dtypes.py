"""Data type names shared by specs, kernels, ONNX and CANN.

opsdk names dtypes with the lowercase strings NumPy, ONNX (``tensor(float16)``) and
CANN (``float16``) all understand. bfloat16 comes from ``ml_dtypes``.

Example:
    >>> from opsdk.dtypes import TFloat, to_numpy
    >>> TFloat
    ('float16', 'float32')
    >>> to_numpy("float16")
    dtype('float16')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "DType",
    "DTYPES",
    "ALL_DTYPES",
    "TFloat",
    "TFloatBf",
    "TFloatAll",
    "TInt",
    "TNumeric",
    "to_numpy",
    "dtype_name",
    "is_float",
    "onnx_elem_type",
    "ATTR_TYPES",
]

@dataclass(frozen=True)
class DType:
    """Every spelling of one dtype outside the backends (those are in opsdk.ascend.spellings).

    ``numpy``: NumPy's name (bfloat16 is ml_dtypes'); ``onnx``: the ``onnx.TensorProto``
    element type and ``onnx_type`` its schema string; ``cpp``: the C++ type a kernel reads
    (custom_op.h); ``enum``: the ``opsdk::DType`` enumerator.
    """

    name: str
    numpy: str
    onnx: int
    onnx_type: str
    cpp: str
    enum: str


#: The dtype table: one row per dtype opsdk kernels take, in opsdk::DType's order.
DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("float16", "float16", 10, "tensor(float16)", "opsdk::half", "Float16"),
        DType("bfloat16", "bfloat16", 16, "tensor(bfloat16)", "opsdk::bfloat16", "BFloat16"),
        DType("float32", "float32", 1, "tensor(float)", "float", "Float32"),
        DType("float64", "float64", 11, "tensor(double)", "double", "Float64"),
        DType("int8", "int8", 3, "tensor(int8)", "int8_t", "Int8"),
        DType("int16", "int16", 5, "tensor(int16)", "int16_t", "Int16"),
        DType("int32", "int32", 6, "tensor(int32)", "int32_t", "Int32"),
        DType("int64", "int64", 7, "tensor(int64)", "int64_t", "Int64"),
        DType("uint8", "uint8", 2, "tensor(uint8)", "uint8_t", "UInt8"),
        DType("bool", "bool", 9, "tensor(bool)", "bool", "Bool"),
    )
}

ALL_DTYPES: tuple[str, ...] = tuple(DTYPES)

TFloat: tuple[str, ...] = ("float16", "float32")
TFloatBf: tuple[str, ...] = ("float16", "bfloat16", "float32")
TFloatAll: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64")
TInt: tuple[str, ...] = ("int8", "int16", "int32", "int64", "uint8")
TNumeric: tuple[str, ...] = TFloatAll + TInt

#: Attribute type names, as written in spec.py and in REGISTER_CUSTOM_OP(...).Attr().
ATTR_TYPES: tuple[str, ...] = ("int", "float", "bool", "string", "ints", "floats")

_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})

_ONNX_ELEM = {d.name: d.onnx for d in DTYPES.values()}


def _bfloat16() -> Any:
    import ml_dtypes

    return ml_dtypes.bfloat16


def to_numpy(name: str) -> np.dtype[Any]:
    """Return the NumPy dtype for an opsdk dtype name.

    Example:
        >>> to_numpy("int32")
        dtype('int32')
    """
    if name == "bfloat16":
        return np.dtype(_bfloat16())
    if name not in ALL_DTYPES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(ALL_DTYPES)}")
    return np.dtype(name)


_NAME_CACHE: dict[np.dtype[Any], str] = {}


def dtype_name(dtype: Any) -> str:
    """Return the opsdk name of a NumPy dtype (``"bfloat16"`` for ml_dtypes'), or raise.

    Example:
        >>> import numpy as np
        >>> dtype_name(np.float32)
        'float32'
    """
    dt = np.dtype(dtype)
    cached = _NAME_CACHE.get(dt)
    if cached is not None:
        return cached
    name = dt.name
    if name not in ALL_DTYPES:
        raise ValueError(f"dtype {name} is not supported by opsdk ({', '.join(ALL_DTYPES)})")
    _NAME_CACHE[dt] = name
    return name


def native_order(a: np.ndarray) -> np.ndarray:
    """``a`` itself when its byte order is the machine's, else a native-order copy.

    Every executor passes its inputs through this once, so an array such as
    ``np.array(x, ">f4")`` gives the same answer as its native twin instead of being
    read byte-swapped.

    Example:
        >>> import numpy as np
        >>> native_order(np.array([1.5], ">f4")).dtype.isnative
        True
    """
    if a.dtype.isnative:
        return a
    return a.astype(a.dtype.newbyteorder("="))


def is_float(name: str) -> bool:
    """True for float16, bfloat16, float32 and float64.

    Example:
        >>> is_float("bfloat16"), is_float("int8")
        (True, False)
    """
    return name in _FLOATS


def onnx_elem_type(name: str) -> int:
    """The ``onnx.TensorProto`` element type number of a dtype name.

    Example:
        >>> onnx_elem_type("float16")
        10
    """
    return _ONNX_ELEM[name]


def onnx_dtype_name(elem_type: int) -> str:
    """The dtype name of an ``onnx.TensorProto`` element type number.

    Example:
        >>> onnx_dtype_name(1)
        'float32'
    """
    for name, num in _ONNX_ELEM.items():
        if num == elem_type:
            return name
    raise ValueError(f"ONNX element type {elem_type} is not supported by opsdk")
