"""How each opsdk dtype is spelled on the Ascend side: one row per dtype, one column per API.

Columns, each checked against the CANN 8.1.RC1 toolkit's own files:

* ``opsdk`` -- the ``opsdk::DType`` enumerator (``opsdk/custom_op.h``);
* ``ge`` -- the ``ge::DataType`` enumerator (``graph/types.h``) and the op info ini spelling
  (the AI CPU engine's ``aicpu_kernel.json`` uses the same names, ``DT_BF16`` included);
* ``aicpu`` -- the ``aicpu::DataType`` enumerator of the AI CPU kernel API
  (``<arch>-linux/include/aicpu/cpu_types.h``): bfloat16 is ``DT_BFLOAT16`` there, not ``DT_BF16``;
* ``msopgen`` -- the ``type`` spelling of msopgen's IR JSON (INPUT_OUTPUT_DTYPE_MAP keys).

Example:
    >>> SPELLINGS["bfloat16"].ge, SPELLINGS["bfloat16"].aicpu, SPELLINGS["bfloat16"].msopgen
    ('DT_BF16', 'DT_BFLOAT16', 'bfloat16')
    >>> GE_DTYPES["float16"], AICPU_DTYPES["float16"], MSOPGEN_DTYPES["float32"]
    ('DT_FLOAT16', 'DT_FLOAT16', 'float')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Spelling", "SPELLINGS", "GE_DTYPES", "AICPU_DTYPES", "MSOPGEN_DTYPES",
           "OPSDK_DTYPES", "MSOPGEN_INI_MISSING"]


@dataclass(frozen=True)
class Spelling:
    """One dtype's names: opsdk::DType, ge::DataType, aicpu::DataType, msopgen JSON."""

    opsdk: str
    ge: str
    aicpu: str
    msopgen: str


#: opsdk dtype -> its spellings (the one table; the dicts below are views of it).
SPELLINGS: dict[str, Spelling] = {
    "float16": Spelling("Float16", "DT_FLOAT16", "DT_FLOAT16", "fp16"),
    "bfloat16": Spelling("BFloat16", "DT_BF16", "DT_BFLOAT16", "bfloat16"),
    "float32": Spelling("Float32", "DT_FLOAT", "DT_FLOAT", "float"),
    "float64": Spelling("Float64", "DT_DOUBLE", "DT_DOUBLE", "double"),
    "int8": Spelling("Int8", "DT_INT8", "DT_INT8", "int8"),
    "int16": Spelling("Int16", "DT_INT16", "DT_INT16", "int16"),
    "int32": Spelling("Int32", "DT_INT32", "DT_INT32", "int32"),
    "int64": Spelling("Int64", "DT_INT64", "DT_INT64", "int64"),
    "uint8": Spelling("UInt8", "DT_UINT8", "DT_UINT8", "uint8"),
    "bool": Spelling("Bool", "DT_BOOL", "DT_BOOL", "bool"),
}

#: opsdk dtype -> ge::DataType enumerator (graph/types.h), also the op info ini spelling.
GE_DTYPES: dict[str, str] = {d: s.ge for d, s in SPELLINGS.items()}
#: opsdk dtype -> aicpu::DataType enumerator (aicpu/cpu_types.h).
AICPU_DTYPES: dict[str, str] = {d: s.aicpu for d, s in SPELLINGS.items()}
#: opsdk dtype -> msopgen IR JSON "type" spelling (INPUT_OUTPUT_DTYPE_MAP keys).
MSOPGEN_DTYPES: dict[str, str] = {d: s.msopgen for d, s in SPELLINGS.items()}
#: opsdk dtype -> opsdk::DType enumerator (custom_op.h).
OPSDK_DTYPES: dict[str, str] = {d: s.opsdk for d, s in SPELLINGS.items()}
#: ini spellings the AI CPU engine takes but msopgen 8.1's op info checker
#: (``cmake/util/aicpu_parser_ini.py``, TYPE_LIST) refuses; build.sh adds them to the
#: project's copy of the checker.
MSOPGEN_INI_MISSING: tuple[str, ...] = ("DT_BF16",)
