"""Folders of another machine's Debian packages (a sysroot), fetched once and cached.

Cross builds need the target's Python headers (``libpython3.11-dev:arm64``), and the
emulated test of an aarch64 wheel needs an aarch64 Python to run. Both come from Debian's
packages for the target architecture: ``apt-get download`` fetches the ``.deb`` files
(no root needed once the architecture is known to apt) and ``dpkg-deb -x`` unpacks them
into ``$OPSDK_CACHE_DIR/sysroots/<arch>-<key>/``; nothing is installed on the system.
The key covers the architecture and the package list, the folder appears by an atomic
rename only when complete, and concurrent builders wait on a lock.

Once, as root: ``dpkg --add-architecture arm64 && apt-get update`` (what
``scripts/setup.d/30-wheels.sh`` does).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .._cross import CrossTarget
from ..errors import SysrootError

__all__ = ["SysrootError", "debian_sysroot", "debian_python_headers"]

Progress = Callable[[str], None]


def _fix_for(t: CrossTarget) -> str:
    return (f"as root: `dpkg --add-architecture {t.debian_arch} && apt-get update` (Debian or "
            "Ubuntu), then run again")


def _download(t: CrossTarget, packages: Sequence[str], into: Path) -> list[Path]:
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise SysrootError(
            f"fetching {', '.join(packages)} for {t.arch} needs Debian's apt-get and dpkg-deb, "
            "which this host lacks; build on a Debian or Ubuntu host"
        )
    names = [p if ":" in p else f"{p}:{t.debian_arch}" for p in packages]
    proc = subprocess.run(["apt-get", "download", "-q", *names], cwd=into,
                          capture_output=True, text=True)
    if proc.returncode:
        raise SysrootError(
            f"apt-get download {' '.join(names)} failed: "
            f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}."
            f" Fix: {_fix_for(t)}"
        )
    return sorted(into.glob("*.deb"))


def debian_sysroot(
    t: CrossTarget, packages: Sequence[str], *, progress: Progress | None = None
) -> Path:
    """A cached folder holding the unpacked Debian ``packages`` of target ``t``.

    Packages are named without the architecture (``python3.11-minimal``); ``name:all``
    keeps an architecture-independent one as is.

    Example:
        >>> from opsdk._cross import target
        >>> root = debian_sysroot(target("aarch64"), ["libpython3.11-dev"])  # doctest: +SKIP
        >>> (root / "usr/include/python3.11/Python.h").is_file()  # doctest: +SKIP
        True
    """
    from ..build import cache_dir, file_lock

    key = hashlib.sha256("\n".join([t.debian_arch, *sorted(packages)]).encode()).hexdigest()
    root = cache_dir() / "sysroots" / f"{t.debian_arch}-{key[:16]}"
    if (root / ".complete").is_file():
        return root
    with file_lock(root.with_name(root.name + ".lock"), f"the {t.arch} sysroot", progress):
        if (root / ".complete").is_file():
            return root
        if progress:
            progress(f"fetching Debian {t.debian_arch} packages: {', '.join(packages)} ...")
        with tempfile.TemporaryDirectory(dir=root.parent, prefix=".tmp-") as tmp:
            debs, tree = Path(tmp) / "debs", Path(tmp) / "root"
            debs.mkdir()
            for deb in _download(t, packages, debs):
                subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
            (tree / ".complete").write_text(
                "".join(f"{d.name}\n" for d in sorted(debs.glob("*.deb"))))
            shutil.rmtree(root, ignore_errors=True)
            os.replace(tree, root)
    return root


def debian_python_headers(
    t: CrossTarget, version: str, *, progress: Progress | None = None
) -> tuple[Path, ...]:
    """The include folders of Debian's ``libpython<version>-dev`` for target ``t``.

    Debian puts ``Python.h`` in ``usr/include/python3.X`` and the target's ``pyconfig.h``
    in ``usr/include/<triple>/python3.X``, which the first includes through ``usr/include``.

    Example:
        >>> from opsdk._cross import target
        >>> debian_python_headers(target("aarch64"), "3.11")  # doctest: +SKIP
        (PosixPath('.../usr/include/python3.11'), PosixPath('.../usr/include'))
    """
    root = debian_sysroot(t, [f"libpython{version}-dev"], progress=progress)
    inc = root / "usr" / "include"
    if not (inc / f"python{version}" / "Python.h").is_file():
        raise SysrootError(f"libpython{version}-dev:{t.debian_arch} holds no Python.h ({root})")
    return (inc / f"python{version}", inc)
