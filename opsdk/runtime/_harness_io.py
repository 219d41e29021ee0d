"""The case and result files of opsdk's C++ harness (opsdk/csrc/harness.cpp).

One description of the binary format on the Python side; harness.cpp's header comment is
the C++ side. Little-endian throughout (x86-64 and AArch64 Linux both are).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from ..dtypes import dtype_name, to_numpy
from ..spec import TensorType

__all__ = ["Call", "write_cases", "read_results"]

CASES_MAGIC = b"OPSDKH1\n"
RESULTS_MAGIC = b"OPSDKR1\n"
_KINDS = {"int": 0, "float": 1, "bool": 2, "string": 3, "ints": 4, "floats": 5}


@dataclass(frozen=True)
class Call:
    """One kernel call: inputs (None for an absent optional one), the output types from
    the spec's inference, and every attribute by name with its declared type."""

    op: str
    inputs: Sequence[np.ndarray | None]
    outputs: Sequence[TensorType]
    attrs: Mapping[str, tuple[str, Any]]


def _str(f: BinaryIO, s: str) -> None:
    b = s.encode()
    f.write(struct.pack("<I", len(b)) + b)


def _dims(f: BinaryIO, dims: Sequence[int]) -> None:
    f.write(struct.pack(f"<{len(dims)}q", *dims))


def _span(a: np.ndarray) -> tuple[bytes, tuple[int, ...]]:
    """The bytes from the first element to the last of a view, and its element strides.

    A view with non-negative strides is sent as it is (the harness then exercises the
    strided path of opsdk::invoke); anything else is sent contiguous.
    """
    item = a.itemsize
    if a.size and all(s >= 0 and s % item == 0 for s in a.strides):
        strides = tuple(s // item for s in a.strides)
        span = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides, strict=True))
        flat = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,), writeable=False)
        return flat.tobytes(), strides
    c = np.ascontiguousarray(a)
    strides = tuple(s // item for s in c.strides) if c.size else (0,) * c.ndim
    return c.tobytes(), strides


def _tensor(f: BinaryIO, a: np.ndarray | None) -> None:
    if a is None:
        f.write(b"\0")
        return
    f.write(b"\1")
    _str(f, dtype_name(a.dtype))
    data, strides = _span(a)
    f.write(struct.pack("<I", a.ndim))
    _dims(f, a.shape)
    _dims(f, strides)
    f.write(struct.pack("<Q", len(data)) + data)


def _attr(f: BinaryIO, name: str, typ: str, value: Any) -> None:
    _str(f, name)
    f.write(struct.pack("<B", _KINDS[typ]))
    if typ == "int":
        f.write(struct.pack("<q", int(value)))
    elif typ == "float":
        f.write(struct.pack("<d", float(value)))
    elif typ == "bool":
        f.write(struct.pack("<B", 1 if value else 0))
    elif typ == "string":
        _str(f, str(value))
    else:
        fmt = "q" if typ == "ints" else "d"
        items = [int(v) if typ == "ints" else float(v) for v in value]
        f.write(struct.pack(f"<I{len(items)}{fmt}", len(items), *items))


def write_cases(f: BinaryIO, calls: Sequence[Call]) -> None:
    """Write a batch of calls as the harness reads it."""
    f.write(CASES_MAGIC + struct.pack("<I", len(calls)))
    for c in calls:
        _str(f, c.op)
        f.write(struct.pack("<I", len(c.inputs)))
        for a in c.inputs:
            _tensor(f, a)
        f.write(struct.pack("<I", len(c.outputs)))
        for t in c.outputs:
            _str(f, t.dtype)
            f.write(struct.pack("<I", len(t.shape)))
            _dims(f, [int(d) for d in t.shape])  # type: ignore[arg-type]
        f.write(struct.pack("<I", len(c.attrs)))
        for name, (typ, value) in c.attrs.items():
            _attr(f, name, typ, value)


def _read(f: BinaryIO, n: int) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise ValueError("truncated harness result file")
    return b


def read_results(f: BinaryIO, calls: Sequence[Call]) -> list[list[np.ndarray] | str]:
    """Per call, the output arrays, or the error message the kernel raised."""
    if _read(f, 8) != RESULTS_MAGIC:
        raise ValueError("not a harness result file")
    (n,) = struct.unpack("<I", _read(f, 4))
    if n != len(calls):
        raise ValueError(f"the harness answered {n} calls, {len(calls)} were sent")
    results: list[list[np.ndarray] | str] = []
    for c in calls:
        if _read(f, 1) == b"\0":
            (size,) = struct.unpack("<I", _read(f, 4))
            results.append(_read(f, size).decode(errors="replace"))
            continue
        outs = []
        for t in c.outputs:
            (size,) = struct.unpack("<Q", _read(f, 8))
            arr = np.frombuffer(_read(f, size), to_numpy(t.dtype))
            outs.append(arr.reshape([int(d) for d in t.shape]).copy())  # type: ignore[arg-type]
        results.append(outs)
    return results
