"""The cross executor: an operator's kernel built for another machine and run under emulation.

The NPU's AI CPU is AArch64. This executor compiles the operator's own kernel.cpp with
opsdk's headers, the Python-free runtime (csrc/runtime.cpp) and a small harness main
(csrc/harness.cpp) using Debian's cross toolchain (``aarch64-linux-gnu-g++``), and runs the
result with ``qemu-aarch64-static``: no Python on the target side, the same C++ path
(``opsdk::invoke``) the AI CPU adapter calls. :meth:`CrossOperator.run_many` sends a whole
batch of calls through one emulator process; :meth:`CrossOperator.run` is one call.

Builds are cached under ``<cache>/cross/<arch>/<toolchain>/``: runtime and harness objects
once per toolchain, one linked harness per operator source content.

This checks that the kernel compiles and computes correctly for AArch64; it is not the
AI CPU (on an Ascend host the AI CPU library is built by the toolkit's own toolchain).

Example:
    >>> from opsdk.runtime.cross import cross_available
    >>> ok, reason = cross_available("aarch64")
    >>> ok or "aarch64" in reason
    True
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .. import _cross, _paths
from ..build import Progress, cache_dir, file_lock, operator_sources
from ..dtypes import dtype_name
from ..errors import BuildError, DeviceUnavailable, KernelError, SpecError
from ..spec import OpSpec, TensorType
from ._harness_io import Call, read_results, write_cases
from ._procs import kill_group, parent_death_command

__all__ = ["CrossOperator", "cross_available", "build_harness"]

_CXXFLAGS = ("-std=c++17", "-O2", "-pthread", "-fno-strict-aliasing")


def cross_available(arch: str = "aarch64") -> tuple[bool, str]:
    """``(True, "")`` when this machine can build and run ``arch`` kernels, else the reason.

    Example:
        >>> ok, why = cross_available("aarch64")
        >>> isinstance(ok, bool) and isinstance(why, str)
        True
    """
    t = _cross.target(arch)
    if t.arch == _cross.host_target().arch:
        return (True, "") if shutil.which("g++") or shutil.which("c++") else (
            False, "no C++ compiler (g++ or c++)")
    if _cross.cross_gxx(t) is None:
        return False, (
            f"{t.gnu_triple}-g++ not found; install Debian's g++-{t.gnu_triple} "
            "(bash scripts/setup.d/20-cross.sh)"
        )
    if _cross.qemu_command(t) is None:
        return False, (
            f"{t.qemu} not found; install qemu-user-static (bash scripts/setup.d/20-cross.sh)"
        )
    return True, ""


def _compiler(t: _cross.CrossTarget) -> str:
    ok, why = cross_available(t.arch)
    if not ok:
        raise DeviceUnavailable(f"{t.arch} unavailable: {why}")
    if t.arch == _cross.host_target().arch:
        return str(shutil.which("g++") or shutil.which("c++"))
    return str(_cross.cross_gxx(t))


@lru_cache(maxsize=4)
def _toolchain_key(cxx: str, march: str) -> str:
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    h = hashlib.sha256(f"{cxx}\0{version}\0{march}\0{_CXXFLAGS}".encode())
    api = sorted(_paths.include_dir().rglob("*.h")) + [_paths.runtime_source(), _harness_source()]
    for p in api:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def _harness_source() -> Path:
    return _paths.PACKAGE_DIR / "csrc" / "harness.cpp"


def _cxx(cxx: str, march: str, args: list[str], what: str, cwd: Path) -> None:
    cmd = [cxx, *_CXXFLAGS, f"-march={march}", f"-I{_paths.include_dir()}", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise BuildError(f"{what} failed:\n$ {' '.join(cmd)}\n{tail}")


def _core_objects(cxx: str, march: str, root: Path, progress: Progress | None) -> list[Path]:
    """runtime.o and harness.o for this toolchain (compiled once)."""
    objs = [root / "runtime.o", root / "harness.o"]
    with file_lock(root / ".lock", "the opsdk cross runtime", progress):
        for obj, src in zip(objs, (_paths.runtime_source(), _harness_source()), strict=True):
            if not obj.exists():
                tmp = obj.with_suffix(f".{os.getpid()}.o")
                _cxx(cxx, march, ["-c", str(src), "-o", str(tmp)], f"compiling {src.name}", root)
                os.replace(tmp, obj)
    return objs


def _spec_registration(folder: Path) -> str:
    """The operator's spec as C++, for its ``.Kernels<...>`` registrations (no Python in
    the harness)."""
    from ..registry import load_spec
    from ._registration import spec_registration_cpp

    body = spec_registration_cpp(load_spec(folder), folder.name)
    return f"#include <string>\n\n#include <opsdk/custom_op.h>\n\n{body}"


def build_harness(
    folder: str | os.PathLike[str], arch: str = "aarch64", *, progress: Progress | None = None
) -> Path:
    """Build (or find in the cache) the harness executable of the operator in ``folder``.

    Raises DeviceUnavailable when the toolchain is missing, BuildError naming the operator
    and the target when the kernel does not compile for it.

    Example:
        >>> exe = build_harness("operators/thresholded_relu", "aarch64")  # doctest: +SKIP
    """
    t = _cross.target(arch)
    folder = Path(folder).resolve()
    cxx = _compiler(t)
    root = cache_dir() / "cross" / t.arch / _toolchain_key(cxx, t.default_march)
    srcs, hdrs = operator_sources(folder)
    declaration = _spec_registration(folder)
    h = hashlib.sha256(declaration.encode())
    for p in srcs + hdrs:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    exe = root / "ops" / folder.name / h.hexdigest()[:20] / "harness"
    if exe.exists():
        return exe
    root.mkdir(parents=True, exist_ok=True)
    core = _core_objects(cxx, t.default_march, root, progress)
    with file_lock(exe.parent / ".lock", f"{folder.name} for {t.arch}", progress):
        if not exe.exists():
            if progress:
                progress(f"cross-compiling {folder.name} for {t.arch} ({Path(cxx).name}) ...")
            tmp = exe.with_name(f".harness.{os.getpid()}")
            decl = exe.parent / "spec_registration.cpp"
            decl.write_text(declaration)
            args = [f"-I{folder}", *map(str, srcs), str(decl), *map(str, core), "-o", str(tmp)]
            _cxx(cxx, t.default_march, args, f"{folder.name}: building the {t.arch} kernel",
                 exe.parent)
            os.replace(tmp, exe)
    return exe


class CrossOperator:
    """The operator's kernel built for ``arch`` and run by the harness (under qemu when
    ``arch`` is not this machine's). Same ``run(inputs, attrs)`` as the other executors."""

    def __init__(self, spec: OpSpec, folder: str | os.PathLike[str], arch: str = "aarch64",
                 *, threads: int = 2, progress: Progress | None = None) -> None:
        self.spec = spec
        self.target = _cross.target(arch)
        self.harness = build_harness(folder, arch, progress=progress)
        self.threads = threads

    def __repr__(self) -> str:
        return f"<opsdk.CrossOperator {self.spec.name} ({self.target.arch})>"

    def call(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None) -> Call:
        """The harness call of ``inputs`` and ``attrs``: output types from the spec."""
        spec = self.spec
        arrays = [None if x is None else np.asarray(x) for x in inputs]
        arrays += [None] * (len(spec.inputs) - len(arrays))
        resolved = spec.resolve_attrs(attrs or {})
        types = [None if a is None else TensorType(a.shape, dtype_name(a.dtype)) for a in arrays]
        out_types = spec.infer(types, resolved)
        spec.check_allocation(out_types, resolved)
        typed = {a.name: (a.type, resolved[a.name]) for a in spec.attrs}
        return Call(spec.name, arrays, out_types, typed)

    def run_many(self, calls: Sequence[Call]) -> list[list[np.ndarray] | str]:
        """Run every call in one harness process; per call the outputs or the error text."""
        prefix = _cross.qemu_command(self.target)
        if prefix is None:
            raise DeviceUnavailable(f"{self.target.arch} unavailable: {self.target.qemu} not found")
        env = dict(os.environ, OPSDK_NUM_THREADS=str(self.threads))
        with tempfile.TemporaryDirectory(prefix="opsdk-harness-") as tmp:
            cases, results = Path(tmp) / "cases.bin", Path(tmp) / "results.bin"
            with open(cases, "wb") as f:
                write_cases(f, calls)
            code, stderr = _run_harness([*prefix, str(self.harness), str(cases), str(results)],
                                        env, Path(tmp) / "stderr.txt")
            if code:
                raise KernelError(
                    f"{self.spec.name}: the {self.target.arch} harness exited with status "
                    f"{code}: {stderr.strip()[-2000:]}"
                )
            with open(results, "rb") as f:
                return read_results(f, calls)

    def run(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        """Run one call (one emulator process); a kernel error raises KernelError."""
        if len(inputs) > len(self.spec.inputs):
            raise SpecError(
                f"{self.spec.name}: expected at most {len(self.spec.inputs)} inputs, "
                f"got {len(inputs)}"
            )
        (result,) = self.run_many([self.call(inputs, attrs)])
        if isinstance(result, str):
            raise KernelError(f"{result} -- raised by the {self.target.arch} kernel")
        return result


def _run_harness(cmd: list[str], env: dict[str, str], log: Path) -> tuple[int, str]:
    """Run the harness in its own process group, its output in a file (a process a kernel
    forked cannot hold a pipe open), and kill the group when it ends or we are interrupted;
    it is killed when we end (``PR_SET_PDEATHSIG``, see ``parent_death_command``)."""
    with open(log, "w+b") as out:
        proc = subprocess.Popen(parent_death_command(cmd), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=out, env=env, start_new_session=True)
        try:
            code = proc.wait()
        finally:
            kill_group(proc.pid)
            proc.wait()
        out.seek(0)
        return code, out.read().decode(errors="replace")
