"""Build operator kernels with CMake + pybind11 into a content-addressed cache.

Layout of the cache (``$OPSDK_CACHE_DIR``, default the user cache dir)::

    entry/<config>/entry.o, runtime.o      the pybind11 entry point and the Python-free
                                           runtime (thread pool, invoke), built once
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
from .runtime._procs import dies_with_us

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

    from ._version import __version__

    cxx = _find_cxx()
    api = sorted(_paths.include_dir().rglob("*.h")) + [
        _paths.entry_source(),
        *_paths.entry_parts(),
        _paths.runtime_source(),
        _cmake_module(),
    ]
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
    entry_cxxflags: str | None = None,
) -> BuildResult:
    """Build (or find in the cache) the kernel module of the operator in ``folder``.

    A no-op when nothing changed; incremental (only changed files recompile) otherwise.
    ``entry_cxxflags`` picks the build of the entry point linked in (default ``cxxflags``):
    a sanitizer variant instruments only the operator's own sources.

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
    source_hash = _file_hash(srcs + hdrs)
    etc = tc if entry_cxxflags is None else toolchain(entry_cxxflags)
    extra = "" if etc is tc else etc.key
    key = hashlib.sha256((tc.key + source_hash + extra).encode()).hexdigest()[:20]
    root = cache_dir() / "ops" / name / tc.key
    module = root / "lib" / key / f"{MODULE_NAME}{sysconfig.get_config_var('EXT_SUFFIX')}"
    if not force and cache_problem(module, source_hash) is None:
        return BuildResult(module, key, False, time.perf_counter() - t0)
    _check_writable(root)
    with file_lock(root / ".lock", name, progress):
        problem = cache_problem(module, source_hash)  # another process may have built it
        if problem is None and not force:
            return BuildResult(module, key, False, time.perf_counter() - t0)
        _notice_rebuild(name, module, problem, progress)
        entry = _build_entry(etc, progress)
        _compile(name, folder, srcs, root, tc, entry, module, progress)
        _write_record(module, source_hash)
        _prune(root / "lib", keep=module.parent)
    return BuildResult(module, key, True, time.perf_counter() - t0)


def _check_writable(root: Path) -> None:
    """Raise a BuildError naming $OPSDK_CACHE_DIR when the cache cannot be written."""
    try:
        _paths.make_writable_dir(root)
    except OSError as e:
        where = f"OPSDK_CACHE_DIR={os.environ['OPSDK_CACHE_DIR']!r}" if os.environ.get(
            "OPSDK_CACHE_DIR") else f"the build cache {cache_dir()}"
        raise BuildError(
            f"{where} cannot be used: {e.strerror or e} ({e.filename}); point OPSDK_CACHE_DIR "
            "at a folder you can write, e.g. export OPSDK_CACHE_DIR=$HOME/.cache/opsdk"
        ) from None


def _cmake_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    return env


def _run(cmd: list[str], cwd: Path, log: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_cmake_env(),
                          **dies_with_us())
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
        f"-DOPSDK_RUNTIME_SOURCE={_paths.runtime_source()}",
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


def _build_entry(tc: Toolchain, progress: Progress | None) -> list[Path]:
    """The entry point's and the runtime's object files (compiled once per toolchain)."""
    root = cache_dir() / "entry" / tc.key
    objs = [root / "entry.o", root / "runtime.o"]
    if all(cache_problem(o, tc.key) is None for o in objs):
        return objs
    with file_lock(root / ".lock", "the opsdk entry point", progress):
        problems = [(o, cache_problem(o, tc.key)) for o in objs]
        if all(p is None for _, p in problems):
            return objs
        for o, p in problems:
            _notice_rebuild("the opsdk entry point", o, p, progress)
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
        for obj in objs:
            built = next(build.rglob(obj.with_suffix(".cpp.o").name))
            tmp = root / f"{obj.name}.{os.getpid()}"
            shutil.copyfile(built, tmp)
            os.replace(tmp, obj)
            _write_record(obj, tc.key)
    return objs


def _compile(
    name: str,
    folder: Path,
    srcs: list[Path],
    root: Path,
    tc: Toolchain,
    entry: list[Path],
    module: Path,
    progress: Progress | None,
) -> None:
    src_dir, build, log = root / "src", root / "build", root / "build.log"
    log.write_text("")
    body = (f"opsdk_add_operator({MODULE_NAME} SOURCES {_quoted(srcs)}\n"
            f"  ENTRY_OBJECTS {_quoted(entry)}\n"
            f'  OUTPUT_DIRECTORY "{build.as_posix()}")')
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


# ------------------------------------------------------------------ cache integrity
def _record(built: Path) -> Path:
    return built.with_name(built.name + ".record.json")


def _content_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_record(built: Path, source_hash: str) -> None:
    """Record what ``built`` is: its content hash and the source hash it was built from."""
    record = {"file": built.name, "sha256": _content_hash(built), "source_hash": source_hash}
    tmp = built.parent / f".{_record(built).name}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, _record(built))


