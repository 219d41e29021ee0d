"""How each Ascend interface spells opsdk's dtypes: one table (a fact of the ascend wing).

Columns: GE's ``ge::DataType`` enumerator (graph/types.h), ACL's ``aclDataType`` number
(acl/acl_base.h), msopgen's IR JSON ``type`` (INPUT_OUTPUT_DTYPE_MAP keys), the Ascend C
type of the AI Core kernels opsdk generates (``None`` where opsdk generates none), and AI
CPU's ``aicpu::DataType`` enumerator (cpu_types.h) where it differs from GE's: CANN 8.1.RC1
spells bfloat16 ``DT_BF16`` in graph/types.h but ``DT_BFLOAT16`` in aicpu/cpu_types.h.

Example:
    >>> SPELLINGS["float16"].ge, SPELLINGS["float16"].acl, SPELLINGS["float16"].msopgen
    ('DT_FLOAT16', 1, 'fp16')
    >>> ASCENDC_TYPES
    {'float16': 'half', 'bfloat16': 'bfloat16_t', 'float32': 'float'}
    >>> SPELLINGS["bfloat16"].ge, SPELLINGS["bfloat16"].aicpu
    ('DT_BF16', 'DT_BFLOAT16')
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import ALL_DTYPES

__all__ = [
    "Spelling", "SPELLINGS", "GE_DTYPES", "ACL_DTYPES", "MSOPGEN_DTYPES", "ASCENDC_TYPES",
    "AICPU_DTYPES", "MSOPGEN_INI_MISSING",
]


@dataclass(frozen=True)
class Spelling:
    """One dtype as GE, ACL, msopgen, Ascend C and AI CPU spell it."""

    ge: str
    acl: int
    msopgen: str
    ascendc: str | None = None
    aicpu_name: str | None = None  # when AI CPU's differs from GE's

    @property
    def aicpu(self) -> str:
        """The ``aicpu::DataType`` enumerator."""
        return self.aicpu_name or self.ge


SPELLINGS: dict[str, Spelling] = {
    "float16": Spelling("DT_FLOAT16", 1, "fp16", "half"),
    "bfloat16": Spelling("DT_BF16", 27, "bfloat16", "bfloat16_t", "DT_BFLOAT16"),
    "float32": Spelling("DT_FLOAT", 0, "float", "float"),
    "float64": Spelling("DT_DOUBLE", 11, "double"),
    "int8": Spelling("DT_INT8", 2, "int8"),
    "int16": Spelling("DT_INT16", 6, "int16"),
    "int32": Spelling("DT_INT32", 3, "int32"),
    "int64": Spelling("DT_INT64", 9, "int64"),
    "uint8": Spelling("DT_UINT8", 4, "uint8"),
    "bool": Spelling("DT_BOOL", 12, "bool"),
}
assert tuple(SPELLINGS) == ALL_DTYPES, "one row per opsdk dtype, in opsdk.dtypes order"

#: opsdk dtype -> ge::DataType enumerator.
GE_DTYPES: dict[str, str] = {d: s.ge for d, s in SPELLINGS.items()}
#: opsdk dtype -> aclDataType.
ACL_DTYPES: dict[str, int] = {d: s.acl for d, s in SPELLINGS.items()}
#: opsdk dtype -> msopgen IR JSON "type" spelling.
MSOPGEN_DTYPES: dict[str, str] = {d: s.msopgen for d, s in SPELLINGS.items()}
#: opsdk dtype -> Ascend C element type, for the dtypes opsdk's AI Core kernels take.
ASCENDC_TYPES: dict[str, str] = {d: s.ascendc for d, s in SPELLINGS.items() if s.ascendc}
#: opsdk dtype -> aicpu::DataType enumerator.
AICPU_DTYPES: dict[str, str] = {d: s.aicpu for d, s in SPELLINGS.items()}
#: ini spellings the AI CPU engine takes but msopgen 8.1's op info checker
#: (``cmake/util/aicpu_parser_ini.py``, TYPE_LIST) refuses; build.sh adds them to the
#: project's copy of the checker.
MSOPGEN_INI_MISSING: tuple[str, ...] = ("DT_BF16",)
