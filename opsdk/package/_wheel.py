"""Run scikit-build-core on a generated project, then check the wheel it made.

The build runs the PEP 517 backend in a child process without build isolation (no
network: scikit-build-core, pybind11, cmake and ninja come from this environment), with
``SOURCE_DATE_EPOCH`` set so that the wheel is reproducible.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import BuildError, ManifestError, OpsdkError
from ._project import OpSource, PackageName

__all__ = ["DEFAULT_EPOCH", "build_wheel", "check_wheel", "wheel_contents"]

#: SOURCE_DATE_EPOCH when the caller sets none: 1980-01-01, the oldest a zip can hold.
DEFAULT_EPOCH = "315532800"

_FOREIGN_FLAGS = ("CMAKE_ARGS", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "CMAKE_GENERATOR",
                  "CMAKE_TOOLCHAIN_FILE")

_BACKEND = """\
import sys
from scikit_build_core.build import build_wheel
name = build_wheel(sys.argv[1], {"cmake.define.CMAKE_CXX_COMPILER": sys.argv[2]})
print("OPSDK-WHEEL:" + name)
"""


def _require_backend() -> None:
    missing = [m for m in ("scikit_build_core", "pybind11") if importlib.util.find_spec(m) is None]
    if missing:
        raise BuildError(
            f"opsdk package needs {' and '.join(missing)} in this environment; install them "
            "with: pip install 'opsdk[package]' (or pip install scikit-build-core pybind11)"
        )


def build_wheel(project: Path, out_dir: Path, *, jobs: int | None = None) -> Path:
    """Build the wheel of ``project`` into ``out_dir``; return its path.

    Example:
        >>> build_wheel(Path("/tmp/project"), Path("/tmp/out"))  # doctest: +SKIP
        PosixPath('/tmp/out/acme_ops-1.2.0-cp311-cp311-linux_x86_64.whl')
    """
    from ..build import _find_cxx

    _require_backend()
    env = dict(os.environ)
    env.setdefault("SOURCE_DATE_EPOCH", DEFAULT_EPOCH)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(jobs or os.cpu_count() or 2))
    # The project defines every flag a portable, reproducible kernel needs; flags from the
    # environment (CXXFLAGS=-march=native, CMAKE_ARGS, SKBUILD_*) would silently change it.
    for var in [v for v in env if v.startswith("SKBUILD_")] + list(_FOREIGN_FLAGS):
        env.pop(var, None)
    cmd = [sys.executable, "-c", _BACKEND, str(out_dir), _find_cxx()]
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True)
    log = project / "opsdk-package.log"
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


def check_wheel(wheel: Path, pkg: PackageName, ops: Sequence[OpSource]) -> None:
    """Check a freshly built wheel: every operator has its kernel, spec and the manifest;
    the entry point is declared; and each kernel's C++ registrations match its spec (the
    kernel is loaded here, so a mismatch fails the packaging, not a host later).
    """
    from ..runtime.cpu import Operator, load_module

    contents = wheel_contents(wheel)
    root = pkg.import_name
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    wanted = [f"{root}/__init__.py", f"{root}/opsdk_manifest.json"]
    for op in ops:
        folder = f"{root}/operators/{op.snake}"
        wanted += [f"{folder}/spec.py", f"{folder}/_opsdk_kernels{suffix}"]
    missing = [n for n in wanted if n not in contents]
    if missing:
        raise BuildError(f"{wheel.name} lacks {', '.join(missing)} (opsdk package bug?)")
    if f"{root}:operator_folders" not in _entry_points(contents):
        raise ManifestError(f"{wheel.name} declares no opsdk.operators entry point")
    with tempfile.TemporaryDirectory(prefix="opsdk-check-") as tmp:
        for op in ops:
            so = Path(tmp) / op.snake / f"_opsdk_kernels{suffix}"
            so.parent.mkdir()
            so.write_bytes(contents[f"{root}/operators/{op.snake}/_opsdk_kernels{suffix}"])
            try:
                Operator(op.spec, load_module(so), op.folder)
            except OpsdkError as e:
                raise type(e)(f"{e} -- while checking the packaged kernel of {op.spec.name}") from e
            except ImportError as e:
                raise BuildError(f"{op.spec.name}: the packaged kernel does not import: {e}") from e
