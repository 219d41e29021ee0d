"""Known SoC versions, compute units, precision and implementation modes (data/socs.json)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import CannArgError

__all__ = [
    "DEFAULT_SOC",
    "soc_table",
    "check_soc_version",
    "compute_unit",
    "core_resources",
    "soc_facts",
    "soc_version_of",
    "precision_modes",
    "precision_modes_v2",
    "implmodes",
    "CannArgError",
]


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return dict(json.loads((Path(__file__).parent / "data" / "socs.json").read_text()))


#: The SoC every command and function takes when none is given (``--soc``).
DEFAULT_SOC: str = str(_data()["default_soc_version"])


def soc_table() -> dict[str, str]:
    """``{soc_version: compute_unit}``, e.g. ``Ascend910B3 -> ascend910b``."""
    return dict(_data()["soc_versions"])


def precision_modes() -> list[str]:
    """ATC's ``--precision_mode`` values (one list, kept with their emulation)."""
    from .precision import PRECISION_MODES

    return list(PRECISION_MODES)


def precision_modes_v2() -> list[str]:
    """Values of ATC's ``--precision_mode_v2`` and GE's ``ge.exec.precision_mode_v2``."""
    from .precision import PRECISION_MODES_V2

    return list(PRECISION_MODES_V2)


def implmodes() -> list[str]:
    return list(_data()["op_select_implmodes"])


def _ambiguous(name: str) -> list[str] | None:
    """The exact SoC versions a user may mean by ``name``, if CANN names another chip so."""
    found = _data()["ambiguous_soc_versions"].get(name) if not name.startswith("_") else None
    return list(found) if found else None


def check_soc_version(name: str, as_written: bool = False) -> None:
    """Refuse a SoC version ATC does not know, or one that names another chip than most
    users mean (``Ascend910B`` is CANN's name of a first-generation Ascend 910, not of the
    910B series) unless ``as_written``.

    Raises:
        CannArgError: naming the exact SoC versions to choose from.

    Example:
        >>> check_soc_version("Ascend910B3")
        >>> try:
        ...     check_soc_version("Ascend910B")
        ... except CannArgError as e:
        ...     print(str(e)[:60])
        --soc Ascend910B is ambiguous: CANN's platform config (Ascen
    """
    exact = _ambiguous(name)
    if exact and not as_written:
        raise CannArgError(
            f"--soc {name} is ambiguous: CANN's platform config (Ascend910B.ini) "
            f"names a first-generation Ascend 910 so (30 AI cores, dav-c100), while the "
            f"Ascend 910B series are {', '.join(exact)}; give the exact one (`npu-smi info`: "
            f"'Ascend' + the Name column, e.g. 910B3 -> Ascend910B3), or, on a "
            f"first-generation 910 that reports 910B, --soc-as-written"
        )
    if name not in soc_table():
        raise CannArgError(
            f"--soc {name!r} is not a known SoC version; use one of "
            f"{', '.join(soc_table())} (`npu-smi info` shows it as 'Ascend' + Name)"
        )


def compute_unit(name: str) -> str:
    """The compute unit (``ascend910b``) of a SoC version or compute unit name.

    Example:
        >>> compute_unit("Ascend910B3"), compute_unit("ascend910b")
        ('ascend910b', 'ascend910b')
    """
    table = soc_table()
    if _ambiguous(name):
        check_soc_version(name)
    if name in table:
        return table[name]
    units = sorted(set(table.values()))
    if name in units:
        return name
    lowered = {k.lower(): v for k, v in table.items()}
    if name.lower() in lowered:
        return lowered[name.lower()]
    raise CannArgError(
        f"unknown SoC {name!r}; use a compute unit ({', '.join(units)}) or a SoC version "
        f"such as Ascend910B3 (see `npu-smi info`: 'Ascend' + the Name column)"
    )


def soc_facts(soc: str) -> dict[str, Any]:
    """The platform facts of a SoC version, or of a compute unit's first SoC version:
    ``aic_version``, ``ub_bytes``, ``ai_cores``, ``cube_cores``, ``vector_cores`` (from the
    toolkit's ``data/platform_config/<SoC>.ini``).

    Example:
        >>> soc_facts("Ascend910B1")["vector_cores"], soc_facts("Ascend310B1")["ub_bytes"]
        (48, 253952)
    """
    facts = _data()["soc_facts"]
    version = soc if soc in facts else soc_version_of(compute_unit(soc))
    info = facts.get(version)
    if not isinstance(info, dict):
        raise CannArgError(f"no platform facts are recorded for {soc!r} (data/socs.json)")
    return dict(info)


def core_resources(soc: str) -> tuple[int, int]:
    """``(Unified Buffer bytes per core, cores a kernel runs on)`` of a SoC version or compute
    unit (a compute unit stands for its first SoC version). The cores are what the generated
    TilingFunc takes: ``GetCoreNumAiv()``, or 1 where the SoC has no vector cores.

    Example:
        >>> core_resources("Ascend910B3"), core_resources("ascend910b")
        ((196608, 40), (196608, 48))
    """
    info = soc_facts(soc)
    return int(info["ub_bytes"]), max(1, int(info["vector_cores"]))


def soc_version_of(unit: str) -> str:
    """A SoC version of the compute unit ``unit``, for tools that take one (msopgen ``-c``).

    Example:
        >>> soc_version_of("ascend910b"), soc_version_of("ascend310p")
        ('Ascend910B1', 'Ascend310P1')
    """
    for soc, u in soc_table().items():
        if u == unit:
            return soc
    units = ", ".join(sorted(set(soc_table().values())))
    raise CannArgError(f"unknown compute unit {unit!r}; known: {units}")
