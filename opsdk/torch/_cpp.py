"""The CPU kernels of opsdk operators in torch's dispatcher, registered from C++.

A call through ``torch.ops.<namespace>.<Name>`` on CPU tensors reaches the operator's
kernel through a small extension (``csrc/dispatch.cpp``) built against the installed
torch's C++ headers, once per torch version and toolchain, into opsdk's build cache (the
same cache key, lock, atomic rename and integrity record as the operator modules). The
extension registers, for each operator, a C++ kernel for the ``CPU`` dispatch key and one
for ``AutogradCPU`` that goes below autograd unless a gradient is wanted; the schema, the
fake implementation, the autograd formula and the ONNX export stay those of
:mod:`~opsdk.torch._register`. torch.library registers no Python CPU kernel then.

Without torch's headers, or when the extension does not compile, each call takes the
Python CPU implementation as before, and one :class:`TorchCppUnavailable` warning says
why. ``OPSDK_TORCH_CPP=0`` chooses the Python path without a warning;
``OPSDK_TORCH_INCLUDE`` (folders separated by ``os.pathsep``) replaces the include folders
torch reports.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .. import _paths
from ..build import _check_writable, _write_record, cache_dir, cache_problem, file_lock, toolchain
from ..dtypes import DTYPES
from ..errors import BuildError
from ._schema import dtype_name
from .errors import TorchCppUnavailable

__all__ = ["TorchCppUnavailable", "extension", "unavailable", "binder", "build_extension",
           "build_cached", "build_inputs", "load_module"]

_SOURCE = Path(__file__).resolve().parent / "csrc" / "dispatch.cpp"
_MODULE = "_opsdk_torch"
#: opsdk::DType codes (custom_op.h): the dtype table is in the enum's order
_DTYPE_CODES = {n: i for i, n in enumerate(DTYPES)}


def _include_dirs() -> list[str]:
    env = os.environ.get("OPSDK_TORCH_INCLUDE")
    if env is not None:
        return [d for d in env.split(os.pathsep) if d]
    from torch.utils import cpp_extension

    return list(cpp_extension.include_paths())


def build_inputs() -> dict[str, Any]:
    """Everything the extension's build depends on (its cache key is their hash)."""
    import torch
    from torch.utils import cpp_extension

    return {
        "toolchain": toolchain().key,
        "torch": torch.__version__,
        "cxx11_abi": int(torch._C._GLIBCXX_USE_CXX11_ABI),
        "includes": _include_dirs(),
        "libraries": list(cpp_extension.library_paths()),
        "python": sysconfig.get_paths()["include"],
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
    }


def _source_hash() -> str:
    h = hashlib.sha256()
    for p in (_SOURCE, _paths.include_dir() / "opsdk" / "kernel_abi.h"):
        h.update(p.read_bytes())
    return h.hexdigest()


def _command(inputs: dict[str, Any], out: Path) -> list[str]:
    tc = toolchain()
    libs = inputs["libraries"]
    return [
        tc.cxx, "-O2", "-std=c++20", "-fPIC", "-shared", "-fvisibility=hidden",
        f"-D_GLIBCXX_USE_CXX11_ABI={inputs['cxx11_abi']}",
        *(f"-I{d}" for d in [*inputs["includes"], inputs["python"], str(_paths.include_dir())]),
        str(_SOURCE),
        *(f"-L{d}" for d in libs), *(f"-Wl,-rpath,{d}" for d in libs),
        "-ltorch", "-ltorch_cpu", "-lc10", "-ltorch_python", "-o", str(out),
    ]


def build_extension(progress: Callable[[str], None] | None = None) -> Path:
    """Build (or find in the cache) the dispatcher extension; BuildError naming the reason.

    Example:
        >>> build_extension().name  # doctest: +SKIP
        '_opsdk_torch.cpython-311-x86_64-linux-gnu.so'
    """
    inputs = build_inputs()
    dirs = inputs["includes"]
    if not any((Path(d) / "torch" / "library.h").is_file() for d in dirs):
        raise BuildError(
            "torch's C++ headers were not found (no torch/library.h under "
            f"{', '.join(dirs) or 'no include folder'}); install a torch wheel that ships "
            "them (the CPU wheels do), or set OPSDK_TORCH_INCLUDE"
        )
    return build_cached("torch", _MODULE, inputs, _source_hash(), lambda out: _command(inputs, out),
                        "opsdk's torch extension", progress)


def build_cached(area: str, name: str, inputs: dict[str, Any], source_hash: str,
                 command: Callable[[Path], list[str]], what: str,
                 progress: Callable[[str], None] | None = None) -> Path:
    """Build the extension module ``name`` with ``command(out)`` into the build cache (under
    ``area``, keyed by ``inputs`` and ``source_hash``), or find it there: the cache key,
    lock, atomic rename and integrity record of the operator modules. BuildError names the
    log and the compiler's last lines."""
    key = hashlib.sha256((repr(sorted(inputs.items())) + source_hash).encode()).hexdigest()[:20]
    root = cache_dir() / area / key
    module = root / f"{name}{inputs['ext_suffix']}"
    if cache_problem(module, source_hash) is None:
        return module
    _check_writable(root)
    with file_lock(root / ".lock", what, progress):
        if cache_problem(module, source_hash) is None:  # another process built it
            return module
        if progress:
            progress(f"compiling {what} ...")
        tmp = root / f".{module.name}.{os.getpid()}.tmp"
        cmd = command(tmp)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        (root / "build.log").write_text(" ".join(cmd) + "\n" + proc.stdout + proc.stderr)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-12:])
            raise BuildError(f"compiling {what} failed (log: {root / 'build.log'}):\n{tail}")
        os.replace(tmp, module)
        _write_record(module, source_hash)
    return module


