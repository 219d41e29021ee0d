"""``IsolatedSession``: :class:`~opsdk.onnx.Session` in a worker process that a crash cannot
take down with its caller.

A server (the Triton CPU target's ``model.py``) runs its graph through this: a kernel that
segfaults, aborts, calls ``exit`` or forks ends only the worker. The call that did it
raises :class:`~opsdk.errors.KernelCrash` naming the operator (from the line the operator
module's fatal-signal and exit hooks write, see entry.cpp), a fresh worker starts at once,
and the next call runs in it. The worker dies with its caller and takes whatever its
kernels started with it (:mod:`opsdk.runtime._procs`). One call costs a round trip to the
worker (inputs and outputs are pickled through a socket pair).

Example:
    >>> import numpy as np
    >>> from opsdk.onnx import IsolatedSession
    >>> sess = IsolatedSession("model_with_custom_op.onnx", threads=1)  # doctest: +SKIP
    >>> y, = sess.run(None, {"x": np.ones((2, 4), np.float32)})  # doctest: +SKIP
    >>> sess.close()  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import KernelCrash, KernelError
from ..runtime import (
    Channel,
    ChannelJunk,
    Running,
    Worker,
    arm_worker,
    has_children,
    junk_message,
    kernel_last_words,
    reply_error,
    signal_name,
    stop_children,
    watch_natively,
)
from ._session import IOInfo

__all__ = ["IsolatedSession"]

_LOAD_LIMIT_S = 600.0  # a hung load only: loading takes seconds, more under load


class IsolatedSession:
    """:class:`~opsdk.onnx.Session` (``path``, ``threads``) run in a worker process.

    The worker starts here (a model that fails to load raises :class:`KernelError` here)
    and again right after a crash, so a caller that keeps calling keeps being served;
    :meth:`close` stops it. Calls from several threads take turns (the worker runs one
    request at a time): each gets its own reply, and a crash restarts the worker once.
    A call running longer than ``timeout`` seconds (None: no limit) stops the worker and
    raises :class:`KernelCrash` naming the operator and node that ran; so do bytes on the
    worker's channel that are no reply (a kernel writing to a stray file descriptor).
    """

    def __init__(self, path: str | os.PathLike[str], *, threads: int | None = None,
                 timeout: float | None = None) -> None:
        self.path = str(path)
        self.threads = threads
        self.timeout = timeout
        self._worker: Worker | None = None
        self._io: tuple[list[IOInfo], list[IOInfo]] = ([], [])  # from the worker, once loaded
        self._loaded: Channel | None = None  # the channel whose worker said ready
        self._turn = threading.RLock()  # one request on the channel at a time
        self._start()
        self._ready()  # a model that cannot load fails here, not at the first call

    def run(
        self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]
    ) -> list[np.ndarray]:
        """``Session.run`` in the worker; a crash, a hang or stray bytes there is
        :class:`KernelCrash`, and a fresh worker starts."""
        with self._turn:
            conn = self._ready()
            try:
                conn.send((list(output_names) if output_names else None, dict(input_feed)))
                reply = self._reply(conn, self.timeout)
            except TimeoutError:  # an OSError: before it
                raise KernelCrash(self._stuck()) from None
            except ChannelJunk as e:
                raise KernelCrash(self._crash(junk=e)) from None
            except (EOFError, OSError):
                raise KernelCrash(self._crash()) from None
            finally:
                self._echo()
        if reply[0] == "ok":
            outs: list[np.ndarray] = reply[1]
            return outs
        raise reply_error(reply)

    def get_inputs(self) -> list[IOInfo]:
        """The model inputs, as :meth:`Session.get_inputs <opsdk.onnx.Session.get_inputs>`."""
        with self._turn:
            self._ready()
            return list(self._io[0])

    def get_outputs(self) -> list[IOInfo]:
        """The model outputs, as :meth:`Session.get_outputs <opsdk.onnx.Session.get_outputs>`."""
        with self._turn:
            self._ready()
            return list(self._io[1])

    def close(self) -> None:
        """Stop the worker and whatever its kernels started."""
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
    def _start(self) -> None:
        # the opsdk this process runs, also where PYTHONPATH is not passed on (a server)
        here = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
        self._worker = Worker(_python(), "opsdk.onnx._isolated", {"PYTHONPATH": path})
        self._worker.conn.send((self.path, self.threads))

    def _ready(self) -> Channel:
        """The worker's channel once it has loaded the model (started anew if gone, or if
        bytes wait on its channel that no request asked for)."""
        if self._worker is not None and self._loaded is self._worker.conn and \
                self._worker.conn.poll():
            self._echo()
            self.close()
        if self._worker is None:
            self._start()
        assert self._worker is not None
        conn = self._worker.conn
        if self._loaded is not conn:
            try:
                reply = self._reply(conn, _LOAD_LIMIT_S)
            except TimeoutError:  # an OSError: before it
                self.close()
                raise KernelError(f"the worker did not load {self.path} within "
                                  f"{_LOAD_LIMIT_S:g} s; it was stopped") from None
            except ChannelJunk as e:
                raise KernelError(f"{self.path}: {self._crash(False, e)}") from None
            except (EOFError, OSError):
                raise KernelError(f"{self.path}: {self._crash(restart=False)}") from None
            finally:
                self._echo()
            if reply[0] == "error":
                self.close()
                raise KernelError(f"the worker could not load {self.path}: {reply[2]}")
            self._loaded = conn
            self._io = (reply[1], reply[2])
        return conn

    def _reply(self, conn: Channel, limit: float | None) -> Any:
        """The worker's answer; EOFError once it is gone (even if a process its kernel
        started still holds the other end of the socket), TimeoutError after ``limit``
        seconds, ChannelJunk for bytes that are no answer."""
        deadline = None if limit is None else time.monotonic() + limit
        return conn.recv(deadline, lambda: self._worker is not None and self._worker.alive())

    def _stuck(self) -> str:
        """A call past the limit: the worker is stopped, a fresh one started."""
        assert self._worker is not None
        running = self._worker.running.read()  # "op\tnode" while a kernel ran
        self.close()
        self._start()
        what = "the graph"
        if running:
            op, node = running.split("\t", 1)
            what = f"the kernel of {op} (node {node})"
        return (f"{what} did not finish within {self.timeout:g} s (an endless loop?); its "
                "worker process was stopped and restarted")

    def _crash(self, restart: bool = True, junk: ChannelJunk | None = None) -> str:
        """What ended the worker, naming the operator; a fresh worker is started."""
        assert self._worker is not None
        if junk is not None:
            self.close()
            if restart:
                self._start()
            return f"{junk_message(junk)}; its worker process was restarted"
        code = self._worker.proc.wait()
        text = self._echo(show=False)
        found = kernel_last_words(text)
        running = self._worker.running.read()  # "op\tnode" while a kernel ran
        self.close()
        if restart:
            self._start()
        if found:
            op, what = found
            if code < 0 and what.startswith("crashed"):
                what = f"crashed with {signal_name(-code)} (signal {-code})"
            return f"the kernel of {op} {what}; its worker process was restarted"
        how = f"with {signal_name(-code)} (signal {-code})" if code < 0 else (
            f"with exit status {code}")
        if running:  # nothing of the operator module saw it: an exit from another library
            op, node = running.split("\t", 1)
            return (f"the kernel of {op} (node {node}) ended the worker process {how} while it "
                    "ran (an exit from code outside the operator module, e.g. a library it "
                    "calls); its worker process was restarted")
        return f"the graph's worker process ended {how}; it was restarted"

    def _echo(self, show: bool = True) -> str:
        """The worker's new output, passed on to our stderr unless ``show`` is False."""
        return self._worker.new_output(show) if self._worker is not None else ""


