"""Run an operator's AI Core kernel (Ascend C) on opsdk's CPU model of the Ascend C API.

The kernel source (hand-written in ``op_kernel/`` or generated from the decomposition) is
compiled with the host compiler against ``opsdk/ascend/ascendc/include`` once per dtype
(``-DDTYPE_<X>=half`` as CANN's build does) and SoC family (its ``__CCE_AICORE__``, UB
layout and the APIs it has, from :mod:`opsdk.ascend.aicore_apis`), into a content-addressed
cache. Each call computes the host tiling from the SoC's Unified Buffer size and core count
(data/socs.json ``soc_facts``), then launches the blocks in a shuffled order. A documented
constraint the kernel breaks raises :class:`~opsdk.errors.KernelError` naming the kernel,
block, API, argument and limit.

A pass means that the kernel's tiling, indexing and API use are right by the Ascend C
documentation. It does not mean that an NPU ran the kernel.

Example:
    >>> from opsdk.ascend.ascendc.model import AscendcModel
    >>> op = AscendcModel("operators/thresholded_relu")  # doctest: +SKIP
    >>> op.run([np.arange(5, dtype=np.float32)], {"alpha": 2.0})  # doctest: +SKIP
    [array([0., 0., 0., 3., 4.], dtype=float32)]
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import subprocess
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...build import cache_dir, file_lock
from ...dtypes import dtype_name, to_numpy
from ...errors import BuildError, DeviceUnavailable, KernelError
from ...runtime._procs import dies_with_us
from ...spec import OpSpec, TensorType
from .._op import DEFAULT_SOCS
from ..errors import AscendcModelWarning
from ..spellings import ASCENDC_TYPES as _CPP
from ._compiler import compiler_hint, model_compiler
from ._estimate import Estimate

if TYPE_CHECKING:
    from ._gen import AicoreKernel

__all__ = ["AscendcModel", "AscendcModelWarning", "launch", "model_include_dir"]


def _driver_source(k: AicoreKernel) -> str:
    """The driver that includes the kernel and its tiling header and exports the launch."""
    from ._templates import render

    return render("model", "driver", op=k.op, snake=k.snake, header=f"{k.snake}_tiling.h",
                  kernel=f"{k.snake}.cpp", n=len(k.io_names))


def model_include_dir() -> Path:
    """The folder holding the model's ``kernel_operator.h``."""
    return Path(__file__).parent / "include"


def _model_hash() -> str:
    h = hashlib.sha256()
    for p in sorted(model_include_dir().rglob("*.h")):
        h.update(p.read_bytes())
    return h.hexdigest()