def load_module(path: Path, name: str = _MODULE) -> ModuleType:
    """Import the extension module ``name`` built at ``path``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a file path always has one
        raise BuildError(f"{path}: cannot be loaded as a Python extension module")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: why the extension is not in use ("" when it is), filled by :func:`extension`
_REASON: list[str] = []


def _say(line: str) -> None:
    """Progress of the first build (minutes on a small machine), on stderr."""
    print(f"opsdk.torch: {line}", file=sys.stderr, flush=True)


@functools.cache
def extension() -> ModuleType | None:
    """The loaded dispatcher extension, or None after one warning naming the reason."""
    if os.environ.get("OPSDK_TORCH_CPP", "") == "0":
        _REASON.append("OPSDK_TORCH_CPP=0")
        return None
    try:
        if shutil.which(toolchain().cxx) is None:  # pragma: no cover - toolchain() checks
            raise BuildError(f"the C++ compiler {toolchain().cxx} is gone")
        return load_module(build_extension(progress=_say))
    except (BuildError, OSError, ImportError) as e:
        _REASON.append(str(e))
    warnings.warn(
        f"opsdk.torch: calls through torch.ops take the Python CPU implementation (about "
        f"20 us more a call than op(x)), because {_REASON[-1]}\n(OPSDK_TORCH_CPP=0 chooses "
        "that path without this warning)",
        TorchCppUnavailable, stacklevel=4,
    )
    return None


def unavailable() -> str:
    """Why calls through torch.ops take the Python path ('' when the C++ kernels are used)."""
    return "" if extension() is not None else _REASON[-1]


def binder(kernel: Callable[[], Any]) -> Callable[[], tuple[Any, ...]]:
    """What the C++ CPU kernel calls on its first call: the loaded operator's kernel ABI
    capsule, its registrations, whether it is elementwise, and its planner.

    A module without the kernel ABI (an older wheel's), one loaded with ``OPSDK_DEBUG=1``
    (guarded outputs), or an executor that is not a compiled CPU module gives None: every
    call then takes the Python path.
    """

    def bind() -> tuple[Any, ...]:
        op = kernel()
        make = getattr(getattr(op, "module", None), "kernel_abi", None)
        if make is None or getattr(op, "guard", False) or not hasattr(op, "_table"):
            return None, [], False, None
        entries = [
            ([_DTYPE_CODES[d] for d in e.input_dtypes], e.index,
             [_DTYPE_CODES[d] for d in e.output_dtypes], list(e.attr_order))
            for e in op._table.values()
        ]
        return make(), entries, bool(op.spec.elementwise), _planner(op)

    return bind


def _planner(op: Any) -> Callable[..., tuple[int, list[tuple[int, ...]]]] | None:
    """The output shapes of one call signature from the spec's own inference (as op(x))."""
    if op.spec.elementwise:
        return None

    def plan(*inputs: Any, **attrs: Any) -> tuple[int, list[tuple[int, ...]]]:
        shapes = [None if t is None else np.broadcast_to(np.zeros((), np.uint8), tuple(t.shape))
                  for t in inputs]
        dts = [None if t is None else dtype_name(t.dtype) for t in inputs]
        entry, outs = op._plan(shapes, dts, op.spec.resolve_attrs(attrs))
        return entry.index, [shape for shape, _ in outs]

    return plan


def define_op(qualname: str, schema: str, cpu: Callable[..., Any]) -> Any:
    """The torch.library custom op of ``qualname``: with the extension, one without a Python
    CPU kernel (``install_cpu`` registers the C++ one); without it, ``custom_op`` as before."""
    import torch

    if extension() is not None:
        from torch._library.custom_ops import CustomOpDef

        ns, name = qualname.split("::")
        return CustomOpDef(ns, name, schema, cpu)
    return torch.library.custom_op(qualname, cpu, mutates_args=(), device_types="cpu",
                                   schema=schema)


def install_cpu(qualname: str, op: Any, kernel: Callable[[], Any],
                cpu: Callable[..., Any]) -> bool:
    """Register the C++ CPU and AutogradCPU kernels of ``op`` (defined by :func:`define_op`,
    its autograd formula registered); True if done. Should the dispatcher refuse them, the
    Python CPU kernel is registered instead, after one warning."""
    ext = extension()
    if ext is None:
        return False
    try:
        ext.register_op(qualname, binder(kernel), cpu)
        return True
    except RuntimeError as e:
        warnings.warn(f"opsdk.torch: {qualname} takes the Python CPU implementation, because "
                      f"torch's dispatcher refused its C++ kernel: {e}", TorchCppUnavailable,
                      stacklevel=3)
    op.register_kernel("cpu")(cpu)
    return False
