"""The cpu executor in a worker process, for validation runs (``opsdk test``, ``opsdk check``).

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
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import KernelCrash, KernelError
from ._procs import (
    Running,
    Worker,
    arm_worker,
    kill_group,
    reply_error,
    signal_name,
    stop_children,
)

__all__ = ["IsolatedOperator"]

_POLL_S = 0.05
_LOAD_LIMIT_S = 600.0  # a hung load only: importing takes seconds, more under load
_SANITIZER_LINE = re.compile(r"(SUMMARY: \w+Sanitizer: .*|\S+:\d+:\d+: runtime error: .*)")
_EXIT_LINE = re.compile(r"opsdk: the kernel of \S+ called (\w+\(-?\d+\))")


class IsolatedOperator:
    """Runs ``op`` (an :class:`~opsdk.runtime.cpu.Operator`) in a worker process.

    Args:
        op: the loaded operator (its spec, folder and module file are reused).
        timeout: seconds one call may take before the worker is stopped (None: no limit).
        module: the module file the worker loads (default ``op``'s, e.g. a sanitizer build).
        env: extra environment of the worker (e.g. ``LD_PRELOAD`` for a sanitizer runtime).
        guard: put guard regions around outputs and check them after each call (off for
            sanitizer builds, which report the access with its ``file:line`` instead).

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
    ) -> None:
        self.spec = op.spec
        self.folder = op.folder
        self.timeout = timeout
        self._module = Path(module or op.module.__file__)
        self._env = dict(env or {})
        self._guard = guard
        self._worker: Worker | None = None
        self._turn = threading.RLock()  # one call on the worker's connection at a time

    @property
    def name(self) -> str:
        return str(self.spec.name)

    def __repr__(self) -> str:
        return f"<opsdk.IsolatedOperator {self.spec.domain}::{self.spec.name} (cpu, worker)>"

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
    def _start(self) -> Connection:
        if self._worker is not None and self._worker.alive():
            return self._worker.conn
        self.close()
        self._worker = Worker(sys.executable, "opsdk.runtime.isolated", self._env)
        self._worker.conn.send((str(self.folder), str(self._module), self._guard))
        reply = self._wait(self._worker.conn, limit=_LOAD_LIMIT_S)
        if reply[0] == "error":
            self.close()
            raise KernelError(f"{self.name}: the worker could not load {self._module}: {reply[2]}")
        return self._worker.conn

    def _wait(self, conn: Connection, limit: float | None = None) -> Any:
        """The worker's reply; a dead worker or a call past the time limit is KernelCrash."""
        limit = self.timeout if limit is None else limit
        deadline = None if limit is None else time.monotonic() + limit
        assert self._worker is not None
        proc = self._worker.proc
        while True:
            if conn.poll(_POLL_S):
                try:
                    return conn.recv()
                except (EOFError, OSError):
                    break  # died while answering
            if proc.poll() is not None:
                break
            if deadline is not None and time.monotonic() > deadline:
                self.close()
                raise KernelCrash(
                    f"{self._where()}: the kernel did not finish within {limit:g} s and was "
                    "stopped (an endless loop? raise the limit with --timeout)"
                )
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
        return self.name + (f" ({self.folder / 'kernel.cpp'})" if self.folder else "")

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
             running: Running | None = None) -> tuple[Any, ...]:
    """One call in the worker: outputs, and any input the kernel modified."""
    inputs = [_unpack(x) for x in packed]
    before = [None if x is None else x.copy() for x in inputs]
    if running is not None:
        running.set(op.spec.name)
    try:
        outs = op.run(inputs, attrs)
    finally:
        if running is not None:
            running.clear()
        forked = stop_children()
    if forked:
        raise KernelCrash(
            f"{op._where()}: the kernel started {forked} child process{'es' * (forked > 1)} "
            "(fork), stopped after the call; a kernel must not fork (use ctx.parallel_for for "
            "threads)"
        )
    changed = {
        i: x for i, (x, b) in enumerate(zip(inputs, before))
        if x is not None and b is not None and x.tobytes() != b.tobytes()
    }
    return ("ok", outs, changed)


def _serve(fd: int) -> None:
    """The worker: load the operator, then answer ``(inputs, attrs)`` requests until EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides when to stop us
    lifeline, parent = arm_worker()
    running = Running.from_env()
    conn = Connection(fd)
    folder, module, guard = conn.recv()
    try:
        from ..registry import load_spec
        from .cpu import Operator, load_module

        op = Operator(load_spec(folder), load_module(Path(module)), Path(folder))
        op.guard = guard
    except Exception as e:
        conn.send(("error", type(e).__name__, str(e)))
        return
    watch = getattr(op.module, "watch_lifeline", None)
    if lifeline >= 0 and watch is not None:
        watch(lifeline, parent)  # natively: a kernel holding the GIL cannot stop the watcher
    conn.send(("ready",))
    while True:
        try:
            inputs, attrs = conn.recv()
        except EOFError:
            return
        try:
            conn.send(_run_one(op, inputs, attrs, running))
        except Exception as e:
            conn.send(("error", type(e).__name__, str(e)))


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