class AscendcModel:
    """Executor of one operator's AI Core kernel on the Ascend C model (``run(inputs, attrs)``).

    Args:
        folder: the operator folder (spec.py, and op_kernel/ for a hand-written kernel).
        spec: its spec (loaded from the folder when omitted).
        soc: SoC version or compute unit whose Unified Buffer and core count apply.
        seed: seeds the order blocks run in.
        threads: run blocks on this many threads.
        cxx: the host compiler (g++ or clang++); default ``$CXX``, else the toolchain's.
    """

    device = "ascendc-model"

    def __init__(self, folder: str | Path, spec: OpSpec | None = None, *,
                 soc: str = DEFAULT_SOCS[0], seed: int = 0, threads: int = 1,
                 cxx: str | None = None) -> None:
        from ...registry import load_spec
        from ..socs import compute_unit, core_resources
        from ._gen import GenerateRefused
        from ._kernels import aicore_kernel

        self.folder = Path(folder)
        self.spec = spec if spec is not None else load_spec(self.folder)
        try:
            self.kernel = aicore_kernel(self.spec, self.folder)
        except GenerateRefused as e:
            raise DeviceUnavailable(f"{self.device}: {e}; the operator runs on AI CPU") from e
        self.soc = compute_unit(soc)
        self.soc_name = soc
        self.ub_bytes, self.cores = core_resources(soc)
        self.cxx = cxx
        if self._cube_kernel:  # a Cube kernel: one block per AI Core (its Cube unit)
            from ..socs import soc_facts

            self.cores = int(soc_facts(soc)["cube_cores"])
        self.seed, self.threads = seed, threads
        self._libs: dict[str, Any] = {}
        self._calls = 0
        self._timing: tuple[bytes, bytes] | None = None  # (costs, trace file) while estimating
        self._last_block_dim = 0

    def __repr__(self) -> str:
        return f"<opsdk AI Core kernel of {self.spec.name} on the Ascend C model ({self.soc})>"

    @property
    def _cube_kernel(self) -> bool:
        return getattr(self.kernel.host, "CORES", "aiv") == "aic"

    @property
    def source(self) -> str:
        """Where the kernel comes from: its op_kernel/ file, or "generated"."""
        return str(self.kernel.origin)

    def prepare(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None) -> None:
        """Build (or find in the cache) the kernel library :meth:`run` needs for ``inputs``,
        without running it: a worker running the kernel (``opsdk test``) then counts the
        kernel's time alone against its limit, not the compiler's."""
        if any(a is not None for a in inputs):
            key = self._dtype_key([None if a is None else np.asarray(a) for a in inputs])
            self._check_apis(key)
            self._build(key)

    # ------------------------------------------------------------------ build
    def _lib(self, dtype: str) -> Any:
        lib = self._libs.get(dtype)
        if lib is None:
            self._check_apis(dtype)
            lib = self._libs[dtype] = self._load(self._build(dtype))
        return lib

    def _dtype_key(self, arrays: Sequence[np.ndarray | None]) -> str:
        """The dtypes a build is made for: input 0's, or ``"float16,float32"`` (one per input,
        an absent input taking input 0's) when the inputs' dtypes differ."""
        names = [None if a is None else dtype_name(a.dtype) for a in arrays[:len(self.spec.inputs)]]
        first = next(n for n in names if n is not None)
        full = [first if n is None else n for n in names]
        return first if len(set(full)) == 1 else ",".join(full)

    def _check_apis(self, dtype: str) -> None:
        from ..aicore_apis import missing_apis

        why = missing_apis(self.kernel.source, self.soc_name, sorted(set(dtype.split(","))))
        if why:
            raise DeviceUnavailable(
                f"{self.device}: {self.kernel.op}'s AI Core kernel cannot build for "
                f"{self.soc_name} ({dtype}): " + "; ".join(why) + " (on this SoC the operator "
                "runs on AI CPU: opsdk cann --engine aicpu)")

    def _build(self, dtype: str) -> Path:
        from ._kernels import tiling_header

        k = self.kernel
        header = tiling_header(self.spec, k)
        cc = model_compiler(self.cxx)
        # as CANN's build: DTYPE_<INPUT> of every input (``dtype``: one, or one per input)
        each = dtype.split(",")
        per_input = each if len(each) > 1 else each * len(self.spec.inputs)
        types = {k.dtype_macro: each[0]}
        types.update({"DTYPE_" + p.name.upper(): t
                      for p, t in zip(self.spec.inputs, per_input, strict=True)})
        macros = [f"-D{m}={_CPP[t]}" for m, t in types.items()] if k.dtype_macro else []
        macros += _arch_macros(self.soc_name)
        key = hashlib.sha256("\0".join(
            [k.source, header, _model_hash(), " ".join(macros), cc.path, cc.version]
        ).encode()).hexdigest()[:20]
        root = cache_dir() / "ascendc" / k.snake / key
        lib = root / "kernel.so"
        if lib.exists():
            return lib
        with file_lock(root / ".lock", f"the AI Core kernel of {k.op}"):
            if lib.exists():
                return lib
            (root / f"{k.snake}_tiling.h").write_text(header)
            (root / f"{k.snake}.cpp").write_text(k.source)
            (root / "driver.cpp").write_text(_driver_source(k))
            tmp = root / f"kernel.so.{os.getpid()}"
            cmd = [cc.path, "-std=c++17", "-O1", "-g0", "-shared", "-fPIC", "-pthread",
                   f"-I{model_include_dir()}", f"-I{root}", *macros, "driver.cpp", "-o", str(tmp)]
            proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False,
                                  **dies_with_us())
            if proc.returncode:
                hint = compiler_hint(proc.stderr, cc)
                raise BuildError(
                    f"{k.op}: the AI Core kernel ({k.origin}) does not compile against opsdk's "
                    f"Ascend C model for {dtype} with {cc.path}:\n{_errors(proc.stderr)}\n"
                    + (f"{hint}\n" if hint else "") + f"(sources in {root})")
            os.replace(tmp, lib)
        return lib

    @staticmethod
    def _load(path: Path) -> Any:
        lib = ctypes.CDLL(str(path))
        fn = lib.opsdk_ascendc_launch
        p = ctypes.c_void_p
        fn.argtypes = [p, p, p, ctypes.c_int, p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_char_p,
                       ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64,
                       ctypes.c_char_p, ctypes.c_char_p]
        fn.restype = ctypes.c_int
        return fn

    # -------------------------------------------------------------------- run
    def run(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        """Run the kernel on ``inputs`` (None for an absent optional input); returns outputs."""
        spec = self.spec
        resolved = spec.resolve_attrs(dict(attrs or {}))
        arrays = [None if a is None else np.asarray(a).copy(order="C") for a in inputs]
        arrays += [None] * (len(spec.inputs) - len(arrays))
        types = [None if a is None else TensorType(tuple(a.shape), dtype_name(a.dtype))
                 for a in arrays]
        spec.bind_types([None if t is None else t.dtype for t in types])
        outs_t = spec.infer(types, resolved)
        spec.check_allocation(outs_t, resolved)
        self._applicable(types, outs_t, resolved)
        from ._tiling import dim_facts

        first = next(a for a in arrays if a is not None)
        shapes = [tuple(int(d) for d in t.shape if isinstance(d, int)) for t in outs_t]
        outputs = [np.empty(s, dtype=first.dtype if t.dtype == dtype_name(first.dtype)
                            else to_numpy(t.dtype)) for s, t in zip(shapes, outs_t, strict=True)]
        total = math.prod(shapes[0])
        facts = {"totalLength": total, "coreNum": self.cores, "ubBytes": self.ub_bytes,
                 "lastDim": int(first.shape[-1]) if first.ndim else 1,
                 "typeBytes": first.dtype.itemsize,  # input 0's dtype, as the op_host reads it
                 "rowInputs": sum(1 << i for i, a in enumerate(arrays)
                                  if a is not None and a.size < total)}
        if self.kernel.host is not None:
            return self._run_host(arrays, facts, resolved, total)
        facts.update(dim_facts(self.kernel.tiling, [None if a is None else a.shape
                                                    for a in arrays]))
        self._launch(self._dtype_key(arrays), [*arrays, *outputs], facts, resolved, total)
        return outputs

    def _run_host(self, arrays: list[np.ndarray | None], facts: dict[str, int],
                  attrs: dict[str, Any], total: int) -> list[np.ndarray]:
        """A kernel whose tiling module computes its facts and data layouts (a Cube kernel
        taking NC1HWC0-style operands): facts, tiling, layouts in, launch, layouts out."""
        from ..socs import soc_facts
        from ._kernels import pack_tiling
        from ._tiling import evaluate

        host = self.kernel.host
        sf = soc_facts(self.soc_name)
        capacities = {"l1Bytes": int(sf["l1_bytes"]), "l0aBytes": int(sf["l0a_bytes"]),
                      "l0bBytes": int(sf["l0b_bytes"]), "l0cBytes": int(sf["l0c_bytes"])}
        shapes = [None if a is None else tuple(a.shape) for a in arrays]
        facts.update(host.call_facts(shapes, attrs, capacities))
        block_dim, computed = evaluate(self.kernel.tiling, facts)
        values = {**facts, **computed}
        why = host.tiling_problem(values)
        if why:
            raise DeviceUnavailable(f"{self.device}: {self.kernel.op}'s AI Core kernel on "
                                    f"{self.soc_name}: {why} (on the NPU such a node runs on "
                                    "AI CPU)")
        first = next(a for a in arrays if a is not None)
        laid = host.kernel_inputs(arrays, attrs, values)
        self._execute(dtype_name(first.dtype), laid, block_dim,
                      pack_tiling(self.spec, self.kernel, computed, attrs, total))
        return list(host.kernel_outputs(laid, values))

    def estimate(self, inputs: Sequence[Any], attrs: dict[str, Any] | None = None, *,
                 costs: Mapping[str, Any] | str | Path | None = None) -> Estimate:
        """Run the kernel as :meth:`run` does and estimate its time on the SoC from the trace of
        its pipes (an estimate from opsdk's model, never an NPU time; see
        docs/ascendc_model.md, "The estimate"). ``costs`` overrides figures of the cost
        table (:func:`~opsdk.ascend.ascendc._estimate.costs_for`).

        Example:
            >>> op = AscendcModel("operators/thresholded_relu", soc="Ascend910B3")  # doctest: +SKIP
            >>> op.estimate([np.ones(1 << 20, np.float32)], {"alpha": 0.5}).bound  # doctest: +SKIP
            'MTE2-bound'
        """
        import tempfile

        from ._estimate import costs_for, read_trace

        table = costs_for(self.soc_name, costs, core="aic" if self._cube_kernel else "aiv")
        fd, path = tempfile.mkstemp(prefix="opsdk-estimate-", suffix=".csv")
        os.close(fd)
        try:
            self._timing = (table.encoded().encode(), path.encode())
            outputs = self.run(inputs, attrs)
            blocks = read_trace(Path(path))
        finally:
            self._timing = None
            os.unlink(path)
        return Estimate(self.spec.name, self.soc_name, table, blocks, self._last_block_dim,
                        self.cores, outputs)

    def _applicable(self, types: list[TensorType | None], outs: list[TensorType],
                    attrs: dict[str, Any]) -> None:
        k = self.kernel
        if k.needs_same_shape:
            for p, t in zip(self.spec.inputs, types, strict=False):
                if t is not None and tuple(t.shape) != tuple(outs[0].shape):
                    raise DeviceUnavailable(
                        f"{self.device}: the generated AI Core kernel of {k.op} takes inputs of "
                        f"the output's shape; input {p.name!r} has shape {list(t.shape)}, the "
                        f"output {list(outs[0].shape)} (broadcast with Expand first; on the "
                        "NPU such a node runs on AI CPU)")
        if k.applicable is not None:
            why = k.applicable([None if t is None else tuple(t.shape) for t in types], attrs)
            if why:
                raise DeviceUnavailable(f"{self.device}: {k.op}'s AI Core kernel: {why}")

    def _launch(self, dtype: str, arrays: list[np.ndarray | None], facts: dict[str, int],
                attrs: dict[str, Any], total: int) -> None:
        from ._kernels import pack_tiling
        from ._tiling import evaluate

        block_dim, computed = evaluate(self.kernel.tiling, facts)
        self._execute(dtype, arrays, block_dim,
                      pack_tiling(self.spec, self.kernel, computed, attrs, total))

    def _execute(self, dtype: str, arrays: list[np.ndarray | None], block_dim: int,
                 tiling_bytes: bytes) -> None:
        self._calls += 1
        launch(self._lib(dtype), self.kernel.io_names, arrays, block_dim, tiling_bytes,
               ub_bytes=self.ub_bytes, soc=self.soc, seed=self.seed * 1000003 + self._calls,
               threads=self.threads, timing=self._timing)
        self._last_block_dim = block_dim


def launch(fn: Any, names: Sequence[str], arrays: Sequence[np.ndarray | None], block_dim: int,
           tiling_bytes: bytes, *, ub_bytes: int, soc: str, seed: int = 0, threads: int = 1,
           timing: tuple[bytes, bytes] | None = None) -> None:
    """Run a kernel built against the model (``fn``: its driver's ``opsdk_ascendc_launch``)
    on ``arrays`` (its GM arguments, by ``names``) with the race checker and the chip's
    limits; ``timing`` is ``(costs, trace file)`` while estimating. A broken constraint raises
    :class:`~opsdk.errors.KernelError`; a benign finding warns :class:`AscendcModelWarning`.
    The runner behind ``opsdk bench --device ascendc-model`` and ``opsdk ascendc run``.

    Example:
        >>> launch(fn, ["x", "y"], [x, y], 8, b"",
        ...        ub_bytes=196608, soc="ascend910b")  # doctest: +SKIP
    """
    tiling = ctypes.create_string_buffer(tiling_bytes)
    n = len(arrays)
    gm = (ctypes.c_void_p * n)(*[a.ctypes.data if a is not None and a.size else None
                                 for a in arrays])
    sizes = (ctypes.c_uint64 * n)(*[0 if a is None else a.nbytes for a in arrays])
    c_names = (ctypes.c_char_p * n)(*[s.encode() for s in names])
    err = ctypes.create_string_buffer(4096)
    costs, trace = timing if timing is not None else (None, None)
    rc = fn(gm, sizes, c_names, n, tiling, block_dim, ub_bytes, soc.encode(), seed, threads,
            err, len(err), costs, trace)
    if rc:
        raise KernelError(f"ascendc-model: {err.value.decode(errors='replace')}")
    if err.value:  # a pass with a finding: blocks overlapping with the same values
        text = err.value.decode(errors="replace")
        warnings.warn(AscendcModelWarning(f"ascendc-model: {text}"), stacklevel=4)


def _arch_macros(soc: str) -> list[str]:
    """The model's per-SoC macros: ``__CCE_AICORE__`` (as CANN's compiler and CPU-debug build
    define it; ``__NPU_ARCH__`` and ``__DAV_*__`` follow from it in opsdk_model_core.h), the UB
    layout, the APIs it has, the SoC version and its Cube buffers' bytes (data/socs.json)."""
    from ..aicore_apis import aicore_arch, api_flags
    from ..socs import compute_unit, soc_facts, soc_table, soc_version_of

    arch = aicore_arch(soc)
    facts = soc_facts(soc)
    version = soc if soc in soc_table() else soc_version_of(compute_unit(soc))
    cube = {"L1": "l1_bytes", "L0A": "l0a_bytes", "L0B": "l0b_bytes", "L0C": "l0c_bytes",
            "BT": "bt_bytes"}
    return [f"-D__CCE_AICORE__={arch.cce_aicore}",
            f"-DOPSDK_AICORE_ARCH={arch.cce_aicore}", f"-DOPSDK_TMP_UB_OFFSET={arch.tmp_ub_offset}",
            f"-DOPSDK_UB_STACK_END={arch.stack_end}", f'-DOPSDK_SOC_VERSION="{version}"',
            *(f"-DOPSDK_{name}_BYTES={int(facts[key])}" for name, key in cube.items()),
            *(f"-DOPSDK_HAS_{api}={flag}" for api, flag in api_flags(soc).items())]


def _errors(stderr: str, limit: int = 30) -> str:
    lines = [x for x in stderr.splitlines() if "error" in x or "static assertion" in x]
    return "\n".join((lines or stderr.splitlines())[:limit])
