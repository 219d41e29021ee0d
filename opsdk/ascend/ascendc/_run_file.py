"""Run any Ascend C kernel file on opsdk's model: a kernel-launch file as Huawei's samples
write it (an ``extern "C" __global__ __aicore__`` entry), outside an operator folder.

The entry's parameters are read from the source: each GM pointer (``GM_ADDR x``,
``__gm__ T* x``, ``uint8_t* x``) is an input or an output by name, a parameter named like
``workspace`` gets the launch's GM workspace (the system part CANN reserves, then the user
part the tiling asks for, zeroed) and one named like ``tiling`` the tiling bytes; a
parameter passed by value (a tiling struct) is filled from the tiling bytes, whose size must
be the struct's. The file is compiled against the model with ``ASCENDC_CPU_DEBUG`` defined
(so the ``<<<>>>`` launcher the samples guard with it is left out), once per core type when
it declares a kernel type with a Cube core (``KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2)``),
and run by the same runner as ``opsdk bench --device ascendc-model``
(:func:`~opsdk.ascend.ascendc.model.launch`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...build import cache_dir, file_lock
from ...errors import BuildError
from ..errors import KernelFileError
from ._compiler import ModelCompiler, compiler_hint, model_compiler
from ._estimate import Estimate, costs_for, read_trace
from ._templates import render, template_text
from .model import _arch_macros, _errors, _model_hash, launch, model_include_dir

#: the system part of the workspace on 910B: the 16 MiB CANN reserves for its libraries
#: (RESERVED_WORKSPACE on __CCE_AICORE__ 220, what platform_ascendc's GetLibApiWorkSpaceSize
#: reports); the launch allocates it and the user part after it (opsdk_model_launch.h)
SYSTEM_WORKSPACE_BYTES = 16 * 1024 * 1024


_POINTER = re.compile(r"\bGM_ADDR\b|\*")
#: a kernel type with a Cube core: the file is compiled once per core type
_CUBE_TYPE = re.compile(
    r"KERNEL_TASK_TYPE(?:_DEFAULT)?\s*\((?:[^()]*,)?\s*KERNEL_TYPE_(?:MIX_AIC_1_[012]|AIC_ONLY)\b")


def is_mixed(source: str) -> bool:
    """Whether a kernel source declares a kernel type with a Cube core, so that the model
    compiles it once per core type.

    Example:
        >>> is_mixed("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);")
        True
        >>> is_mixed("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);")
        False
    """
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    return _CUBE_TYPE.search(text) is not None


def _workspace_index(params: list[EntryParam]) -> int:
    """The workspace parameter's index among the GM pointers, or -1."""
    pointers = [p for p in params if p.pointer]
    return next((k for k, p in enumerate(pointers) if "workspace" in p.name.lower()), -1)


@dataclass(frozen=True)
class EntryParam:
    """One parameter of a kernel entry: its name, and whether it is a GM pointer."""

    name: str
    pointer: bool


@dataclass
class KernelFileRun:
    """What :func:`run_kernel_file` gives: the outputs by name, and the estimate when asked."""

    entry: str
    block_dim: int
    outputs: dict[str, np.ndarray]
    estimate: Estimate | None = None
    warnings: list[str] = field(default_factory=list)


def entry_params(source: str, entry: str, where: str = "the kernel file") -> list[EntryParam]:
    """The parameters of ``__global__`` entry ``entry`` in ``source``.

    Example:
        >>> src = 'extern "C" __global__ __aicore__ void add(GM_ADDR x, GM_ADDR z, Tiling t) {}'
        >>> [(p.name, p.pointer) for p in entry_params(src, "add")]
        [('x', True), ('z', True), ('t', False)]
    """
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    for m in re.finditer(rf"\bvoid\s+{re.escape(entry)}\s*\(([^)]*)\)\s*\{{", text):
        start = max(text.rfind(";", 0, m.start()), text.rfind("}", 0, m.start())) + 1
        head = text[start:m.start()]
        if "__global__" not in head:
            continue
        params = []
        for raw in (p.strip() for p in m.group(1).split(",")):
            if not raw or raw == "void":
                continue
            name = re.findall(r"[A-Za-z_]\w*", raw.split("=")[0])
            params.append(EntryParam(name[-1] if name else raw, bool(_POINTER.search(raw))))
        return params
    found = re.findall(r"__global__[^;{(]*?\bvoid\s+(\w+)\s*\(", text)
    raise KernelFileError(
        f"{where}: no __global__ entry {entry!r}; "
        + (f"its entries are {', '.join(found)}: pass one with --entry" if found else
           'write one as the samples do: '
           'extern "C" __global__ __aicore__ void NAME(GM_ADDR x, ...)'))