def cache_problem(built: Path, source_hash: str) -> str | None:
    """None when the cached ``built`` file matches its record, else why it cannot be used.

    A missing file gives ``"missing"``; a truncated, garbage or swapped file, or one
    without a record (or a record of other sources), gives a reason to rebuild it.

    Example:
        >>> cache_problem(Path("/nonexistent/_opsdk_kernels.so"), "0" * 64)
        'missing'
    """
    try:
        if not built.exists():
            return "missing"
    except OSError:  # e.g. a name too long: the cache folder is checked before building
        return "missing"
    try:
        record = json.loads(_record(built).read_text())
    except (OSError, ValueError):
        return "has no integrity record"
    if not isinstance(record, dict) or record.get("source_hash") != source_hash:
        return "was recorded as built from other sources"
    try:
        if record.get("sha256") != _content_hash(built):
            return "does not match its recorded content hash (truncated, damaged or replaced)"
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    return None


def _notice_rebuild(what: str, built: Path, problem: str | None, progress: Progress | None) -> None:
    if problem is None or problem == "missing":
        return
    line = f"opsdk: the cached build of {what} ({built}) {problem}; rebuilding it"
    if progress:
        progress(line)
    else:
        print(line, file=sys.stderr)


# ------------------------------------------------------------------ sanitizer variant
SANITIZERS = ("address", "undefined")
_SANITIZER_RUNTIMES = {"address": ("libasan.so", "libclang_rt.asan-x86_64.so")}


def parse_sanitizers(text: str) -> tuple[str, ...]:
    """``"address,undefined"`` -> ``("address", "undefined")``; unknown names are refused.

    Example:
        >>> parse_sanitizers("undefined,address")
        ('address', 'undefined')
    """
    names = {n.strip() for n in text.split(",") if n.strip()}
    unknown = sorted(names - set(SANITIZERS))
    if unknown or not names:
        raise BuildError(
            f"--sanitize: unknown sanitizer(s) {', '.join(unknown) or repr(text)}; "
            f"expected a comma-separated subset of {', '.join(SANITIZERS)}"
        )
    return tuple(n for n in SANITIZERS if n in names)


def sanitizer_flags(sanitizers: tuple[str, ...]) -> str:
    """Compiler and linker flags of a sanitizer build (debug info for ``file:line``), after
    the ordinary build's flags other than its optimisation level (``-march=native`` and any
    ``OPSDK_CXXFLAGS``), so the kernel's code for this machine's ISA is the code checked,
    not a generic fallback (e.g. a kernel's ``#if __AVX512F__`` path).

    Example:
        >>> "-march=native" in sanitizer_flags(("address",))  # with the default flags
        True
    """
    isa = " ".join(f for f in _default_flags().split() if not f.startswith("-O"))
    return (
        f"{isa} -O1 -g -fno-omit-frame-pointer -fsanitize={','.join(sanitizers)} "
        "-fno-sanitize-recover=all"
    ).strip()


def build_sanitized(
    folder: str | os.PathLike[str],
    sanitizers: tuple[str, ...],
    *,
    name: str | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    """Build the sanitizer variant of an operator's module (its own cache key).

    The operator's sources are compiled with the sanitizers; the entry point linked in is
    the ordinary build (already in the cache), so the variant costs one kernel compile.

    Example:
        >>> build_sanitized("operators/gelu", ("address",)).module  # doctest: +SKIP
        PosixPath('.../ops/gelu/<config>/lib/<key>/_opsdk_kernels....so')
    """
    sanitizer_env(sanitizers)  # refuse early when the runtime library is missing
    # Reports name the sources' absolute paths (debug info), so the same sources in two
    # folders get two builds: the macro only keys the cache by the folder.
    where = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:12]
    flags = f"{sanitizer_flags(sanitizers)} -DOPSDK_SANITIZED_AT={where}"
    return build_operator(folder, name=name, cxxflags=flags, progress=progress,
                          entry_cxxflags=_default_flags())


def sanitizer_env(sanitizers: tuple[str, ...]) -> dict[str, str]:
    """Environment a process needs to load a sanitizer build into a plain Python.

    AddressSanitizer's runtime must be loaded first (``LD_PRELOAD``); leak checking is off
    because the interpreter itself never frees everything.
    """
    env = {
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=86",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=87",
    }
    if "address" in sanitizers:
        cxx = _find_cxx()
        for lib in _SANITIZER_RUNTIMES["address"]:
            out = subprocess.run([cxx, f"-print-file-name={lib}"], capture_output=True,
                                 text=True, check=False).stdout.strip()
            if out and out != lib and Path(out).exists():
                env["LD_PRELOAD"] = out
                return env
        raise BuildError(
            f"--sanitize address: {cxx} has no AddressSanitizer runtime (libasan); install it, "
            "e.g. 'apt-get install libasan8', or use --sanitize undefined"
        )
    return env
