"""The serving environment: a venv with nvidia-pytriton (tritonserver), numpy<2 and opsdk.

nvidia-pytriton needs numpy < 2 and its Python-backend stub misreads numpy 2 arrays, so the
server and its models run in their own venv, built by ``.ci/serve_env.sh``. It is found at
``$OPSDK_SERVE_VENV``, else ``<checkout>/.venv-serve``, else ``<opsdk cache>/serve-venv``.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .._paths import PACKAGE_DIR
from ._errors import ServeEnvMissing

__all__ = ["ServeEnvironment", "locate_serve_env", "unsupported_platform", "candidate_venvs"]

_CHECKOUT = PACKAGE_DIR.parent
SETUP_HINT = "bash .ci/serve_env.sh"


def unsupported_platform() -> str | None:
    """Why nvidia-pytriton's tritonserver cannot run here, or None if it can.

    Example:
        >>> unsupported_platform() is None or isinstance(unsupported_platform(), str)
        True
    """
    system, machine = platform.system(), platform.machine()
    if system != "Linux" or machine not in ("x86_64", "aarch64"):
        return (
            f"nvidia-pytriton ships tritonserver for Linux x86_64/aarch64, not {system} {machine}"
        )
    libc, version = platform.libc_ver()
    if libc == "glibc" and version and tuple(map(int, version.split(".")[:2])) < (2, 35):
        return f"nvidia-pytriton's tritonserver needs glibc >= 2.35, this host has {version}"
    return None


def candidate_venvs() -> list[Path]:
    """Where a serving venv is looked for, in order."""
    env = os.environ.get("OPSDK_SERVE_VENV")
    if env:
        return [Path(env)]
    cands = []
    if (_CHECKOUT / "pyproject.toml").is_file():
        cands.append(_CHECKOUT / ".venv-serve")
    from ..build import cache_dir

    cands.append(cache_dir() / "serve-venv")
    return cands


@dataclass(frozen=True)
class ServeEnvironment:
    """Paths of one serving venv, as tritonserver's launch needs them."""

    venv: Path
    python: Path
    triton_root: Path  # site-packages/pytriton/tritonserver
    libs_dir: Path  # site-packages/nvidia_pytriton.libs
    python_version: str  # "3.11": picks the Python-backend stub
    libpython_dir: Path

    @property
    def tritonserver(self) -> Path:
        return self.triton_root / "bin" / "tritonserver"

    @property
    def stub(self) -> Path:
        return self.triton_root / "python_backend_stubs" / self.python_version / (
            "triton_python_backend_stub"
        )

    @property
    def python_backend(self) -> Path:
        return self.triton_root / "backends" / "python"


def locate_serve_env(venv: str | Path | None = None) -> ServeEnvironment:
    """Find and check the serving venv; raise :class:`ServeEnvMissing` saying how to make one.

    Example:
        >>> env = locate_serve_env()  # doctest: +SKIP
        >>> env.tritonserver.name  # doctest: +SKIP
        'tritonserver'
    """
    reason = unsupported_platform()
    if reason:
        raise ServeEnvMissing(reason)
    cands = [Path(venv)] if venv is not None else candidate_venvs()
    for cand in cands:
        if (cand / "bin" / "python").exists():
            return _inspect(cand.resolve())
    where = " or ".join(str(c) for c in cands)
    raise ServeEnvMissing(
        f"no serving environment (venv with nvidia-pytriton and numpy<2) at {where}; create it "
        f"with `{SETUP_HINT}` from the opsdk checkout (OPSDK_SERVE_VENV=<dir> picks the place)"
    )


def _inspect(venv: Path) -> ServeEnvironment:
    sites = sorted(venv.glob("lib/python3.*/site-packages/pytriton/tritonserver"))
    if not sites:
        raise ServeEnvMissing(
            f"{venv} has no nvidia-pytriton (no site-packages/pytriton/tritonserver); "
            f"rerun `{SETUP_HINT}` (or `{venv}/bin/pip install nvidia-pytriton 'numpy<2'`)"
        )
    root = sites[-1]
    version = root.parents[2].name.removeprefix("python")
    env = ServeEnvironment(
        venv=venv,
        python=venv / "bin" / "python",
        triton_root=root,
        libs_dir=root.parents[1] / "nvidia_pytriton.libs",
        python_version=version,
        libpython_dir=_libpython_dir(str(venv / "bin" / "python"), version),
    )
    for path, what in ((env.tritonserver, "tritonserver binary"), (env.stub, "stub")):
        if not path.is_file():
            raise ServeEnvMissing(
                f"{venv}: the {what} {path} is missing; nvidia-pytriton ships stubs for "
                "Python 3.8-3.13: rebuild the venv with a supported Python "
                f"(PYTHON=python3.11 {SETUP_HINT})"
            )
    return env


@functools.lru_cache(maxsize=8)
def _libpython_dir(python: str, version: str) -> Path:
    code = (
        "import sysconfig;"
        "print(sysconfig.get_config_var('LIBDIR'));print(sysconfig.get_config_var('INSTSONAME'))"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) < 2:
        raise ServeEnvMissing(f"{python} does not run: {out.stderr.strip()[-500:]}")
    libdir, soname = Path(lines[0]), lines[1]
    if not (libdir / soname).exists():
        raise ServeEnvMissing(
            f"the Python-backend stub links to libpython{version}, but {libdir / soname} does "
            "not exist: build the serving venv from a Python built with --enable-shared"
        )
    return libdir
