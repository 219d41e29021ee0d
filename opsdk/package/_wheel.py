"""Run scikit-build-core on a generated project, then check the wheel it made.

The build runs the PEP 517 backend in a child process without build isolation (no
network: scikit-build-core, pybind11, cmake and ninja come from this environment), with
``SOURCE_DATE_EPOCH`` set so that the wheel is reproducible.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._isa import ISA_DIR
from ..errors import BuildError, ManifestError, OpsdkError
from ..runtime._procs import dies_with_us
from ._project import OpSource, PackageName
from ._targets import TargetPython, WheelPlatform

__all__ = ["DEFAULT_EPOCH", "WheelTarget", "build_wheel", "check_wheel", "wheel_contents"]

#: SOURCE_DATE_EPOCH when the caller sets none: 1980-01-01, the oldest a zip can hold.
DEFAULT_EPOCH = "315532800"

_FOREIGN_FLAGS = ("CMAKE_ARGS", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "CMAKE_GENERATOR",
                  "CMAKE_TOOLCHAIN_FILE")

_BACKEND = """\
import json, sys
from scikit_build_core.build import build_wheel
name = build_wheel(sys.argv[1], json.loads(sys.argv[2]))
print("OPSDK-WHEEL:" + name)
"""


@dataclass(frozen=True)
class WheelTarget:
    """One wheel of a package: the platform and the CPython it is built for."""

    platform: WheelPlatform
    python: TargetPython
    cpu_baseline: str
    isa_variants: tuple[str, ...] = ()  # wider levels compiled besides the baseline

    @property
    def label(self) -> str:
        """``cp311-manylinux2014_aarch64``: names the build folder and the progress lines."""
        return f"{self.python.tag}-{self.platform.tags[-1]}"

    def config_settings(self, project: Path) -> dict[str, str | list[str]]:
        """scikit-build-core settings: compiler or zig toolchain, Python, wheel tags."""
        from ..build import _find_cxx
        from ._targets import zig_toolchain

        py = self.python
        settings: dict[str, str | list[str]] = {
            "build-dir": f"build/{self.label}",
            "wheel.tags": [f"{py.tag}-{py.tag}-{tag}" for tag in self.platform.tags],
            "cmake.define.OPSDK_PYTHON_INCLUDE_DIR": ";".join(py.include_dirs),
            "cmake.define.OPSDK_PYTHON_EXT_SUFFIX": py.ext_suffix,
        }
        if self.platform.manylinux:
            tc = zig_toolchain(self.platform.target, self.cpu_baseline,
                               project / "toolchain" / self.label)
            settings["cmake.define.CMAKE_TOOLCHAIN_FILE"] = str(tc)
        else:
            settings["cmake.define.CMAKE_CXX_COMPILER"] = _find_cxx()
        return settings


def _require_backend() -> None:
    missing = [m for m in ("scikit_build_core", "pybind11") if importlib.util.find_spec(m) is None]
    if missing:
        raise BuildError(
            f"opsdk package needs {' and '.join(missing)} in this environment; install them "
            "with: pip install 'opsdk[package]' (or pip install scikit-build-core pybind11)"
        )


def _use_ccache(env: dict[str, str]) -> None:
    """Compile through ccache when it is installed (``OPSDK_CCACHE=0`` turns it off): a
    wheel rebuilt from the same sources, for another package or in another folder, reuses
    every object (the wheel stays byte-identical). The zig wrapper is written anew for each
    build, so ccache identifies the compiler by its content, not its time stamp."""
    if env.get("OPSDK_CCACHE", "1") == "0" or shutil.which("ccache", path=env.get("PATH")) is None:
        return
    for lang in ("C", "CXX"):
        env.setdefault(f"CMAKE_{lang}_COMPILER_LAUNCHER", "ccache")
    env.setdefault("CCACHE_COMPILERCHECK", "content")
    # paths under the base folder are hashed relative to the build folder, so the same
    # sources in another folder hit; the compiler then prints relative paths in its
    # diagnostics, which _authors_paths maps back to the author's files
    env.setdefault("CCACHE_BASEDIR", "/")


def build_wheel(project: Path, out_dir: Path, wt: WheelTarget, *,
                jobs: int | None = None) -> Path:
    """Build the wheel of ``project`` for ``wt`` into ``out_dir``; return its path.

    Example:
        >>> build_wheel(Path("/tmp/project"), Path("/tmp/out"), wt)  # doctest: +SKIP
        PosixPath('/tmp/out/acme_ops-1.2.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17...')
    """
    _require_backend()
    env = dict(os.environ)
    env.setdefault("SOURCE_DATE_EPOCH", DEFAULT_EPOCH)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(jobs or os.cpu_count() or 2))
    # The project defines every flag a portable, reproducible kernel needs; flags from the
    # environment (CXXFLAGS=-march=native, CMAKE_ARGS, SKBUILD_*) would silently change it.
    for var in [v for v in env if v.startswith("SKBUILD_")] + list(_FOREIGN_FLAGS):
        env.pop(var, None)
    _use_ccache(env)
    cmd = [sys.executable, "-c", _BACKEND, str(out_dir), json.dumps(wt.config_settings(project))]
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True,
                          **dies_with_us())
    log = project / f"opsdk-package-{wt.label}.log"
    log.write_text(proc.stdout + proc.stderr)
    names = [ln[12:] for ln in proc.stdout.splitlines() if ln.startswith("OPSDK-WHEEL:")]
    if proc.returncode or not names:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
        raise BuildError(f"building the wheel failed (project kept in {project}, log {log}):\n"
                         f"{tail}")
    return out_dir / names[0]


def wheel_contents(wheel: Path) -> dict[str, bytes]:
    """``{archive name: bytes}`` of every file in a wheel (for checks and comparisons)."""
    with zipfile.ZipFile(wheel) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist() if not info.is_dir()}


def _entry_points(contents: dict[str, bytes]) -> str:
    for name, data in contents.items():
        if name.endswith(".dist-info/entry_points.txt"):
            return data.decode()
    return ""


def _check_binary(so: Path, op: OpSource, wt: WheelTarget) -> None:
    """The module is an ELF file of the target machine needing no newer glibc than the
    platform's floor (what makes the manylinux tag true, not just its name)."""
    from .._prebuilt import elf_machine, required_glibc, version_text, version_tuple

    t = wt.platform.target
    machine = elf_machine(so)
    if machine != t.elf_machine:
        raise BuildError(f"{op.spec.name}: the packaged kernel is for ELF machine {machine}, "
                         f"not {t.arch} ({t.elf_machine}) (opsdk package bug?)")
    needed = required_glibc(so)
    floor = wt.platform.glibc_floor
    if floor and needed > version_tuple(floor):
        raise BuildError(
            f"{op.spec.name}: the packaged kernel needs glibc {version_text(needed)}, above the "
            f"floor {floor} of {wt.platform.name}; the compiler did not keep to the target "
            "(opsdk package bug?)"
        )


