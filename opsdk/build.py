"""Build operator kernels with CMake + pybind11 into a content-addressed cache.

Layout of the cache (``$OPSDK_CACHE_DIR``, default the user cache dir)::

    entry/<config>/entry.o                 the generic pybind11 entry point, built once
    ops/<snake>/<config>/build/            persistent CMake+Ninja tree (incremental)
    ops/<snake>/<config>/lib/<key>/        finished modules, one per source content key

``<config>`` hashes the compiler, flags, Python ABI, pybind11 and opsdk versions and the
C++ API sources; ``<key>`` adds the operator's source contents. A module is published by an
atomic rename, so a killed build never leaves a half-written module behind, and builds of
one operator are serialised by ``flock`` (released by the OS if the process dies).

Example:
    >>> from opsdk.build import build_operator
    >>> path = build_operator("operators/thresholded_relu")  # doctest: +SKIP
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import _paths
from .errors import BuildError

__all__ = ["build_operator", "cache_dir", "Toolchain", "toolchain", "MODULE_NAME", "BuildResult"]

MODULE_NAME = "_opsdk_kernels"
_SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx")
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".inc")
Progress = Callable[[str], None]


def cache_dir() -> Path:
    """The root of opsdk's build cache: ``$OPSDK_CACHE_DIR`` or the user cache dir.

    Example:
        >>> cache_dir().name in ("opsdk", os.environ.get("OPSDK_CACHE_DIR", "x").split("/")[-1])
        True
    """
    env = os.environ.get("OPSDK_CACHE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_cache_dir("opsdk"))


@dataclass(frozen=True)
class Toolchain:
    """Everything outside the operator's sources that changes the built module."""

    cxx: str
    cxx_version: str
    cxxflags: str
    generator: str
    python_abi: str
    pybind11_version: str
    opsdk_version: str
    api_hash: str

    @property
    def key(self) -> str:
        blob = json.dumps(self.__dict__, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _find_cxx() -> str:
    for cand in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if cand and shutil.which(cand):
            return str(shutil.which(cand))
    raise BuildError(
        "no C++ compiler found (tried $CXX, c++, g++, clang++); install one, e.g. "
        "'apt-get install g++', or set CXX"
    )


@lru_cache(maxsize=4)
def _compiler_version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


def _default_flags() -> str:
    return os.environ.get("OPSDK_CXXFLAGS", "-O3 -march=native")


def _file_hash(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def toolchain(cxxflags: str | None = None) -> Toolchain:
    """Describe the toolchain a build would use now (compiler, flags, ABI, versions)."""
    import pybind11

    from . import __version__

    cxx = _find_cxx()
    api = sorted(_paths.include_dir().rglob("*.h")) + [_paths.entry_source(), _cmake_module()]
    return Toolchain(
        cxx=cxx,
        cxx_version=_compiler_version(cxx),
        cxxflags=cxxflags if cxxflags is not None else _default_flags(),
        generator="Ninja" if shutil.which("ninja") else "Unix Makefiles",
        python_abi=f"{sys.implementation.cache_tag}{sysconfig.get_config_var('EXT_SUFFIX')}",
        pybind11_version=pybind11.__version__,
        opsdk_version=__version__,
        api_hash=_file_hash(api)[:16],
    )


@contextmanager
def file_lock(path: Path, what: str, progress: Progress | None = None) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``; the OS drops it if the holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                progress(f"waiting for another process building {what} ...")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def operator_sources(folder: Path) -> tuple[list[Path], list[Path]]:
    """The C++ sources and headers of an operator folder (kernel.cpp first)."""
    files = sorted(p for p in folder.iterdir() if p.is_file())
    srcs = [p for p in files if p.suffix in _SOURCE_SUFFIXES]
    hdrs = [p for p in files if p.suffix in _HEADER_SUFFIXES]
    if not srcs:
        raise BuildError(f"{folder}: no C++ source (expected kernel.cpp)")
    return srcs, hdrs


@dataclass(frozen=True)
class BuildResult:
    """Where a module is, and whether this call compiled anything."""

    module: Path
    key: str
    compiled: bool
    seconds: float


def build_operator(
    folder: str | os.PathLike[str],
    *,
    name: str | None = None,
    cxxflags: str | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> BuildResult:
    """Build (or find in the cache) the kernel module of the operator in ``folder``.

    A no-op when nothing changed; incremental (only changed files recompile) otherwise.

    Example:
        >>> res = build_operator("operators/thresholded_relu")  # doctest: +SKIP
        >>> res.module.name  # doctest: +SKIP
        '_opsdk_kernels.cpython-311-x86_64-linux-gnu.so'
    """
    t0 = time.perf_counter()
    folder = Path(folder).resolve()
    name = name or folder.name
    tc = toolchain(cxxflags)
    srcs, hdrs = operator_sources(folder)
    key = hashlib.sha256((tc.key + _file_hash(srcs + hdrs)).encode()).hexdigest()[:20]
    root = cache_dir() / "ops" / name / tc.key
    module = root / "lib" / key / f"{MODULE_NAME}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if module.exists() and not force:
        return BuildResult(module, key, False, time.perf_counter() - t0)
    with file_lock(root / ".lock", name, progress):
        if module.exists() and not force:  # another process built it while we waited
            return BuildResult(module, key, False, time.perf_counter() - t0)
        entry = _build_entry(tc, progress)
        _compile(name, folder, srcs, root, tc, entry, module, progress)
        _prune(root / "lib", keep=module.parent)
    return BuildResult(module, key, True, time.perf_counter() - t0)


def _cmake_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    return env


def _run(cmd: list[str], cwd: Path, log: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_cmake_env())
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
    return proc


def _configure(
    src: Path, build: Path, tc: Toolchain, log: Path
) -> subprocess.CompletedProcess[str]:
    import pybind11

    cmd = [
        "cmake",
        "-S",
        str(src),
        "-B",
        str(build),
        "-G",
        tc.generator,
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_CXX_COMPILER={tc.cxx}",
        f"-DCMAKE_CXX_FLAGS_RELEASE={tc.cxxflags}",
        f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
        f"-DPython_EXECUTABLE={sys.executable}",
        f"-DOPSDK_PYTHON_INCLUDE_DIR={sysconfig.get_paths()['include']}",
        f"-DOPSDK_PYTHON_EXT_SUFFIX={sysconfig.get_config_var('EXT_SUFFIX')}",
        f"-DOPSDK_INCLUDE_DIR={_paths.include_dir()}",
        f"-DOPSDK_ENTRY_SOURCE={_paths.entry_source()}",
    ]
    return _run(cmd, build, log)


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)


def _cmake_module() -> Path:
    """``OpsdkOperator.cmake``: the one description of a kernel module, shared with
    ``opsdk package`` and users' own CMake projects."""
    return _paths.data_dir("cmake") / "OpsdkOperator.cmake"


def _project(name: str, body: str) -> str:
    """A CMakeLists.txt of the cache: OpsdkOperator.cmake plus one call."""
    return (
        "# generated by opsdk; do not edit\n"
        "cmake_minimum_required(VERSION 3.18)\n"
        f"project(opsdk_{name} LANGUAGES CXX)\n"
        f'include("{_cmake_module().as_posix()}")\n'
        f"{body}\n"
    )


def _quoted(paths: list[Path]) -> str:
    return " ".join(f'"{p.as_posix()}"' for p in paths)


def _build_entry(tc: Toolchain, progress: Progress | None) -> Path:
    root = cache_dir() / "entry" / tc.key
    obj = root / "entry.o"
    if obj.exists():
        return obj
    with file_lock(root / ".lock", "the opsdk entry point", progress):
        if obj.exists():
            return obj
        if progress:
            progress("compiling the opsdk pybind11 entry point (once per toolchain) ...")
        src, build, log = root / "src", root / "build", root / "build.log"
        _write_if_changed(src / "CMakeLists.txt", _project("entry", "opsdk_add_entry(opsdk_entry)"))
        build.mkdir(parents=True, exist_ok=True)
        for step in (
            lambda: _configure(src, build, tc, log),
            lambda: _run(["cmake", "--build", str(build)], build, log),
        ):
            proc = step()
            if proc.returncode:
                raise BuildError(
                    f"building the opsdk entry point failed (log: {log}):\n"
                    + _tail(proc.stdout + proc.stderr)
                )
        built = next(build.rglob("entry.cpp.o"))
        tmp = root / f"entry.o.{os.getpid()}"
        shutil.copyfile(built, tmp)
        os.replace(tmp, obj)
    return obj


def _compile(
    name: str,
    folder: Path,
    srcs: list[Path],
    root: Path,
    tc: Toolchain,
    entry: Path,
    module: Path,
    progress: Progress | None,
) -> None:
    src_dir, build, log = root / "src", root / "build", root / "build.log"
    log.write_text("")
    body = (f"opsdk_add_operator({MODULE_NAME} SOURCES {_quoted(srcs)}\n"
            f'  ENTRY_OBJECT "{entry.as_posix()}" OUTPUT_DIRECTORY "{build.as_posix()}")')
    _write_if_changed(src_dir / "CMakeLists.txt", _project(name, body))
    for attempt in (1, 2):
        build.mkdir(parents=True, exist_ok=True)
        if progress:
            progress(f"building {name} ({', '.join(s.name for s in srcs)}) ...")
        proc = None
        if not (build / "CMakeCache.txt").exists():
            proc = _configure(src_dir, build, tc, log)
        if proc is None or proc.returncode == 0:
            proc = _run(["cmake", "--build", str(build)], build, log)
        if proc.returncode == 0:
            break
        output = proc.stdout + proc.stderr
        if _user_errors(output, folder) or attempt == 2:
            raise BuildError(_format_failure(name, folder, output, log))
        # Not the author's code: a stale or half-written tree (killed build). Start clean.
        shutil.rmtree(build, ignore_errors=True)
    built = next(p for p in build.glob(f"{MODULE_NAME}*") if p.suffix == ".so")
    module.parent.mkdir(parents=True, exist_ok=True)
    tmp = module.parent / f".{module.name}.{os.getpid()}.tmp"
    shutil.copyfile(built, tmp)
    os.replace(tmp, module)


_DIAG = re.compile(r"^(?P<path>/[^:\s]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?P<rest>.*)$")


def _user_errors(output: str, folder: Path) -> list[str]:
    """Compiler diagnostics in the author's files, with paths relative to the cwd."""
    found = []
    for line in output.splitlines():
        m = _DIAG.match(line.strip())
        if m and Path(m["path"]).resolve().parent == folder:
            shown = os.path.relpath(m["path"]) if _under_cwd(Path(m["path"])) else m["path"]
            col = f":{m['col']}" if m["col"] else ""
            found.append(f"{shown}:{m['line']}{col}: {m['rest']}")
    return found


def _under_cwd(p: Path) -> bool:
    try:
        p.resolve().relative_to(Path.cwd())
        return True
    except ValueError:
        return False


def _format_failure(name: str, folder: Path, output: str, log: Path) -> str:
    errs = _user_errors(output, folder)
    body = "\n".join(errs[:30]) if errs else _tail(output)
    return f"{name}: kernel build failed (full log: {log}):\n{body}"


def _tail(text: str, n: int = 40) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _prune(lib: Path, keep: Path, max_keep: int = 4) -> None:
    """Keep the newest few modules of an operator; older ones are unlinked (safe on Linux
    even while loaded)."""
    dirs = sorted((d for d in lib.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime)
    for d in dirs[:-max_keep]:
        if d != keep:
            shutil.rmtree(d, ignore_errors=True)
