"""The manifest of an operator wheel: what it was built for, checked before a kernel loads.

An operator package built by ``opsdk package`` carries ``<package>/opsdk_manifest.json``:
the opsdk version, the Python ABI, the platform, the CPU baseline, the ONNX / ONNX Runtime
versions and CANN SoC targets it was built against, and per-operator source hashes. Before
a prebuilt kernel is imported, :func:`verify_prebuilt` compares the manifest with the host
and raises :class:`~opsdk.errors.ManifestError` naming every mismatch and the fix, instead
of letting the import fail with an undefined symbol or an illegal instruction.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
import sysconfig
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ._isa import CPU_LEVELS, ISA_ENV, pick_variant
from .errors import ManifestError

__all__ = [
    "MANIFEST_NAME",
    "FORMAT",
    "CPU_LEVELS",
    "host_environment",
    "find_manifest",
    "read_manifest",
    "verify_prebuilt",
    "source_hashes",
    "required_glibc",
    "elf_machine",
    "version_tuple",
    "version_text",
]

MANIFEST_NAME = "opsdk_manifest.json"
FORMAT = 1

#: The files of an operator folder whose hashes identify the sources a kernel was built from.
_HASHED_SUFFIXES = (".py", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh", ".inc")


def host_environment() -> dict[str, Any]:
    """What a prebuilt kernel must match on this host (Python ABI, platform, libc).

    Example:
        >>> env = host_environment()
        >>> env["python"]["ext_suffix"] == sysconfig.get_config_var("EXT_SUFFIX")
        True
    """
    libc, libc_version = platform.libc_ver()
    return {
        "python": {
            "implementation": sys.implementation.name,
            "version": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "cache_tag": sys.implementation.cache_tag,
            "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        },
        "platform": {
            "system": platform.system(),
            "machine": platform.machine(),
            "sysconfig": sysconfig.get_platform(),
            "libc": libc,
            "libc_version": libc_version,
        },
    }


def source_hashes(folder: Path, names: Iterable[str] | None = None) -> dict[str, str]:
    """``{file name: sha256}`` of an operator folder's Python and C++ sources (sorted).

    Example:
        >>> sorted(source_hashes(Path("operators/thresholded_relu")))  # doctest: +SKIP
        ['kernel.cpp', 'reference.py', 'spec.py']
    """
    if names is None:
        names = (
            p.name
            for p in folder.iterdir()
            if p.is_file() and p.suffix in _HASHED_SUFFIXES and not p.name.startswith("test_")
        )
    return {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in sorted(names)}


def find_manifest(folder: Path) -> tuple[Path, str] | None:
    """The manifest governing an operator folder and the folder's key in it, if any.

    ``opsdk package`` lays a package out as ``<pkg>/opsdk_manifest.json`` and
    ``<pkg>/operators/<snake>/``; the key is ``operators/<snake>``.
    """
    for root in (folder.parent, folder.parent.parent):
        candidate = root / MANIFEST_NAME
        if candidate.is_file():
            return candidate, folder.relative_to(root).as_posix()
    return None


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a manifest file; a broken one is a :class:`ManifestError` naming the file.

    Example:
        >>> read_manifest("site-packages/acme_ops/opsdk_manifest.json")  # doctest: +SKIP
        {'format': 1, 'package': {'name': 'acme-ops', ...}, ...}
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ManifestError(
            f"{path}: unreadable opsdk manifest ({e}); reinstall the operator package"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise ManifestError(
            f"{path}: manifest format {found!r}, this opsdk reads format {FORMAT}; "
            "rebuild the package with this opsdk (opsdk package ...)"
        )
    return data


@lru_cache(maxsize=256)
def _glibc_needed(path: str, mtime_ns: int, size: int) -> tuple[int, ...]:
    versions = re.findall(rb"GLIBC_(\d+)\.(\d+)(?:\.(\d+))?\x00", Path(path).read_bytes())
    return max((tuple(int(x or 0) for x in v) for v in versions), default=())


def required_glibc(module: Path) -> tuple[int, ...]:
    """The newest ``GLIBC_x.y`` symbol version a shared object references (``()`` if none).

    Example:
        >>> required_glibc(Path("_opsdk_kernels.cpython-311-x86_64-linux-gnu.so"))  # doctest: +SKIP
        (2, 34, 0)
    """
    st = module.stat()
    return _glibc_needed(str(module), st.st_mtime_ns, st.st_size)


def version_tuple(text: str) -> tuple[int, ...]:
    """``"2.36"`` -> ``(2, 36, 0)``: always three numbers, so tuples compare right.

    Example:
        >>> version_tuple("2.17") < version_tuple("2.36")
        True
    """
    nums = [int(x) for x in re.findall(r"\d+", text)[:3]]
    return tuple(nums + [0] * (3 - len(nums)))


def version_text(version: tuple[int, ...]) -> str:
    """``(2, 17, 0)`` -> ``"2.17"``."""
    return ".".join(str(x) for x in (version[:2] if version[2:] in ((0,), ()) else version))


def elf_machine(module: Path) -> int:
    """The ``e_machine`` of an ELF file (62 x86_64, 183 aarch64; 0 if not ELF).

    Example:
        >>> elf_machine(Path(sys.executable)) in (62, 183)  # doctest: +SKIP
        True
    """
    with open(module, "rb") as fh:
        head = fh.read(20)
    if head[:4] != b"\x7fELF" or len(head) < 20:
        return 0
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


@lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str] | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return None


def _check_python(man: dict[str, Any], host: dict[str, Any]) -> list[str]:
    want, have = man.get("python", {}), host["python"]
    if want.get("ext_suffix") != have["ext_suffix"]:
        return [
            f"built for Python {want.get('cache_tag')} (modules *{want.get('ext_suffix')}), "
            f"this is {have['cache_tag']} (*{have['ext_suffix']})"
        ]
    return []


def _check_platform(man: dict[str, Any], host: dict[str, Any]) -> list[str]:
    want, have = man.get("platform", {}), host["platform"]
    problems = []
    if (want.get("system"), want.get("machine")) != (have["system"], have["machine"]):
        problems.append(
            f"built for {want.get('system')} {want.get('machine')}, "
            f"this host is {have['system']} {have['machine']}"
        )
    return problems


def _check_opsdk(man: dict[str, Any]) -> list[str]:
    from ._version import __version__

    built = str(man.get("opsdk_version", "?"))
    if version_tuple(built)[:2] != version_tuple(__version__)[:2]:
        return [f"built with opsdk {built}, this is opsdk {__version__} (major.minor differ)"]
    return []


def _check_cpu(man: dict[str, Any]) -> list[str]:
    level = man.get("cpu_baseline") or ""
    needed = CPU_LEVELS.get(level, ())
    have = _cpu_flags()
    if not needed or have is None:
        return []
    missing = sorted(set(needed) - have)
    if missing:
        return [f"compiled for CPU baseline {level}, this CPU lacks {', '.join(missing)}"]
    return []


def _check_glibc(module: Path) -> list[str]:
    libc, version = platform.libc_ver()
    needed = required_glibc(module)
    if libc != "glibc" or not needed or not version:
        return []
    if needed > version_tuple(version):
        return [f"{module.name} needs glibc {version_text(needed)}, this host has glibc {version}"]
    return []


def _check_glibc_floor(man: dict[str, Any]) -> list[str]:
    """The wheel's glibc floor (manylinux2014: 2.17) against this host's glibc."""
    plat = man.get("platform", {})
    floor = plat.get("glibc_floor")
    libc, version = platform.libc_ver()
    if not floor or libc != "glibc" or not version:
        return []
    if version_tuple(version) < version_tuple(floor):
        return [f"built for glibc >= {floor} ({plat.get('tag', '?')}), this host has glibc "
                f"{version}"]
    return []


def _check_sources(man: dict[str, Any], key: str, folder: Path) -> list[str]:
    op = man.get("operators", {}).get(key)
    if op is None:
        return [f"the manifest does not list {key}"]
    recorded: dict[str, str] = op.get("sources", {})
    if "spec.py" not in recorded or not (folder / "spec.py").is_file():
        return []
    if source_hashes(folder, ["spec.py"])["spec.py"] != recorded["spec.py"]:
        return [f"{folder / 'spec.py'} was modified after packaging (the kernel was built "
                "from another spec)"]
    return []


def _pick_module(folder: Path, what: str) -> Path:
    """The module of this interpreter's ABI among the folder's ``_opsdk_kernels*.so``."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    mine = folder / f"_opsdk_kernels{suffix}"
    if mine.is_file():
        return mine
    found = sorted(p.name for p in folder.glob("_opsdk_kernels*.so"))
    if not found:
        raise ManifestError(
            f"{what}: {folder} holds no prebuilt kernel (_opsdk_kernels{suffix}), and an "
            "installed operator package is never compiled; reinstall the package"
        )
    raise ManifestError(
        f"{what}: the prebuilt kernel {', '.join(found)} in {folder} is not for this Python "
        f"(expected _opsdk_kernels{suffix}); install the package built for "
        f"{sys.implementation.cache_tag}, or rebuild it here with `opsdk package`"
    )