def check_wheel(wheel: Path, pkg: PackageName, ops: Sequence[OpSource], wt: WheelTarget) -> None:
    """Check a freshly built wheel: every operator has its kernel, spec and the manifest;
    the entry point is declared; each kernel is an ELF file of the target machine within
    the platform's glibc floor; and, when this interpreter can load it, its C++
    registrations match its spec (so a mismatch fails the packaging, not a host later).
    """
    from ..runtime.cpu import Operator, load_module

    contents = wheel_contents(wheel)
    root = pkg.import_name
    suffix = wt.python.ext_suffix
    wanted = [f"{root}/__init__.py", f"{root}/opsdk_manifest.json"]
    for op in ops:
        folder = f"{root}/operators/{op.snake}"
        wanted += [f"{folder}/spec.py", f"{folder}/_opsdk_kernels{suffix}"]
        wanted += [f"{folder}/{ISA_DIR}/{lv}/_opsdk_kernels{suffix}" for lv in wt.isa_variants]
    missing = [n for n in wanted if n not in contents]
    if missing:
        raise BuildError(f"{wheel.name} lacks {', '.join(missing)} (opsdk package bug?)")
    if f"{root}:operator_folders" not in _entry_points(contents):
        raise ManifestError(f"{wheel.name} declares no opsdk.operators entry point")
    loadable = suffix == sysconfig.get_config_var("EXT_SUFFIX")
    with tempfile.TemporaryDirectory(prefix="opsdk-check-") as tmp:
        for op in ops:
            for sub in ["", *(f"{ISA_DIR}/{lv}/" for lv in wt.isa_variants)]:
                so = Path(tmp) / op.snake / sub / f"_opsdk_kernels{suffix}"
                so.parent.mkdir(parents=True)
                so.write_bytes(contents[f"{root}/operators/{op.snake}/{sub}_opsdk_kernels{suffix}"])
                _check_binary(so, op, wt)
            so = Path(tmp) / op.snake / f"_opsdk_kernels{suffix}"  # the baseline loads anywhere
            if not loadable:
                continue
            try:
                Operator(op.spec, load_module(so), op.folder)
            except OpsdkError as e:
                raise type(e)(f"{e} -- while checking the packaged kernel of {op.spec.name}") from e
            except ImportError as e:
                raise BuildError(f"{op.spec.name}: the packaged kernel does not import: {e}") from e
