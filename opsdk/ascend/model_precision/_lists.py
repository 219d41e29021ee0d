"""CANN's per-operator facts the emulation reads (``ascend/data/precision_lists.json``).

For an ONNX node: the CANN op type ATC's ONNX parser turns it into, whether that is a cube
(matrix) operator, its mixed-precision list (white/black/gray, from the ``precision_reduce``
flag of the SoC's ops-info file) and the float dtypes its AI Core kernel takes. The data
file names the source of each fact; ``tests/ascend/test_model_precision.py`` checks it against an
installed toolkit when there is one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..socs import DEFAULT_SOC as _DEFAULT_SOC_VERSION
from ..socs import compute_unit

__all__ = ["OpFacts", "cann_name", "lists_data", "op_facts", "recorded_socs", "overflow_mode",
           "DEFAULT_SOC", "OVERFLOW_MODES"]

#: How a float16 overflow ends: ``inf-nan`` (IEEE 754) or ``saturation`` (the largest finite
#: value; a NaN becomes 0).
OVERFLOW_MODES = ("inf-nan", "saturation")

#: The compute unit whose lists apply when no ``--soc`` is given: the one default SoC's.
DEFAULT_SOC = compute_unit(_DEFAULT_SOC_VERSION)
_BOTH = ("float16", "float32")


@cache
def lists_data() -> dict[str, Any]:
    """The whole data file (read once)."""
    return dict(json.loads((Path(__file__).parents[1] / "data" / "precision_lists.json")
                           .read_text()))


def recorded_socs() -> list[str]:
    """Compute units whose lists are recorded.

    Example:
        >>> recorded_socs()
        ['ascend310p', 'ascend910b']
    """
    return sorted(lists_data()["socs"])


@dataclass(frozen=True)
class OpFacts:
    """What ATC knows of one ONNX op type on one SoC.

    ``known``: the op is in opsdk's table (else gray, float16 and float32 are assumed).
    ``transparent``: the op only moves data (exact in any float dtype; never lowered alone).
    """

    onnx_type: str
    cann_type: str
    cube: bool = False
    mixlist: str = "gray"
    floats: tuple[str, ...] = _BOTH
    known: bool = True
    transparent: bool = False

    @property
    def has_fp16(self) -> bool:
        """The AI Core kernel takes float16."""
        return "float16" in self.floats

    @property
    def has_fp32(self) -> bool:
        """The AI Core kernel takes float32."""
        return "float32" in self.floats


def soc_unit(soc: str | None) -> str:
    """The recorded compute unit of ``soc`` (a SoC version or unit; None: the default)."""
    from ..socs import CannArgError

    unit = compute_unit(soc) if soc else DEFAULT_SOC
    if unit not in lists_data()["socs"]:
        raise CannArgError(f"no precision lists are recorded for {unit} (recorded: "
                           f"{', '.join(recorded_socs())}); pass --soc with one of them")
    return unit


def overflow_mode(soc: str | None = None) -> str:
    """The overflow mode a SoC computes in by default (CANN's runtime API documentation).

    Example:
        >>> overflow_mode("Ascend310P3"), overflow_mode("ascend910b")
        ('saturation', 'inf-nan')
    """
    return str(lists_data()["overflow"][soc_unit(soc)])


def cann_name(onnx_type: str) -> str:
    """CANN's op type for ONNX op ``onnx_type`` (the ONNX name where CANN keeps it, or where
    opsdk's table does not know the op), whatever the SoC.

    Example:
        >>> cann_name("Conv"), cann_name("Relu"), cann_name("Reshape")
        ('Conv2D', 'Relu', 'Reshape')
    """
    entry = lists_data()["onnx"].get(onnx_type)
    return str(entry["cann"]) if entry is not None else onnx_type


def op_facts(onnx_type: str, soc: str | None = None) -> OpFacts:
    """The facts of ONNX op ``onnx_type`` on ``soc`` (default :data:`DEFAULT_SOC`).

    Example:
        >>> f = op_facts("Conv", "Ascend910B3")
        >>> f.cann_type, f.cube, f.mixlist
        ('Conv2D', True, 'white')
        >>> op_facts("ReduceSum", "ascend910b").mixlist
        'black'
        >>> op_facts("GlobalAveragePool", "ascend310p").floats
        ('float16',)
    """
    data, unit = lists_data(), soc_unit(soc)
    if onnx_type in data["transparent"]:
        return OpFacts(onnx_type, onnx_type, transparent=True)
    entry = data["onnx"].get(onnx_type)
    if entry is None:
        return OpFacts(onnx_type, onnx_type, known=False)
    cann = entry["cann"]
    info = data["socs"][unit].get(cann, {})
    return OpFacts(onnx_type, cann, bool(entry.get("cube")), info.get("list", "gray"),
                   tuple(info.get("floats", _BOTH)))