_VERIFIED: dict[tuple[str, int, int, str], Path] = {}


def verify_prebuilt(folder: Path, module: Path | None = None, *, package: str = "") -> Path:
    """Check a prebuilt kernel against its manifest and this host; return the module to load.

    ``module`` is the registry's pick (unused: the module matching this interpreter is
    chosen; an operator from a wheel without one is an error, it is never compiled). Of a
    wheel built with ISA variants, the widest one this CPU supports is returned
    (``OPSDK_ISA=<level>`` or ``baseline`` forces one; see :mod:`opsdk._isa`).
    Raises :class:`ManifestError` listing every mismatch (opsdk major/minor, Python ABI,
    platform, CPU baseline, glibc, a modified spec.py) with the fix. A folder without a
    manifest (a module built by the user's own CMake project) gets the checks that need
    none: the Python ABI of the file name and the glibc it needs.

    Example:
        >>> verify_prebuilt(folder, folder / "_opsdk_kernels.cpython-311-x86_64-linux-gnu.so")
        ... # doctest: +SKIP
        PosixPath('.../_opsdk_kernels.cpython-311-x86_64-linux-gnu.so')
    """
    folder = Path(folder)
    what = f"{package} ({folder.name})" if package else folder.name
    chosen = _pick_module(folder, what)
    st = chosen.stat()
    key = (str(chosen), st.st_mtime_ns, st.st_size, os.environ.get(ISA_ENV, ""))
    if key in _VERIFIED:
        return _VERIFIED[key]
    found = find_manifest(folder)
    problems = _check_glibc(chosen)
    fix = ("rebuild it for an older glibc (`opsdk package --platform manylinux2014_<arch>` "
           "serves glibc 2.17 and newer)")
    if found is not None:
        path, rel = found
        man = read_manifest(path)
        pkg = man.get("package", {})
        what = f"{pkg.get('name', package or '?')} {pkg.get('version', '')} ({folder.name})"
        host = host_environment()
        problems = (
            _check_opsdk(man)
            + _check_python(man, host)
            + _check_platform(man, host)
            + _check_cpu(man)
            + (_check_glibc_floor(man) or problems)
            + _check_sources(man, rel, folder)
        )
        fix = (
            "install a build of this package made for this environment (`opsdk package "
            "--platform manylinux2014_<arch>` serves glibc 2.17 and newer), or rebuild it here "
            f"with `opsdk package` (manifest: {path})"
        )
    if problems:
        raise ManifestError(f"{what}: prebuilt kernel unusable here: " + "; ".join(problems)
                            + f". Fix: {fix}")
    if found is not None:
        chosen = pick_variant(folder, chosen, man, _cpu_flags())
    _VERIFIED[key] = chosen
    return chosen
