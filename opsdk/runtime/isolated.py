"""An executor in a worker process, for validation runs (``opsdk test``, ``opsdk check``): the
cpu executor, or any device that runs kernels on this host (``ascendc-model``,
``onnxruntime``, ...; :meth:`IsolatedOperator.of_device`).

A kernel that segfaults, aborts, trips a sanitizer, writes past its outputs, never
returns, calls ``exit``/``_exit`` or forks takes only the worker down: :meth:`IsolatedOperator.run`
raises :class:`~opsdk.errors.KernelCrash` naming the operator and what happened (the signal,
the sanitizer's ``file:line``, the exit call, the child process) and the next call starts a
fresh worker. The worker dies with its caller and takes what its kernel started with it
(:mod:`opsdk.runtime._procs`); Ctrl-C in the caller stops it at once. What the kernel prints
(stdout and stderr) is passed on to the caller's stderr. In-process calls (``op(x)``) do not
use this: it costs a round trip per call.

Example:
    >>> import numpy as np, opsdk
    >>> from opsdk.runtime.isolated import IsolatedOperator
    >>> op = IsolatedOperator(opsdk.load("ThresholdedRelu"), timeout=60)  # doctest: +SKIP
    >>> op.run([np.array([0.5, 2.0], np.float32)], {"alpha": 1.0})  # doctest: +SKIP
    [array([0., 2.], dtype=float32)]
    >>> model = IsolatedOperator.of_device(  # doctest: +SKIP
    ...     AscendcModel("operators/gelu"), Path("operators/gelu"),
    ...     "opsdk.testing._devices:open_device", "ascendc-model", {}, timeout=60)
"""

from __future__ import annotations

import importlib
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import KernelCrash, KernelError
from ._procs import (
    Channel,
    ChannelJunk,
    Running,
    Worker,
    arm_worker,
    junk_message,
    kill_group,
    reply_error,
    signal_name,
    stop_children,
    watch_natively,
)

__all__ = ["IsolatedOperator"]

_LOAD_LIMIT_S = 600.0  # a hung load only: importing takes seconds, more under load
_SANITIZER_LINE = re.compile(r"(SUMMARY: \w+Sanitizer: .*|\S+:\d+:\d+: runtime error: .*)")
_EXIT_LINE = re.compile(r"opsdk: the kernel of \S+ called (\w+\(-?\d+\))")


class DeviceOpener(NamedTuple):
    """How a worker opens a device's executor: ``function(device, folder, spec, options)``,
    ``function`` named ``"module:function"`` (imported by name: the worker's floor imports
    no wing)."""

    function: str
    device: str
    options: dict[str, Any]
    folder: str


