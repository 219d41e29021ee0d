"""Run another machine's Python here: Debian's CPython for the target under qemu-user.

An aarch64 operator wheel built on an x86 host is proven by running it: Debian's arm64
``python3.X`` (and the libraries it needs) is unpacked into a cached sysroot
(:func:`._sysroot.debian_sysroot`) and run by ``qemu-aarch64-static -L <sysroot>``. In a
venv of that interpreter, pip (the host's pure-Python pip, run by the emulated
interpreter) installs the wheels, so the tag check is the target's own; then the
operators run there.

Example:
    >>> from opsdk._cross import target
    >>> py = emulated_python(target("aarch64"))  # doctest: +SKIP
    >>> py.run(["-c", "import platform; print(platform.machine())"]).stdout  # doctest: +SKIP
    'aarch64\\n'
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._cross import CrossTarget, qemu_command
from ._sysroot import SysrootError, debian_sysroot

__all__ = ["EmulatedPython", "emulated_python"]

Progress = Callable[[str], None]

#: Debian 12's packages that make a working ``python3.X`` (without the optional modules
#: that need ncurses, readline, sqlite, Tk or gdbm).
_RUNTIME = ("libc6", "libgcc-s1", "libstdc++6", "zlib1g", "libexpat1", "libffi8", "libbz2-1.0",
            "liblzma5", "libssl3", "libuuid1", "libcrypt1")


def _python_packages(version: str) -> list[str]:
    return [*_RUNTIME, f"libpython{version}-minimal", f"libpython{version}-stdlib",
            f"python{version}-minimal"]


@dataclass(frozen=True)
class EmulatedPython:
    """A CPython of ``target`` that runs here under user-mode emulation."""

    target: CrossTarget
    version: str
    sysroot: Path
    qemu: tuple[str, ...]  # the emulator and its -L option
    executable: Path  # the interpreter (or a venv's) inside or beside the sysroot

    def run(self, args: Sequence[str | os.PathLike[str]], *, env: Mapping[str, str] | None = None,
            cwd: str | os.PathLike[str] | None = None,
            timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        """Run the interpreter with ``args`` (never raises on a non-zero exit). Without
        ``env`` it gets a minimal environment: none of this host's Python variables."""
        cmd = [*self.qemu, str(self.executable), *map(str, args)]
        if env is None:
            env = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "LC_ALL", "TMPDIR")}
            env["PATH"] = "/usr/bin:/bin"
        return subprocess.run(cmd, env=dict(env), cwd=cwd, capture_output=True, text=True,
                              timeout=timeout)

    def venv(self, folder: Path) -> EmulatedPython:
        """A fresh venv of this interpreter (without pip: :meth:`pip` brings one)."""
        proc = self.run(["-m", "venv", "--without-pip", folder])
        if proc.returncode:
            raise SysrootError(f"creating a venv with the emulated {self.target.arch} Python "
                               f"failed:\n{proc.stderr.strip()}")
        return EmulatedPython(self.target, self.version, self.sysroot, self.qemu,
                              folder / "bin" / f"python{self.version}")

    def pip(self, args: Sequence[str | os.PathLike[str]], *, env: Mapping[str, str],
            cwd: Path) -> subprocess.CompletedProcess[str]:
        """Run pip (this host's pip package, pure Python) with the emulated interpreter."""
        shim = cwd / ".opsdk-pip"
        shim.mkdir(exist_ok=True)
        if not (shim / "pip").exists():
            (shim / "pip").symlink_to(pip_folder())
        return self.run(["-m", "pip", "--disable-pip-version-check", *args],
                        env={**env, "PYTHONPATH": str(shim)}, cwd=cwd)


def pip_folder() -> Path:
    """This host's pip package folder, from its metadata, not by importing pip: setuptools'
    distutils hack intercepts ``import pip`` and warns when distutils was imported before
    (an error under a strict warning filter, as in the full test suite).

    Example:
        >>> pip_folder().name
        'pip'
    """
    from importlib.metadata import distribution

    return Path(str(distribution("pip").locate_file("pip")))


def emulated_python(t: CrossTarget, version: str = "3.11", *,
                    progress: Progress | None = None) -> EmulatedPython:
    """Debian's CPython ``version`` for ``t`` in a cached sysroot, run through qemu.

    Raises :class:`~opsdk.package.SysrootError` with the reason when the emulator or the
    packages cannot be had.
    """
    qemu = qemu_command(t)
    if qemu is None:
        raise SysrootError(f"no {t.qemu} to run {t.arch} programs here; install Debian's "
                           "qemu-user-static (scripts/setup.d/20-cross.sh)")
    root = debian_sysroot(t, _python_packages(version), progress=progress)
    exe = root / "usr" / "bin" / f"python{version}"
    if not exe.is_file():
        raise SysrootError(f"{root} holds no usr/bin/python{version}")
    cmd = (*qemu[:-1], str(root)) if qemu else ()  # -L points at this sysroot
    return EmulatedPython(t, version, root, tuple(cmd), exe)
