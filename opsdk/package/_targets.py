"""What a wheel is built for: a platform (machine + glibc floor) and a CPython version.

``--platform`` names a wheel platform: ``manylinux2014_x86_64`` or ``manylinux2014_aarch64``
(glibc >= 2.17, built from any Linux host with the ``ziglang`` package's ``zig c++``), or
``native`` (this host's compiler, glibc and machine; tagged ``linux_<arch>``). The machine
facts (triple, glibc floor, zig target) come from :mod:`opsdk._cross`.

``--python`` names CPython versions; each gets its own wheel (pybind11 modules use the
full C API, not the stable ABI). The headers of a version are those of an interpreter of
this host (same machine: ``python3.12`` on ``PATH`` or under pyenv) or, for another
machine, Debian's ``libpython3.X-dev`` of that architecture (:mod:`._sysroot`).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._cross import TARGETS, CrossTarget, host_target, target
from .._generated import render
from ..errors import BuildError, SpecError

__all__ = [
    "WheelPlatform",
    "TargetPython",
    "parse_platforms",
    "parse_pythons",
    "target_python",
    "zig_toolchain",
    "MIN_PYTHON",
]

Progress = Callable[[str], None]

#: The oldest CPython opsdk itself runs on, so the oldest an operator wheel can serve.
MIN_PYTHON = (3, 10)
_MANYLINUX = re.compile(r"^manylinux(?:2014|_2_17)_(?P<arch>[a-z0-9_]+)$")


@dataclass(frozen=True)
class WheelPlatform:
    """One ``--platform``: the machine, and whether the kernels keep to a glibc floor."""

    name: str
    target: CrossTarget
    manylinux: bool

    @property
    def tags(self) -> tuple[str, ...]:
        """Wheel platform tags: ``manylinux_2_17_x86_64`` + ``manylinux2014_x86_64``, or
        ``linux_x86_64`` for a native build."""
        if self.manylinux:
            return self.target.manylinux_tags
        return (re.sub(r"[-.]", "_", sysconfig.get_platform()),)

    @property
    def glibc_floor(self) -> str:
        """The oldest glibc the kernels run on: the target's floor, or this host's glibc."""
        return self.target.glibc_floor if self.manylinux else platform.libc_ver()[1]


def parse_platforms(names: Sequence[str] | None) -> list[WheelPlatform]:
    """``--platform`` values -> platforms (default: manylinux2014 of this machine).

    Example:
        >>> [p.tags[-1] for p in parse_platforms(["manylinux2014_aarch64", "native"])]
        ... # doctest: +SKIP
        ['manylinux2014_aarch64', 'linux_x86_64']
    """
    host = host_target()
    out: list[WheelPlatform] = []
    for name in names or [host.manylinux]:
        m = _MANYLINUX.match(name)
        if name == "native":
            plat = WheelPlatform("native", host, False)
        elif m and m["arch"] in TARGETS:
            plat = WheelPlatform(name, target(m["arch"]), True)
        else:
            raise SpecError(
                f"--platform {name!r}: use manylinux2014_x86_64, manylinux2014_aarch64 "
                "(glibc >= 2.17, built here with zig) or native (this host only)"
            )
        if plat.tags in [p.tags for p in out]:
            raise SpecError(f"--platform {name!r} is given twice")
        out.append(plat)
    return out


@dataclass(frozen=True)
class TargetPython:
    """The CPython a module is built for: its headers and its module file suffix."""

    version: str
    include_dirs: tuple[str, ...]
    ext_suffix: str
    source: str  # where the headers come from (no path: it goes into the manifest)
    executable: str = ""  # an interpreter of this version on this host, if the headers are its

    @property
    def tag(self) -> str:
        """``cp311``: the wheel's interpreter and ABI tag."""
        return "cp" + self.version.replace(".", "")

    @property
    def cache_tag(self) -> str:
        return "cpython-" + self.version.replace(".", "")


def parse_pythons(text: str | Sequence[str] | None) -> list[str]:
    """``--python 3.10,3.11`` -> ``["3.10", "3.11"]`` (default: this interpreter's).

    Example:
        >>> parse_pythons("3.12,3.10")
        ['3.10', '3.12']
    """
    if text is None:
        return [f"{sys.version_info[0]}.{sys.version_info[1]}"]
    items = text.split(",") if isinstance(text, str) else [x for t in text for x in t.split(",")]
    if not any(i.strip() for i in items):
        raise SpecError(f"--python {text!r}: name at least one CPython version, e.g. 3.11 "
                        "(leave the option out for this interpreter's)")
    found = set()
    for item in (i.strip() for i in items if i.strip()):
        m = re.fullmatch(r"(?:cp|python)?(\d)\.?(\d+)", item)
        if not m:
            raise SpecError(f"--python {item!r}: name CPython versions like 3.10,3.11")
        if (int(m[1]), int(m[2])) < MIN_PYTHON:
            raise SpecError(
                f"--python {item}: opsdk runs on Python >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]}, "
                "so an operator wheel for an older Python could not be used; drop it"
            )
        found.add((int(m[1]), int(m[2])))
    return [f"{a}.{b}" for a, b in sorted(found)]


_ASK = ("import json, platform, sys, sysconfig; print(json.dumps([sysconfig.get_paths()"
        "['include'], sysconfig.get_config_var('EXT_SUFFIX'), sys.implementation.name, "
        "platform.python_version()]))")