class IsolatedOperator:
    """Runs ``op`` (an :class:`~opsdk.runtime.cpu.Operator`) in a worker process.

    Args:
        op: the loaded operator (its spec, folder and module file are reused).
        timeout: seconds one call may take before the worker is stopped (None: no limit).
        module: the module file the worker loads (default ``op``'s, e.g. a sanitizer build).
        env: extra environment of the worker (e.g. ``LD_PRELOAD`` for a sanitizer runtime).
        guard: put guard regions around outputs and check them after each call (off for
            sanitizer builds, which report the access with its ``file:line`` instead).
        opener: run another device's executor instead (see :meth:`of_device`).

    Calls from several threads take turns on the one worker, each getting its own reply.
    """

    def __init__(
        self,
        op: Any,
        *,
        timeout: float | None = None,
        module: Path | None = None,
        env: Mapping[str, str] | None = None,
        guard: bool = True,
        opener: DeviceOpener | None = None,
    ) -> None:
        self.spec = op.spec
        self.folder = Path(opener.folder) if opener is not None else op.folder
        self.timeout = timeout
        self._env = dict(env or {})
        self._worker: Worker | None = None
        self._turn = threading.RLock()  # one call on the worker's connection at a time
        self._prepare = getattr(op, "prepare", None)  # runs here, before each call
        if opener is None:
            self._module = Path(module or op.module.__file__)
            self._load: tuple[Any, ...] = ("cpu", str(self.folder), str(self._module), guard)
            self._label = self.name + (f" ({self.folder / 'kernel.cpp'})" if self.folder else "")
        else:
            self._module = Path(f"the {opener.device} executor of {self.folder}")
            self._load = ("open", *opener)
            source = getattr(op, "source", "")
            self._label = f"{self.name} ({opener.device}{', ' + source if source else ''})"

    @classmethod
    def of_device(cls, executor: Any, folder: Path, opener: str, device: str,
                  options: Mapping[str, Any], *, timeout: float | None = None
                  ) -> IsolatedOperator:
        """``executor`` (a device's, of the operator in ``folder``, opened here) run in a
        worker, which opens its own with
        ``opener`` (``"module:function"``, called as ``function(device, folder, spec,
        options)``; ``options`` must pickle). ``executor.prepare(inputs, attrs)``, where it
        exists, runs here before each call (building the kernel, say, so that the time
        limit counts the kernel alone); ``executor.source`` names its kernel in errors.

        Example:
            >>> IsolatedOperator.of_device(  # doctest: +SKIP
            ...     model, Path("operators/gelu"), "opsdk.testing._devices:open_device",
            ...     "ascendc-model", {}, timeout=60)
            <opsdk.IsolatedOperator com.opsdk::Gelu (ascendc-model, worker)>
        """
        return cls(executor, timeout=timeout,
                   opener=DeviceOpener(opener, device, dict(options), str(folder)))

    @property
    def name(self) -> str:
        return str(self.spec.name)

    def __repr__(self) -> str:
        device = self._load[2] if self._load[0] == "open" else "cpu"
        return f"<opsdk.IsolatedOperator {self.spec.domain}::{self.spec.name} ({device}, worker)>"

    def __call__(self, *inputs: Any, **attrs: Any) -> Any:
        outs = self.run(list(inputs), attrs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(
        self,
        inputs: Sequence[Any],
        attrs: dict[str, Any] | None = None,
        outputs: list[np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """Run the kernel in the worker; with ``outputs`` given, copy the results into them."""
        if self._prepare is not None:
            self._prepare(inputs, attrs)
        with self._turn:
            conn = self._start()
            try:
                conn.send(([_pack(x) for x in inputs], dict(attrs or {})))
                reply = self._wait(conn)
            except BaseException:  # Ctrl-C or a crash: never leave a worker running
                self.close()
                raise
            finally:
                self._forward_stderr()
        if reply[0] == "error":
            raise reply_error(reply)
        for category, message in reply[3]:  # what the executor warned in the worker
            warnings.warn(message, _warning_class(category), stacklevel=2)
        outs: list[np.ndarray] = reply[1]
        for i, changed in reply[2].items():  # the kernel wrote into an input: so do we
            inputs[i][...] = changed
        if outputs is not None:
            for dst, src in zip(outputs, outs, strict=True):
                dst[...] = src
            return outputs
        return outs

    def close(self) -> None:
        """Stop the worker and everything its kernel started (a new one starts on the next call)."""
        with self._turn:
            worker, self._worker = self._worker, None
            if worker is not None:
                worker.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    # ------------------------------------------------------------------ worker
    def _start(self) -> Channel:
        if self._worker is not None and self._worker.alive() and not self._worker.conn.poll():
            return self._worker.conn
        self.close()  # gone, or bytes wait that no request asked for: a fresh worker
        self._worker = Worker(sys.executable, "opsdk.runtime.isolated", self._env)
        self._worker.conn.send(self._load)
        reply = self._wait(self._worker.conn, limit=_LOAD_LIMIT_S)
        if reply[0] == "error":
            self.close()
            if reply[1] == "DeviceUnavailable":
                raise reply_error(reply)
            raise KernelError(f"{self.name}: the worker could not load {self._module}: {reply[2]}")
        return self._worker.conn

    def _wait(self, conn: Channel, limit: float | None = None) -> Any:
        """The worker's reply; a dead worker, a call past the time limit or bytes that are
        no reply are KernelCrash."""
        limit = self.timeout if limit is None else limit
        deadline = None if limit is None else time.monotonic() + limit
        assert self._worker is not None
        proc = self._worker.proc
        try:
            return conn.recv(deadline, self._worker.alive)
        except TimeoutError:
            self.close()
            raise KernelCrash(
                f"{self._where()}: the kernel did not finish within {limit:g} s and was "
                "stopped (an endless loop? raise the limit with --timeout)"
            ) from None
        except ChannelJunk as e:
            self.close()
            raise KernelCrash(f"{self._where()}: {junk_message(e)}; the worker was stopped") \
                from None
        except (EOFError, OSError):
            pass  # died, perhaps while answering
        raise KernelCrash(self._crash_message(proc))

    def _crash_message(self, proc: subprocess.Popen[bytes]) -> str:
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        kill_group(proc.pid)  # whatever the kernel started dies with the worker
        text = self._worker.new_output(echo=False) if self._worker is not None else ""
        running = bool(self._worker.running.read()) if self._worker is not None else False
        sanitizer, exited = _SANITIZER_LINE.findall(text), _EXIT_LINE.findall(text)
        detail = sanitizer[0] if sanitizer else ""
        if code < 0:
            how = f"crashed with {signal_name(-code)} (signal {-code})"
        elif detail:
            how = f"failed a sanitizer check (worker exit status {code})"
        elif exited:
            how = (f"called {exited[0]}, which ended the worker process (a kernel must return "
                   "or throw, never end the process)")
        elif running:  # no hook of the operator module saw it: an exit from a library
            how = (f"ended the worker process with exit status {code} while it ran (an exit "
                   "from code outside the operator module, e.g. a library it calls; a kernel "
                   "must return or throw, never end the process)")
        else:
            how = f"ended the worker process with exit status {code}"
        return f"{self._where()}: the kernel {how}" + (f": {detail}" if detail else "")

    def _where(self) -> str:
        return self._label

    def _forward_stderr(self) -> None:
        """What the kernel printed to stderr, passed on to ours."""
        if self._worker is not None:
            self._worker.new_output(echo=True)


def _pack(x: Any) -> Any:
    """An input as sent to the worker: a non-contiguous view travels with its buffer, so
    the kernel sees the same strides as in-process."""
    if x is None:
        return None
    a = np.asarray(x)
    base = a.base
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if a.flags.c_contiguous or not isinstance(base, np.ndarray) or not base.flags.c_contiguous:
        return a
    offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return ("view", base.view(np.uint8).reshape(-1), offset, a.shape, a.strides, a.dtype)


def _unpack(item: Any) -> Any:
    if isinstance(item, tuple) and item and item[0] == "view":
        _, buf, offset, shape, strides, dtype = item
        return np.ndarray(shape, dtype, buffer=buf, offset=offset, strides=strides)
    return item


def _run_one(op: Any, packed: list[Any], attrs: dict[str, Any],
             running: Running | None = None, where: str = "") -> tuple[Any, ...]:
    """One call in the worker: outputs, any input the kernel modified, and what the executor
    warned (category, message)."""
    inputs = [_unpack(x) for x in packed]
    before = [None if x is None else x.copy() for x in inputs]
    if running is not None:
        running.set(op.spec.name)
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            outs = op.run(inputs, attrs)
    finally:
        if running is not None:
            running.clear()
        forked = stop_children()
    if forked:
        raise KernelCrash(
            f"{where or op._where()}: the kernel started {forked} child "
            f"process{'es' * (forked > 1)} (fork), stopped after the call; a kernel must not "
            "fork (use ctx.parallel_for for threads)"
        )
    changed = {
        i: x for i, (x, b) in enumerate(zip(inputs, before))
        if x is not None and b is not None and x.tobytes() != b.tobytes()
    }
    said = [(f"{w.category.__module__}:{w.category.__qualname__}", str(w.message))
            for w in warned]
    return ("ok", outs, changed, said)


def _warning_class(name: str) -> type[Warning]:
    """The warning class ``"module:qualname"`` names (UserWarning where it cannot be found)."""
    module, _, qualname = name.partition(":")
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return UserWarning
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning


def _open(how: tuple[Any, ...]) -> tuple[Any, str]:
    """The executor the worker runs, from the caller's first message (see ``_load``), and
    how errors name it (empty: the executor's own ``_where``)."""
    from ..registry import load_spec

    if how[0] == "cpu":
        _, folder, module, guard = how
        from .cpu import Operator, load_module

        op = Operator(load_spec(folder), load_module(Path(module)), Path(folder))
        op.guard = guard
        return op, ""
    _, function, device, options, folder = how  # a DeviceOpener
    module_name, _, name = function.partition(":")
    opener = getattr(importlib.import_module(module_name), name)
    op = opener(device, Path(folder), load_spec(folder), options)
    return op, f"{op.spec.name} ({device})"


def _serve(fd: int) -> None:
    """The worker: open the executor, then answer ``(inputs, attrs)`` requests until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides when to stop us
    lifeline, parent = arm_worker()
    running = Running.from_env()
    conn = Channel(fd)
    how = conn.recv()
    try:
        op, where = _open(how)
    except Exception as e:
        conn.send(("error", type(e).__name__, str(e)))
        return
    watch_natively(lifeline, parent, getattr(op, "module", None))
    conn.send(("ready",))
    while True:
        try:
            inputs, attrs = conn.recv()
        except EOFError:
            return
        try:
            conn.send(_run_one(op, inputs, attrs, running, where))
        except Exception as e:
            conn.send(("error", type(e).__name__, str(e)))


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