def _build(path: Path, entry: str, soc: str, params: list[EntryParam],
           cxx: str | None = None) -> Any:
    """The kernel file compiled against the model for ``soc`` by ``cxx`` (default ``$CXX``),
    from the cache when it is there (the compiler's path and version are in the key): its
    launch function and the setters of its tiling length and user workspace bytes."""
    from .model import AscendcModel

    source = path.read_text()
    cc = model_compiler(cxx)
    macros = ["-DASCENDC_CPU_DEBUG=1", *_arch_macros(soc)]
    driver = render("run", "driver", entry=entry, source_file=path.name, path=str(path.resolve()),
                    mixed=is_mixed(source), workspace_index=_workspace_index(params))
    key = hashlib.sha256("\0".join(
        [source, str(path.resolve()), entry, driver, _model_hash(),
         " ".join(macros), cc.path, cc.version]).encode()).hexdigest()[:20]
    root = cache_dir() / "ascendc-file" / key
    lib = root / "kernel.so"
    if not lib.exists():
        with file_lock(root / ".lock", f"the kernel file {path.name}"):
            if not lib.exists():
                _compile(path, entry, root, lib, macros, cc, driver)
    fn = AscendcModel._load(lib)
    setters = []
    for name in ("opsdk_ascendc_tiling_len", "opsdk_ascendc_workspace"):
        setter = getattr(ctypes.CDLL(str(lib)), name)
        setter.argtypes = [ctypes.c_uint64]
        setters.append(setter)
    return fn, setters[0], setters[1]


def _compile(path: Path, entry: str, root: Path, lib: Path, macros: list[str],
             cc: ModelCompiler, driver: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "driver.cpp").write_text(driver)
    tmp = root / f"kernel.so.{os.getpid()}"
    cmd = [cc.path, "-std=c++17", "-O1", "-g0", "-shared", "-fPIC", "-pthread",
           f"-I{model_include_dir()}", f"-I{path.resolve().parent}", *macros, "driver.cpp",
           "-o", str(tmp)]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode:
        errors = _errors(proc.stderr).splitlines()
        first = next((e for e in errors if path.name in e), errors[0] if errors else "")
        hint = compiler_hint(proc.stderr, cc)
        raise BuildError(
            f"{entry} ({path.name}): does not compile against opsdk's Ascend C model with "
            f"{cc.path}: {first.strip()} ({len(errors)} error lines; "
            + (f"{hint}; " if hint else "the APIs the model has are listed in "
               "docs/ascendc_model.md, 'The model'; ") + f"the build is in {root})")
    os.replace(tmp, lib)




def _host_macros(soc: str) -> list[str]:
    """The SoC facts a host tiling function's platform (tiling/platform/platform_ascendc.h)
    answers with: the model's SoC version and Cube buffers, the Unified Buffer and the cores."""
    from ..socs import soc_facts

    facts = soc_facts(soc)
    prefixes = ("-DOPSDK_SOC_VERSION=", "-DOPSDK_L", "-DOPSDK_BT")
    keep = [m for m in _arch_macros(soc) if m.startswith(prefixes)]
    return [*keep, f"-DOPSDK_HOST_UB_BYTES={int(facts['ub_bytes'])}",
            f"-DOPSDK_HOST_AIC_CORES={int(facts.get('cube_cores', 0))}",
            f"-DOPSDK_HOST_AIV_CORES={int(facts.get('vector_cores', 0))}"]


def _host_library(spec: str, path: Path, func: str, soc: str, cxx: str | None) -> Path:
    cc = model_compiler(cxx)
    macros = _host_macros(soc)
    key = hashlib.sha256("\0".join([path.read_text(), str(path.resolve()), func,
                                     template_text("run", "host_tiling"), _model_hash(), *macros,
                                     cc.path, cc.version]).encode()).hexdigest()[:20]
    root = cache_dir() / "ascendc-host" / key
    lib = root / "host.so"
    if lib.exists():
        return lib
    with file_lock(root / ".lock", f"the host tiling {path.name}"):
        if lib.exists():
            return lib
        root.mkdir(parents=True, exist_ok=True)
        (root / "driver.cpp").write_text(render(
            "run", "host_tiling", func=func, source_file=path.name, path=str(path.resolve())))
        tmp = root / f"host.so.{os.getpid()}"
        proc = subprocess.run(
            [cc.path, "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{path.resolve().parent}",
             f"-I{model_include_dir()}", *macros, "driver.cpp", "-o", str(tmp)], cwd=root,
            capture_output=True, text=True, check=False)
        if proc.returncode:
            errors = _errors(proc.stderr).splitlines()
            raise BuildError(
                f"--host-tiling {spec}: does not compile as the host tiling function "
                f"(void {func}(S* tiling), S {func}() or void {func}(const char* socVersion, "
                f"uint8_t* tilingBuf); plain C++ or the model's tiling/tiling_api.h): "
                f"{(errors or [''])[0].strip()} (the build is in {root})")
        os.replace(tmp, lib)
    return lib


