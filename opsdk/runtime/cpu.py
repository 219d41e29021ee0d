"""The cpu executor: one operator's kernel, built from kernel.cpp, called from Python.

Inputs are checked against the spec, outputs are allocated from the spec's inference and
passed to the kernel (destination passing), the GIL is released during the kernel, and a
contiguous input of a declared dtype is never copied.

Example:
    >>> import numpy as np, opsdk
    >>> relu = opsdk.load("ThresholdedRelu")  # doctest: +SKIP
    >>> relu(np.array([0.5, 2.0], np.float32), alpha=1.0)  # doctest: +SKIP
    array([0., 2.], dtype=float32)
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .._limits import int_range_problem
from ..dtypes import dtype_name, native_order, to_numpy
from ..errors import KernelCrash, KernelError, SpecError
from ..spec import OpSpec, TensorType
from ._registration import KernelEntry, dispatch_table, registrations

__all__ = [
    "Operator",
    "load_module",
    "output_pool_stats",
    "set_message_fd",
    "set_output_pool_limit",
    "set_spin_microseconds",
    "park_threads",
    "thread_pool_state",
]

_MODULES: dict[str, ModuleType] = {}
#: the spin time given to set_spin_microseconds, for modules loaded later (empty: default)
_SPIN_US: list[int] = []
#: the fd given to set_message_fd, for modules loaded later (empty: stderr)
_MESSAGE_FD: list[int] = []


def load_module(path: Path) -> ModuleType:
    """Import a built ``_opsdk_kernels`` module from its file (each file once per process)."""
    key = str(path.resolve())
    if key in _MODULES:
        return _MODULES[key]
    # The init symbol is PyInit__opsdk_kernels (the last dotted component); the unique
    # prefix keeps pybind11's per-name module cache from handing back another operator.
    name = f"_opsdk_{hashlib.sha1(key.encode()).hexdigest()[:16]}._opsdk_kernels"
    loader = importlib.machinery.ExtensionFileLoader(name, key)
    spec = importlib.util.spec_from_file_location(name, key, loader=loader)
    if spec is None:  # pragma: no cover - only for unreadable paths
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    sys.modules[name] = module
    _MODULES[key] = module
    if _SPIN_US and hasattr(module, "set_spin_microseconds"):
        module.set_spin_microseconds(_SPIN_US[-1])
    if _MESSAGE_FD and hasattr(module, "set_message_fd"):
        module.set_message_fd(_MESSAGE_FD[-1])
    return module


def set_message_fd(fd: int) -> None:
    """Where kernel modules write their last words (a fatal signal or an ``exit`` inside a
    kernel names the operator): stderr by default. A test runner that captures fd 2 into a
    file gives a copy of the real stderr made before capture began, so the message outlives
    the process. Applies to every loaded operator module and to those loaded later.

    Example:
        >>> set_message_fd(os.dup(2))  # doctest: +SKIP
    """
    _MESSAGE_FD[:] = [int(fd)]
    for module in _MODULES.values():
        if hasattr(module, "set_message_fd"):
            module.set_message_fd(int(fd))


def set_spin_microseconds(us: int) -> None:
    """How long idle kernel threads poll for the next call before they sleep.

    After a parallel kernel, the worker threads of its pool poll for the next job for this
    many microseconds (default 300, or ``$OPSDK_SPIN_US``), so back-to-back calls do not
    pay for waking a sleeping thread; polling is bounded, an idle process uses no CPU once
    the time is up. 0 makes workers sleep at once (many processes sharing few cores).
    Applies to every loaded operator module and to those loaded later.

    Example:
        >>> set_spin_microseconds(0)  # doctest: +SKIP
    """
    if not 0 <= us <= 1_000_000:
        raise ValueError(
            f"set_spin_microseconds: us must be in 0..1000000 (1 s), got {us}; "
            "0 turns polling off"
        )
    _SPIN_US[:] = [int(us)]
    for module in _MODULES.values():
        if hasattr(module, "set_spin_microseconds"):
            module.set_spin_microseconds(int(us))


def park_threads() -> None:
    """Put every loaded module's polling kernel threads to sleep now.

    For code about to hand the cores to another thread pool (e.g. a long ONNX Runtime run
    right after a kernel); the next kernel call wakes the workers again.

    Example:
        >>> park_threads()  # doctest: +SKIP
    """
    for module in _MODULES.values():
        park = getattr(module, "park_workers", None)
        if park is not None:
            park()


def thread_pool_state() -> dict[str, int]:
    """What the kernel threads of the loaded modules do now ({} before any is loaded).

    All loaded operator modules share one pool. ``workers`` is the number of worker threads
    it started (on the first parallel call; the calling thread not counted), ``sleeping``
    how many of them are asleep now (they use no CPU until the next call), ``polling`` how
    many poll for the next call (:func:`set_spin_microseconds`). The counters only grow:
    ``spins_expired`` counts the times a worker polled for the whole spin time and then
    slept, ``spins_parked`` the times :func:`park_threads` ended a worker's polling.

    Example:
        >>> s = thread_pool_state()  # doctest: +SKIP
        >>> s["sleeping"] == s["workers"]  # no kernel thread polls or computes  # doctest: +SKIP
        True
    """
    for module in _MODULES.values():
        if hasattr(module, "thread_pool_state"):
            return dict(module.thread_pool_state())
    return {}


def output_pool_stats() -> dict[str, int]:
    """The output memory pool of the loaded operator modules ({} before any is loaded).

    Outputs of 256 KiB or more come from one process-wide pool of blocks keyed by size: a
    block returns to it when the output array and every view of it are gone, and the next
    output of that size reuses it (no page faults, warm caches). ``cached_bytes`` is what
    the pool holds free now, ``hits`` and ``misses`` count reuses and fresh allocations.

    Example:
        >>> import numpy as np, opsdk
        >>> relu = opsdk.load("ThresholdedRelu")  # doctest: +SKIP
        >>> y = relu(np.ones(1 << 20, np.float32)); del y  # doctest: +SKIP
        >>> output_pool_stats()["cached_bytes"]  # doctest: +SKIP
        4194304
    """
    for module in _MODULES.values():
        if hasattr(module, "output_pool_stats"):
            return dict(module.output_pool_stats())
    return {}


def set_output_pool_limit(nbytes: int) -> None:
    """Cap the bytes the output pool keeps free for reuse (0 turns pooling off).

    The default is 1 GiB, or ``$OPSDK_OUTPUT_POOL_MB`` MiB; memory held by live outputs
    is never counted. Lowering the limit frees the blocks above it at once.

    Example:
        >>> set_output_pool_limit(256 << 20)  # doctest: +SKIP
    """
    if not 0 <= nbytes < 2**63:
        raise ValueError(f"set_output_pool_limit: nbytes must be 0 to 2**63-1 (a C++ size), "
                         f"got {nbytes}; pass the bytes to keep free, e.g. {256 << 20}")
    for module in _MODULES.values():
        if hasattr(module, "set_output_pool_limit"):
            module.set_output_pool_limit(int(nbytes))


#: The vectorcall subclass of Operator (``vectorcall_subclass``, csrc/py/vectorcall.h), once.
_VECTORCALL_TYPE: dict[str, type] = {}


class Operator:
    """A callable operator: ``op(*inputs, **attrs)`` runs the C++ kernel on the CPU."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Operator:
        # Operators are made as instances of a C-defined subclass whose instances CPython
        # calls by vectorcall (no argument tuple or keyword dict, no Python frame); modules
        # of older wheels lack it and get the plain class.
        module: Any = args[1] if len(args) > 1 else kwargs.get("module")
        if cls is Operator and hasattr(module, "vectorcall_subclass"):
            if "type" not in _VECTORCALL_TYPE:
                _VECTORCALL_TYPE["type"] = module.vectorcall_subclass(Operator)
            cls = _VECTORCALL_TYPE["type"]
        return super().__new__(cls)

    def __init__(self, spec: OpSpec, module: ModuleType, folder: Path | None = None) -> None:
        self.spec = spec
        self.folder = folder
        self.module = module
        self._table: dict[tuple[str, ...], KernelEntry] = dispatch_table(
            spec, registrations(spec, module)
        )
        self._run = module.run
        self._n_inputs = len(spec.inputs)
        self._n_required = sum(1 for i in spec.inputs if not i.optional)
        self._plans: dict[
            tuple[Any, ...], tuple[KernelEntry, list[tuple[tuple[int, ...], Any]]]
        ] = {}
        #: guard regions around every output opsdk allocates, checked after each call
        #: (``OPSDK_DEBUG=1``, and always in validation workers); the C++ fast path is off.
        self.guard = os.environ.get("OPSDK_DEBUG", "") not in ("", "0")
        self._call = self._slow_call if self.guard else self._fast_caller()
        if type(self) is _VECTORCALL_TYPE.get("type"):
            module.enable_vectorcall(self)

    def __copy__(self) -> Operator:
        """Another operator over the same kernel module (the vectorcall slot is C state)."""
        return Operator(self.spec, self.module, self.folder)

    def __deepcopy__(self, memo: dict[int, Any]) -> Operator:
        return self.__copy__()  # a loaded extension module is shared, never copied

    def _fast_caller(self) -> Callable[..., Any]:
        """The C++ fast path (``FastCaller``, csrc/py/fast_call.h), else :meth:`_slow_call`.

        Elementwise ops give their outputs the inputs' one shape; ops with a shape function
        take output shapes from :meth:`_fast_plan`, which the C++ side caches per call
        signature.
        """
        kernels = [
            (
                [to_numpy(d) for d in e.input_dtypes],
                e.index,
                [to_numpy(d) for d in e.output_dtypes],
                list(e.attr_order),
            )
            for e in self._table.values()
        ]
        attrs = [(a.name, a.type, None if a.required else a.default) for a in self.spec.attrs]
        n = len(self.spec.inputs)
        make = getattr(self.module, "fast_caller", None)  # absent in older wheels' modules
        if make is None:
            return self._slow_call
        planner = None if self.spec.elementwise else self._fast_plan
        n_req = n if planner is None else self._n_required
        caller: Callable[..., Any]
        try:  # a kernel error raises KernelError from C++: the kernel runs once
            caller = make(n_req, n, kernels, attrs, self._slow_call, planner,
                          on_error=self._kernel_failed)
            return caller
        except TypeError:  # a module of an older wheel: kernel errors take the fallback
            pass
        if planner is None:
            caller = make(n, n, kernels, attrs, self._slow_call)
            return caller
        try:
            caller = make(n_req, n, kernels, attrs, self._slow_call, planner)
        except TypeError:  # older still: its fast path is for elementwise ops only
            return self._slow_call
        return caller

    def _fast_plan(self, *inputs: Any, **attrs: Any) -> tuple[int, list[tuple[int, ...]]]:
        """The kernel and output shapes of one call signature, for the C++ fast path.

        The checked path's own inference (:meth:`_prepare`, the spec's attribute checks and
        shape function): a bad input raises the same :class:`SpecError` as :meth:`run`.
        The C++ side keeps the answer per (input dtypes, input shapes, attribute values).
        """
        arrays, dts = self._prepare(inputs)
        entry, outs = self._plan(arrays, dts, self.spec.resolve_attrs(attrs))
        return entry.index, [shape for shape, _ in outs]

    def _slow_call(self, *inputs: Any, **attrs: Any) -> Any:
        outs = self.run(list(inputs), attrs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def reference(self) -> Callable[..., Any] | None:
        return self.spec.reference

    @property
    def dtypes(self) -> list[tuple[str, ...]]:
        """The input dtype combinations that have a kernel."""
        return list(self._table)

    def __repr__(self) -> str:
        return f"<opsdk.Operator {self.spec.domain}::{self.spec.name} (cpu)>"

    def __call__(self, *inputs: Any, **attrs: Any) -> Any:
        """``op(*inputs, **attrs)``: the C++ fast path where it applies, else :meth:`run`.

        Loaded operators are called by vectorcall, which forwards to the same ``_call``
        from C (``vectorcall_subclass``, csrc/py/vectorcall.h) with no Python frame between.
        """
        return self._call(*inputs, **attrs)

    def set_num_threads(self, n: int) -> None:
        """Threads the kernel may use (default: all cores, or $OPSDK_NUM_THREADS).

        Example:
            >>> op.set_num_threads(2**40)  # doctest: +SKIP
            SpecError: Gelu: set_num_threads(1099511627776): the thread count is an int32 ...
        """
        if int_range_problem(int(n), "int32"):
            raise SpecError(f"{self.spec.name}: set_num_threads({n}): the thread count is an "
                            f"int32 in C++ (at most {2**31 - 1}); pass the threads to use, e.g. "
                            f"{os.cpu_count() or 1}")
        self.module.set_num_threads(int(n))

    # ------------------------------------------------------------------ calling
    def _prepare(self, inputs: Sequence[Any]) -> tuple[list[np.ndarray | None], list[str | None]]:
        spec = self.spec
        if not (self._n_required <= len(inputs) <= self._n_inputs):
            names = ", ".join(i.name + ("?" if i.optional else "") for i in spec.inputs)
            raise SpecError(
                f"{spec.name}: expected {self._n_required}"
                f"{'' if self._n_required == self._n_inputs else f' to {self._n_inputs}'}"
                f" inputs ({names}), got {len(inputs)}"
            )
        arrays: list[np.ndarray | None] = []
        dts: list[str | None] = []
        for decl, x in zip(spec.inputs, inputs):
            if x is None:
                if not decl.optional:
                    raise SpecError(f"{spec.name}: required input {decl.name!r} is None")
                arrays.append(None)
                dts.append(None)
                continue
            x = native_order(x if isinstance(x, np.ndarray) else np.asarray(x))
            try:
                dts.append(dtype_name(x.dtype))
            except ValueError:
                allowed = ", ".join(spec.allowed_dtypes(decl.type))
                raise SpecError(
                    f"{spec.name}: input {decl.name!r} has dtype {x.dtype}, expected one of "
                    f"{allowed} (see spec.py)"
                ) from None
            arrays.append(x)
        return arrays + [None] * (self._n_inputs - len(arrays)), dts + [None] * (
            self._n_inputs - len(dts)
        )

    def _plan(
        self, arrays: list[np.ndarray | None], dts: list[str | None], attrs: dict[str, Any]
    ) -> tuple[KernelEntry, list[tuple[tuple[int, ...], Any]]]:
        spec = self.spec
        binding = spec.bind_types(dts)
        key = tuple(
            d if d is not None else spec.resolve_type(i.type, binding)
            for i, d in zip(spec.inputs, dts)
        )
        entry = self._table.get(key)
        if entry is None:  # pragma: no cover - dispatch_table guarantees coverage
            raise SpecError(f"{spec.name}: no kernel for input dtypes {key}")
        types_in = [
            TensorType(a.shape, d) if a is not None and d else None for a, d in zip(arrays, dts)
        ]
        out_types = spec.infer(types_in, attrs)
        spec.check_allocation(out_types, attrs)
        outs = []
        for o, t in zip(spec.outputs, out_types):
            if any(not isinstance(d, int) or d < 0 for d in t.shape):
                raise SpecError(
                    f"{spec.name}: inferred output {o.name!r} shape {t.shape} is not concrete"
                )
            outs.append((tuple(d for d in t.shape if isinstance(d, int)), to_numpy(t.dtype)))
        return entry, outs

    def run(
        self,
        inputs: Sequence[Any],
        attrs: dict[str, Any] | None = None,
        outputs: list[np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """Run the kernel; with ``outputs`` given, write into them (no allocation)."""
        arrays, dts = self._prepare(inputs)
        resolved = self.spec.resolve_attrs(attrs or {})
        cache_key = (
            tuple((a.shape, d) if a is not None else None for a, d in zip(arrays, dts)),
            tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in resolved.items()),
        )
        plan = self._plans.get(cache_key)
        if plan is None:
            plan = self._plan(arrays, dts, resolved)
            if len(self._plans) > 512:
                self._plans.clear()
            self._plans[cache_key] = plan
        entry, out_specs = plan
        if not entry.accepts_strided:
            arrays = [
                a if a is None or a.flags.c_contiguous else np.ascontiguousarray(a) for a in arrays
            ]
        guarded = self.guard and outputs is None
        outs = _guarded_outputs(out_specs) if guarded else self._outputs(out_specs, outputs)
        # an output overlapping an input or another output: compute apart, then copy (as NumPy)
        work = outs if outputs is None else _apart(outs, arrays, self.spec.elementwise)
        try:
            self._run(entry.index, arrays, work, [resolved[n] for n in entry.attr_order])
        except RuntimeError as e:
            raise KernelError(f"{e} -- raised by the C++ kernel of {self._where()}") from e
        for dst, src in zip(outs, work):
            if dst is not src:
                dst[...] = src
        if guarded:
            self._check_guards(outs)
        return outs

    def _kernel_failed(self, message: str) -> None:
        """Raise the KernelError of a C++ exception the fast path caught (``message`` is
        ``"<op>: <what>"``), as the checked path does."""
        cause = RuntimeError(message)
        raise KernelError(f"{message} -- raised by the C++ kernel of {self._where()}") from cause

    def _where(self) -> str:
        return self.spec.name + (f" ({self.folder / 'kernel.cpp'})" if self.folder else "")

    def _check_guards(self, outs: list[np.ndarray]) -> None:
        for o, buf in zip(self.spec.outputs, outs):
            bad = _guard_damage(buf)
            if bad:
                raise KernelCrash(
                    f"{self._where()}: the kernel wrote {bad} output {o.name!r} "
                    f"({buf.dtype}{list(buf.shape)}); index with numel() of that output, or "
                    "use at() for bounds-checked access"
                )

    def _outputs(
        self, out_specs: list[tuple[tuple[int, ...], Any]], given: list[np.ndarray] | None
    ) -> list[np.ndarray]:
        if given is None:
            # pooled when large (see output_pool_stats); older wheels' modules lack it
            empty = getattr(self.module, "empty", np.empty)
            return [empty(shape, dt) for shape, dt in out_specs]
        if len(given) != len(out_specs):
            raise SpecError(
                f"{self.spec.name}: expected {len(out_specs)} output buffers, got {len(given)}"
            )
        for o, buf, (shape, dt) in zip(self.spec.outputs, given, out_specs):
            if buf.shape != shape or buf.dtype != dt or not buf.flags.c_contiguous:
                raise SpecError(
                    f"{self.spec.name}: output buffer {o.name!r} is {buf.dtype}{list(buf.shape)}"
                    f"{'' if buf.flags.c_contiguous else ' (non-contiguous)'}, "
                    f"expected contiguous {np.dtype(dt)}{list(shape)}"
                )
        return list(given)


def _apart(
    outs: list[np.ndarray], inputs: list[np.ndarray | None], elementwise: bool
) -> list[np.ndarray]:
    """``outs``, with a temporary in place of each output whose memory may overlap an input
    or an earlier output (NumPy's bounds check). An elementwise kernel may write over an input
    it exactly aliases (same address, shape and strides: ``Session``'s in-place runs); a
    partial overlap, or any overlap of another op (a Softmax reads its row after writing
    it), would let the kernel read what it already wrote.
    """
    work = outs
    overlap = np.may_share_memory
    for i, o in enumerate(outs):
        clash = False
        for x in inputs:
            if x is not None and overlap(o, x) and not (elementwise and _same_view(o, x)):
                clash = True
                break
        if clash or any(overlap(o, p) for p in outs[:i]):
            work = list(work) if work is outs else work
            work[i] = np.empty_like(o)
    return work


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and a.shape == b.shape
        and a.strides == b.strides
    )


_GUARD_BYTES = 64
_GUARD_FILL = 0xA5


def _guarded_outputs(out_specs: list[tuple[tuple[int, ...], Any]]) -> list[np.ndarray]:
    """Output arrays with ``_GUARD_BYTES`` of a fill pattern before and after each."""
    outs = []
    for shape, dt in out_specs:
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize
        raw = np.full(n + 2 * _GUARD_BYTES, _GUARD_FILL, np.uint8)
        outs.append(raw[_GUARD_BYTES : _GUARD_BYTES + n].view(dt).reshape(shape))
    return outs


def _guard_damage(buf: np.ndarray) -> str:
    """'N bytes before' / 'past the end of' when the kernel touched a guard, else ''."""
    raw = buf.base
    while isinstance(raw, np.ndarray) and raw.base is not None and raw.dtype != np.uint8:
        raw = raw.base
    if not isinstance(raw, np.ndarray) or raw.size < 2 * _GUARD_BYTES:
        return ""
    head, tail = raw[:_GUARD_BYTES], raw[raw.size - _GUARD_BYTES :]
    if (head != _GUARD_FILL).any():
        return f"{_GUARD_BYTES - int(np.argmax(head != _GUARD_FILL))} bytes before the start of"
    if (tail != _GUARD_FILL).any():
        return f"{int(np.flatnonzero(tail != _GUARD_FILL)[-1]) + 1} bytes past the end of"
    return ""
