"""The machine targets opsdk builds kernels for: one description shared by every cross build.

The aarch64 verification build (shipped kernels compiled for the NPU's AI CPU and run under
qemu), the manylinux wheels and the CPU-baseline checks all read this table, so a target's
triple, glibc floor, emulator and default ``-march`` are written once.

Example:
    >>> t = target("aarch64")
    >>> (t.gnu_triple, t.debian_arch, t.manylinux, t.zig_target)
    ('aarch64-linux-gnu', 'arm64', 'manylinux2014_aarch64', 'aarch64-linux-gnu.2.17')
    >>> target("arm64") is t
    True
"""

from __future__ import annotations

import platform
import shutil
from dataclasses import dataclass
from pathlib import Path

from .errors import CrossTargetError

__all__ = ["CrossTarget", "TARGETS", "target", "host_target", "cross_gxx", "qemu_command"]


@dataclass(frozen=True)
class CrossTarget:
    """One CPU architecture opsdk builds for.

    Attributes:
        arch: what ``uname -m`` prints on such a machine.
        gnu_triple: the GNU triple of Debian's cross toolchain (``<triple>-g++``).
        debian_arch: Debian's name of the architecture (arm64 packages for the sysroot).
        glibc_floor: the oldest glibc the wheels and kernels target (manylinux2014: 2.17).
        manylinux: the wheel platform tag of that floor.
        default_march: the portable ``-march`` of packaged kernels.
        qemu: the user-mode emulator that runs this target's binaries on another machine.
    """

    arch: str
    gnu_triple: str
    debian_arch: str
    glibc_floor: str
    manylinux: str
    default_march: str
    qemu: str

    @property
    def zig_target(self) -> str:
        """``zig c++ -target`` for this architecture at the glibc floor."""
        return f"{self.gnu_triple}.{self.glibc_floor}"

    @property
    def elf_machine(self) -> int:
        """``e_machine`` of this target's ELF files (62 x86_64, 183 aarch64)."""
        return _ELF_MACHINES[self.arch]

    @property
    def manylinux_tags(self) -> tuple[str, ...]:
        """The wheel platform tags of the glibc floor: PEP 600's and the legacy alias.

        Example:
            >>> target("x86_64").manylinux_tags
            ('manylinux_2_17_x86_64', 'manylinux2014_x86_64')
        """
        floor = self.glibc_floor.replace(".", "_")
        return (f"manylinux_{floor}_{self.arch}", self.manylinux)

    @property
    def sysroot(self) -> Path:
        """Where Debian's cross toolchain keeps the target's libc and libstdc++."""
        return Path("/usr") / self.gnu_triple


TARGETS: dict[str, CrossTarget] = {
    "x86_64": CrossTarget(
        "x86_64", "x86_64-linux-gnu", "amd64", "2.17", "manylinux2014_x86_64",
        "x86-64-v2", "qemu-x86_64-static",
    ),
    "aarch64": CrossTarget(
        "aarch64", "aarch64-linux-gnu", "arm64", "2.17", "manylinux2014_aarch64",
        "armv8-a", "qemu-aarch64-static",
    ),
}
_ELF_MACHINES = {"x86_64": 62, "aarch64": 183}
_ALIASES = {"amd64": "x86_64", "x86-64": "x86_64", "arm64": "aarch64"}


def target(name: str) -> CrossTarget:
    """The target named by an arch, a Debian arch or an alias (``arm64``, ``amd64``)."""
    key = _ALIASES.get(name, name)
    if key not in TARGETS:
        raise CrossTargetError(
            f"unknown machine target {name!r}; use one of {', '.join(sorted(TARGETS))}"
        )
    return TARGETS[key]


def host_target() -> CrossTarget:
    """The target of the machine opsdk runs on.

    Example:
        >>> host_target().arch == platform.machine() or platform.machine() not in TARGETS
        True
    """
    return target(platform.machine())


def cross_gxx(t: CrossTarget) -> str | None:
    """Debian's cross g++ for ``t`` (``aarch64-linux-gnu-g++``), or None if not installed."""
    return shutil.which(f"{t.gnu_triple}-g++")


def qemu_command(t: CrossTarget) -> list[str] | None:
    """The command prefix that runs a binary of ``t`` here: ``[]`` on the target itself,
    ``[qemu, -L, sysroot]`` through user-mode emulation, None if no emulator is installed."""
    if t.arch == platform.machine():
        return []
    qemu = shutil.which(t.qemu) or shutil.which(t.qemu.removesuffix("-static"))
    return [qemu, "-L", str(t.sysroot)] if qemu else None