def host_tiling(spec: str, soc: str = "Ascend910B3", cxx: str | None = None) -> bytes:
    """The tiling bytes the host function ``FILE.cpp:FUNC`` makes for ``soc``, compiled with
    the host compiler (``cxx``, else ``$CXX``) and run. FUNC is ``void FUNC(S* tiling)``,
    ``void FUNC(S* tiling, uint64_t* workspace)``, ``S FUNC()`` or, as Huawei's kernel-launch
    samples write it, ``void FUNC(const char* socVersion, uint8_t* tilingBuf)`` (the bytes
    are those it writes); it may use the model's host tiling APIs (``tiling/tiling_api.h``:
    the Matmul API's ``MultiCoreMatmulTiling``, the high-level library's
    ``SoftMaxTilingFunc``, ``GetRmsNormTilingInfo``, ...), whose platform is ``soc``'s. An
    error a tiling API reported (a shape that does not fit the SoC) is raised.

    Example:
        >>> host_tiling("add_tiling.cpp:MakeTiling")  # doctest: +SKIP
        b'\\x00\\x02\\x00\\x00\\x80\\x00\\x00\\x00\\x00\\x00\\x00?'
    """
    return host_tiling_and_workspace(spec, soc, cxx)[0]


def host_tiling_and_workspace(spec: str, soc: str = "Ascend910B3", cxx: str | None = None,
                              ) -> tuple[bytes, int | None]:
    """The tiling bytes the host function ``FILE.cpp:FUNC`` makes (see :func:`host_tiling`),
    and the user workspace bytes it asks for when it takes ``uint64_t* workspace`` (as a CANN
    tiling function sets ``GetWorkspaceSizes(1)[0]``, without the system part), else None.

    Example:
        >>> host_tiling_and_workspace("mix_host_tiling.cpp:MakeTiling")  # doctest: +SKIP
        (b'\\x02\\x00\\x00\\x00\\x02\\x00\\x00\\x00\\x00\\x00\\x00>', 8192)
    """
    file, sep, func = spec.rpartition(":")
    path = Path(file)
    if not sep or not re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", func):
        raise KernelFileError(f"--host-tiling {spec!r}: expected FILE.cpp:FUNC, e.g. "
                              "add_tiling.cpp:MakeTiling")
    if not path.is_file():
        raise KernelFileError(f"--host-tiling {spec}: no such file {path}")
    lib = ctypes.CDLL(str(_host_library(spec, path, func, soc, cxx)))
    fn = lib.opsdk_host_tiling
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64)]
    fn.restype = ctypes.c_size_t
    lib.opsdk_host_tiling_error.restype = ctypes.c_char_p
    buf = ctypes.create_string_buffer(1 << 16)
    workspace = ctypes.c_uint64(0)
    n = fn(buf, len(buf), ctypes.byref(workspace))
    error = (lib.opsdk_host_tiling_error() or b"").decode()
    if error:
        raise KernelFileError(f"--host-tiling {spec} ({soc}): {error}")
    if n == 0:
        raise KernelFileError(f"--host-tiling {spec}: the tiling is empty or larger than 64 KiB "
                              "(nothing written into tilingBuf, or a struct over 64 KiB)")
    return buf.raw[:n], (None if workspace.value == 2**64 - 1 else workspace.value)


