"""The tiling fields every generated CANN project carries: the element count, the tile
count and one field per attribute (lists and strings as fixed-size arrays)."""

from __future__ import annotations

from dataclasses import dataclass

from .._op import TILING_LIST_MAX, TILING_STR_BYTES, CannOp

__all__ = ["TilingField", "tiling_fields"]


@dataclass(frozen=True)
class TilingField:
    name: str
    ctype: str
    size: int
    length: int = 0


def tiling_fields(op: CannOp) -> list[TilingField]:
    """Tiling fields sorted by element size (8, 4, 1 bytes) so each is naturally aligned."""
    fields = [TilingField("totalLength", "uint64_t", 8), TilingField("tileNum", "uint32_t", 4)]
    for a in op.attrs:
        if a.type == "int":
            fields.append(TilingField(a.name, "int64_t", 8))
        elif a.type == "float":
            fields.append(TilingField(a.name, "float", 4))
        elif a.type == "bool":
            fields.append(TilingField(a.name, "uint8_t", 1))
        elif a.type == "string":
            fields.append(TilingField(a.name, "uint8_t", 1, TILING_STR_BYTES))
        else:
            ctype, size = ("int64_t", 8) if a.type == "ints" else ("float", 4)
            fields.append(TilingField(a.name, ctype, size, TILING_LIST_MAX))
            fields.append(TilingField(a.name + "_len", "uint32_t", 4))
    return sorted(fields, key=lambda f: -f.size)