def _interpreters(version: str) -> list[str]:
    """Interpreters of a version on this host: the running one, PATH, pyenv."""
    if version == f"{sys.version_info[0]}.{sys.version_info[1]}":
        return [sys.executable]
    found = [shutil.which(f"python{version}") or ""]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found += [str(p) for p in sorted(pyenv.glob(f"{version}.*/bin/python{version}"))[::-1]]
    return [f for f in found if f]


def _host_python(version: str) -> TargetPython:
    for exe in _interpreters(version):
        proc = subprocess.run([exe, "-c", _ASK], capture_output=True, text=True)
        if proc.returncode:
            continue
        include, suffix, impl, full = json.loads(proc.stdout)
        if impl == "cpython" and (Path(include) / "Python.h").is_file():
            return TargetPython(version, (include,), suffix, f"CPython {full} of the build host",
                                exe)
    raise BuildError(
        f"--python {version}: no CPython {version} with headers on this host (looked for "
        f"python{version} on PATH and under pyenv); install it (e.g. `apt-get install "
        f"python{version}-dev`, `pyenv install {version}`) or drop it from --python"
    )


def target_python(plat: WheelPlatform, version: str,
                  progress: Progress | None = None) -> TargetPython:
    """The headers and module suffix of CPython ``version`` for ``plat``'s machine.

    Example:
        >>> tp = target_python(parse_platforms(["manylinux2014_aarch64"])[0], "3.11")
        ... # doctest: +SKIP
        >>> tp.ext_suffix  # doctest: +SKIP
        '.cpython-311-aarch64-linux-gnu.so'
    """
    if plat.target == host_target():
        return _host_python(version)
    from ._sysroot import SysrootError, debian_python_headers

    t = plat.target
    try:
        dirs = debian_python_headers(t, version, progress=progress)
    except SysrootError as e:
        raise BuildError(
            f"--python {version} for {plat.name}: the {t.arch} headers of Python {version} come "
            f"from Debian's libpython{version}-dev:{t.debian_arch}, which cannot be had here "
            f"({e}). Debian's release names one Python 3 version per architecture (Debian 12: "
            "3.11); build other versions on a host of that machine"
        ) from e
    suffix = f".cpython-{version.replace('.', '')}-{t.gnu_triple}.so"
    return TargetPython(version, tuple(str(d) for d in dirs), suffix,
                        f"Debian libpython{version}-dev:{t.debian_arch}")


#: ``-march`` levels -> zig's ``-mcpu`` names (zig takes CPU models, not -march).
_ZIG_CPUS = {"x86-64": "x86_64", "x86-64-v2": "x86_64_v2", "x86-64-v3": "x86_64_v3",
             "x86-64-v4": "x86_64_v4", "armv8-a": "generic"}


def zig_available() -> str | None:
    """None when the ``ziglang`` package is importable, else how to get it."""
    import importlib.util

    if importlib.util.find_spec("ziglang") is None:
        return ("manylinux wheels are compiled with zig c++ from the ziglang package, which is "
                "not installed: pip install 'opsdk[package]' (or pip install ziglang), or build "
                "for this host only with --platform native")
    return None


def zig_cpu(baseline: str) -> str:
    """zig's ``-mcpu`` for a ``-march`` level (``""``: zig's baseline of the target).

    Example:
        >>> zig_cpu("x86-64-v2"), zig_cpu("armv8-a")
        ('x86_64_v2', 'generic')
    """
    if baseline == "":
        return "baseline"
    if baseline not in _ZIG_CPUS:
        raise SpecError(f"--cpu-baseline {baseline}: manylinux builds (zig) know "
                        f"{', '.join(_ZIG_CPUS)}; pick one of them")
    return _ZIG_CPUS[baseline]


def zig_toolchain(t: CrossTarget, baseline: str, folder: Path) -> Path:
    """Write ``zig c++ -target <t.zig_target> -mcpu=...`` wrappers and a CMake toolchain
    file into ``folder``; return the toolchain file. zig's caches go to
    ``$OPSDK_CACHE_DIR/zig``.

    Example:
        >>> zig_toolchain(target("aarch64"), "armv8-a", Path("/tmp/tc")).name
        ... # doctest: +SKIP
        'toolchain.cmake'
    """
    from ..build import cache_dir

    missing = zig_available()
    if missing:
        raise BuildError(missing)
    folder.mkdir(parents=True, exist_ok=True)
    cpu = zig_cpu(baseline)
    tools = {"c++": f"c++ -target {t.zig_target} -mcpu={cpu}", "ar": "ar", "ranlib": "ranlib"}
    for name, tool in tools.items():
        path = folder / name
        path.write_text(render("package/templates/zig_wrapper.sh.jinja", target=t.zig_target,
                               floor=t.glibc_floor, tool=tool, python=sys.executable,
                               cache=cache_dir() / "zig"))
        path.chmod(0o755)
    toolchain = folder / "toolchain.cmake"
    toolchain.write_text(render("package/templates/toolchain.cmake.jinja", arch=t.arch,
                                folder=folder.as_posix(), baseline=baseline))
    return toolchain


def zig_version() -> str:
    """``zig 0.14.0`` (the compiler manylinux kernels are built with)."""
    proc = subprocess.run([sys.executable, "-m", "ziglang", "version"], capture_output=True,
                          text=True)
    return f"zig {proc.stdout.strip()}" if proc.returncode == 0 else "zig (unknown version)"
