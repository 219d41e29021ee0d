"""ISA variants of a packaged kernel: which levels a wheel gets, which one a host loads.

A wheel's kernel is built for the CPU baseline (x86-64-v2 by default) and again for wider
levels (x86-64-v3: AVX2+FMA+F16C; x86-64-v4: AVX-512), each under
``operators/<op>/_isa/<level>/``. The manifest lists them, baseline first
(``"isa_variants": ["x86-64-v2", "x86-64-v3", "x86-64-v4"]``). At load, opsdk imports the
widest variant whose instructions this CPU has (``/proc/cpuinfo`` flags, which the kernel
clears when the OS does not save the wider registers); ``OPSDK_ISA=<level>`` (or
``baseline``) forces one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import ManifestError, SpecError

#: /proc/cpuinfo flags each x86-64 micro-architecture level needs (cumulative).
_X86_V2 = ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3")
_X86_V3 = _X86_V2 + ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")
_X86_V4 = _X86_V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
CPU_LEVELS: dict[str, tuple[str, ...]] = {
    "x86-64": (),
    "x86-64-v2": _X86_V2,
    "x86-64-v3": _X86_V3,
    "x86-64-v4": _X86_V4,
    "armv8-a": (),
}


__all__ = ["ISA_ENV", "ISA_DIR", "WIDER_LEVELS", "isa_variants", "pick_variant"]

#: The environment variable that forces a variant: a level of the manifest, or ``baseline``.
ISA_ENV = "OPSDK_ISA"
#: The folder, inside an operator folder, holding one subfolder per wider level.
ISA_DIR = "_isa"
#: Wider levels a baseline can be extended with, per machine, narrowest first.
WIDER_LEVELS: dict[str, tuple[str, ...]] = {
    "x86_64": ("x86-64-v3", "x86-64-v4"),
    "aarch64": (),
}


def isa_variants(requested: Sequence[str] | None, machine: str, baseline: str) -> list[str]:
    """The wider levels to build for ``machine`` above ``baseline``: those of ``requested``
    that are levels of this machine (default: all of them).

    Example:
        >>> isa_variants(None, "x86_64", "x86-64-v2")
        ['x86-64-v3', 'x86-64-v4']
        >>> isa_variants([], "aarch64", "armv8-a")
        []

    Raises:
        SpecError: a requested level is unknown, or is not a level of ``machine`` (an x86
            level asked of an aarch64 wheel is refused, not dropped).
    """
    every = [lv for levels in WIDER_LEVELS.values() for lv in levels]
    for level in requested or ():
        if level not in every:
            raise SpecError(
                f"--isa-variants {level!r} is not a CPU level opsdk builds variants for; pick "
                f"among {', '.join(every)}, or pass --isa-variants none for the baseline only"
            )
    known = WIDER_LEVELS.get(machine, ())
    foreign = [lv for lv in requested or () if lv not in known]
    if foreign:
        has = ", ".join(known) if known else "none yet"
        raise SpecError(
            f"--isa-variants {','.join(foreign)}: not a CPU level of {machine} (its wheels' "
            f"levels: {has}); build the {machine} wheel in its own run with --isa-variants "
            f"{','.join(known) or 'none'}"
        )
    wanted = known if requested is None else requested
    levels = list(CPU_LEVELS)  # narrowest first
    floor = levels.index(baseline) if baseline in levels else -1
    return [lv for lv in known if lv in wanted and levels.index(lv) > floor]


def _supported(level: str, flags: frozenset[str] | None) -> bool:
    needed = CPU_LEVELS.get(level)
    return needed is not None and flags is not None and set(needed) <= flags


def pick_variant(folder: Path, module: Path, man: dict[str, Any],
                 flags: frozenset[str] | None) -> Path:
    """The module to load: the widest listed variant this CPU supports, or the one forced
    by ``OPSDK_ISA``; ``module`` (the baseline) when the manifest lists no wider one.

    Example:
        >>> pick_variant(folder, folder / "_opsdk_kernels.cpython-311-x86_64-linux-gnu.so",
        ...              manifest, frozenset({"avx2", ...}))  # doctest: +SKIP
        PosixPath('.../_isa/x86-64-v3/_opsdk_kernels.cpython-311-x86_64-linux-gnu.so')
    """
    listed = [str(v) for v in man.get("isa_variants", [])]
    wider = listed[1:]
    forced = os.environ.get(ISA_ENV, "").strip()
    if forced:
        if forced in ("baseline", listed[0] if listed else "baseline"):
            return module
        if forced not in wider:
            raise ManifestError(
                f"{ISA_ENV}={forced}: {folder.name} has the variants "
                f"{', '.join(listed) or 'baseline'}; set {ISA_ENV} to one of them or to "
                "'baseline', or unset it to let opsdk pick"
            )
        if not _supported(forced, flags):
            raise ManifestError(f"{ISA_ENV}={forced}: this CPU lacks the {forced} instructions "
                                f"(see /proc/cpuinfo); unset {ISA_ENV} to let opsdk pick")
        wider = [forced]
    for level in reversed(wider):
        path = folder / ISA_DIR / level / module.name
        if _supported(level, flags) or forced:
            if not path.is_file():
                raise ManifestError(f"{folder.name}: the manifest lists the {level} kernel but "
                                    f"{path} is missing; reinstall the package")
            return path
    return module