def _python() -> str:
    """An interpreter for the worker: ours, or the one of our prefix when we are embedded
    (a Triton Python-backend stub's sys.executable may not be a Python)."""
    exe = Path(sys.executable or "")
    if exe.name.startswith("python") and exe.is_file():
        return str(exe)
    return str(Path(sys.prefix) / "bin" / "python3")


def _serve(fd: int) -> None:
    """The worker: load the model, then answer ``(output names, feeds)`` until EOF."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides when to stop us
    lifeline, parent = arm_worker()
    conn = Channel(fd)
    path, threads = conn.recv()
    try:
        from ._session import Session

        sess = Session(path, threads=threads)
    except Exception as e:
        conn.send(("error", type(e).__name__, str(e)))
        return
    watch_natively(lifeline, parent)
    _watch_kernels(sess, Running.from_env())
    conn.send(("ready", sess.get_inputs(), sess.get_outputs()))
    while True:
        try:
            names, feeds = conn.recv()
        except EOFError:
            return
        try:
            outs = sess.run(names, feeds)
            forked = stop_children()
            if forked:
                raise KernelCrash(f"a kernel of {path} started {forked} child process(es) "
                                  "(fork), stopped after the call; a kernel must not fork")
            conn.send(("ok", outs))
        except Exception as e:
            conn.send(("error", type(e).__name__, str(e)))


class _Watched:
    """A custom step's kernel that says it runs (:class:`Running`) and is stopped at its
    first fork, naming its operator and node."""

    def __init__(self, kernel: Any, label: str, running: Running | None) -> None:
        spec = getattr(kernel, "spec", None)
        op_part = label.rsplit(" (", 1)
        self.kernel = kernel
        self.op = str(getattr(spec, "name", "") or op_part[-1].rstrip(")").split("::")[-1])
        self.node = op_part[0]
        self.running = running

    def __call__(self, *args: Any, **kw: Any) -> Any:
        return self._watch(self.kernel, args, kw)

    def run(self, *args: Any, **kw: Any) -> Any:
        return self._watch(self.kernel.run, args, kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kernel, name)

    def _watch(self, call: Any, args: Any, kw: Any) -> Any:
        if self.running is not None:
            self.running.set(f"{self.op}\t{self.node}")
        try:
            return call(*args, **kw)
        finally:
            if self.running is not None:
                self.running.clear()
            if has_children():
                n = stop_children()
                raise KernelCrash(
                    f"the kernel of {self.op} (node {self.node}) started {n} child "
                    f"process{'es' * (n > 1)} (fork), stopped after the call; a kernel must "
                    "not fork (use ctx.parallel_for for threads)")


def _watch_kernels(sess: Any, running: Running | None) -> None:
    """Wrap every custom step's kernel of ``sess`` in :class:`_Watched`."""
    for step in sess._steps:
        if step.info.kind == "opsdk":
            step.kernel = _Watched(step.kernel, step.info.nodes[0], running)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