def _gm_arrays(entry: str, params: list[EntryParam], inputs: Mapping[str, np.ndarray],
               outputs: Mapping[str, tuple[np.dtype, tuple[int, ...]]], tiling: bytes | None,
               ) -> tuple[list[str], list[np.ndarray], dict[str, np.ndarray]]:
    names, arrays, outs = [], [], {}
    for p in params:
        if not p.pointer:
            if tiling is None:
                raise KernelFileError(f"{entry}: parameter {p.name!r} is a tiling struct passed by "
                                      "value; give its bytes with --tiling FILE")
            continue
        if p.name in inputs:
            arr = np.ascontiguousarray(inputs[p.name]).copy()
        elif p.name in outputs:
            dtype, shape = outputs[p.name]
            arr = outs[p.name] = np.zeros(shape, dtype)
        elif "workspace" in p.name.lower():
            continue  # the launch's own GM workspace (opsdk_model_launch.h)
        elif "tiling" in p.name.lower():
            if tiling is None:
                raise KernelFileError(f"{entry}: parameter {p.name!r} is the tiling; give its "
                                      "bytes with --tiling FILE")
            arr = np.frombuffer(tiling or b"\0", np.uint8).copy()
        else:
            raise KernelFileError(
                f"{entry}: GM parameter {p.name!r} is neither an input nor an output; pass "
                f"--input {p.name}=FILE.npy or --output {p.name}=DTYPE:SHAPE")
        names.append(p.name)
        arrays.append(arr)
    known = {p.name for p in params if p.pointer}
    for name in [*inputs, *outputs]:
        if name not in known:
            raise KernelFileError(f"{entry}: has no GM parameter {name!r}; its GM parameters are "
                                  f"{', '.join(sorted(known)) or 'none'}")
    return names, arrays, outs


def run_kernel_file(path: str | Path, entry: str, *, block_dim: int, soc: str,
                    inputs: Mapping[str, np.ndarray],
                    outputs: Mapping[str, tuple[Any, tuple[int, ...]]],
                    tiling: bytes | None = None, estimate: bool = False,
                    workspace_bytes: int = 0, seed: int = 0,
                    threads: int = 1, cxx: str | None = None) -> KernelFileRun:
    """Compile the Ascend C kernel file ``path`` against opsdk's model and run its entry on
    ``block_dim`` blocks with the race checker and the limits of ``soc``; with ``estimate``
    also estimate its time (never an NPU time). ``workspace_bytes`` is the user part of the
    GM workspace (the tiling's); the launch adds the system part before it. A kernel that
    declares a mixed type runs its blocks' Cube and vector cores, with the cross-core checks.
    ``cxx`` is the host compiler (g++ or clang++; default ``$CXX``, else the toolchain's).
    Raises :class:`~opsdk.errors.KernelError` naming the kernel, block, API, the source line
    and the fix when a constraint is broken.

    Example:
        >>> r = run_kernel_file("add_custom.cpp", "add_custom", block_dim=8, soc="Ascend910B3",
        ...                     inputs={"x": x, "y": y},
        ...                     outputs={"z": (np.float16, (8, 2048))})  # doctest: +SKIP
        >>> np.array_equal(r.outputs["z"], x + y)  # doctest: +SKIP
        True
    """
    from ..socs import compute_unit, core_resources

    path = Path(path)
    if not path.is_file():
        raise KernelFileError(f"{path}: no such kernel file")
    if not 1 <= block_dim <= 65535:
        raise KernelFileError(f"{entry}: --block-dim is {block_dim}; expected 1 to 65535")
    params = entry_params(path.read_text(), entry, str(path))
    out_types = {k: (np.dtype(d), tuple(s)) for k, (d, s) in outputs.items()}
    if workspace_bytes < 0:
        raise KernelFileError(f"{entry}: the user workspace is {workspace_bytes} bytes; "
                              "expected 0 or more")
    names, arrays, outs = _gm_arrays(entry, params, inputs, out_types, tiling)
    unit = compute_unit(soc)
    ub_bytes, cores = core_resources(soc)
    fn, set_tiling_len, set_workspace = _build(path, entry, soc, params, cxx)
    set_tiling_len(len(tiling or b""))
    set_workspace(workspace_bytes)
    if not estimate:
        launch(fn, names, arrays, block_dim, tiling or b"", ub_bytes=ub_bytes, soc=unit,
               seed=seed, threads=threads)
        return KernelFileRun(entry, block_dim, outs)
    table = costs_for(soc)
    fd, trace = tempfile.mkstemp(prefix="opsdk-estimate-", suffix=".csv")
    os.close(fd)
    try:
        launch(fn, names, arrays, block_dim, tiling or b"", ub_bytes=ub_bytes, soc=unit,
               seed=seed, threads=threads, timing=(table.encoded().encode(), trace.encode()))
        blocks = read_trace(Path(trace))
    finally:
        os.unlink(trace)
    est = Estimate(entry, soc, table, blocks, block_dim, cores, list(outs.values()),
                   {k: tuple(v.shape) for k, v in outs.items()})
    return KernelFileRun(entry, block_dim, outs, est)
