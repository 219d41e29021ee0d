"""Worker processes that die with their parent and take their own children with them.

Used by the validation worker (:mod:`opsdk.runtime.isolated`), the serving worker of the
Triton CPU target and the cross-built harness. A worker runs in its own process group, so
stopping it is one ``killpg`` that reaches whatever its kernel started. It holds the read
end of a *lifeline* pipe whose write end only its parent has, and a watcher thread kills
the worker's group when the pipe reads EOF (the parent ended, even by SIGKILL) or when the
worker's parent process changes (the write end leaked into a fork of the parent, say).
The watcher runs in Python until the operator module is loaded, then natively
(``watch_lifeline`` in entry.cpp), so a kernel that loops forever holding the GIL is
stopped too. ``PR_SET_PDEATHSIG`` is not used: it would kill the worker alone, before the
watcher could reach the processes its kernel started, and Linux sends it when the *thread*
that started the worker ends. The worker is a child subreaper (``PR_SET_CHILD_SUBREAPER``),
so a process its kernel forked (and that process's own children) stays its child and is
found and stopped after the call.

Example:
    >>> import subprocess, sys
    >>> lifeline = Lifeline()
    >>> p = subprocess.Popen([sys.executable, "-c", "pass"], **lifeline.popen_kwargs())
    >>> p.wait(), lifeline.close()
    (0, None)
"""

from __future__ import annotations

import ctypes
import os
import pickle
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ChannelJunk

__all__ = [
    "Channel", "ChannelJunk", "Lifeline", "Running", "Worker", "arm_worker", "dies_with_us",
    "has_children", "junk_message",
    "kernel_last_words",
    "kill_group", "parent_death_command", "reply_error", "signal_name", "stop_children",
    "watch_natively",
]

# What the operator module's fatal-signal and exit hooks print (csrc/py/process_guards.h)
_KERNEL_LINE = re.compile(r"opsdk: the kernel of (\S+) (crashed with \w+|called \w+\(-?\d+\))")

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class Lifeline:
    """The parent's side: a pipe whose read end a worker inherits (see the module doc)."""

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()  # not inherited by other children

    def popen_kwargs(self) -> dict[str, Any]:
        """Popen arguments: own session (so own process group), the read end passed on,
        its number and our pid in the environment (``OPSDK_LIFELINE=fd:pid``)."""
        env = {**os.environ, "OPSDK_LIFELINE": f"{self.read_fd}:{os.getpid()}"}
        return {"start_new_session": True, "pass_fds": [self.read_fd], "env": env}

    def started(self) -> None:
        """Close our copy of the read end once the worker has it."""
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def close(self) -> None:
        """Cut the lifeline: the worker's watcher kills its group."""
        self.started()
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1


class Channel:
    """The messages between a caller and its worker over a socket: each one a header (magic,
    length, CRC-32) and a pickle. Bytes a kernel writes into the worker's end are found
    (:class:`ChannelJunk`) instead of being read as a length, which left both sides waiting
    for ever; the caller reads with a deadline and while the worker lives.

    Example:
        >>> a, b = socket.socketpair()
        >>> ours, theirs = Channel(a.detach()), Channel(b.detach())
        >>> theirs.send(("ok", [1, 2]))
        >>> ours.recv(deadline=time.monotonic() + 60)
        ('ok', [1, 2])
        >>> os.write(theirs.fileno(), b"stray bytes")
        11
        >>> ours.recv(deadline=time.monotonic() + 60)
        Traceback (most recent call last):
        ...
        opsdk.runtime._procs.ChannelJunk: 11 bytes that are no message: b'stray bytes'
    """

    _HEAD = struct.Struct("<4sQI")
    _MAGIC = b"OPSW"
    _POLL_S = 0.05

    def __init__(self, fd: int) -> None:
        self._sock = socket.socket(fileno=fd)

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, obj: Any) -> None:
        # protocol 4: an array arrives in memory of its own (5 would make it a view of the
        # message, where a sanitizer cannot see a read past its end)
        data = pickle.dumps(obj, protocol=4)
        self._sock.sendall(self._HEAD.pack(self._MAGIC, len(data), zlib.crc32(data)) + data)

    def poll(self, timeout: float | None = 0.0) -> bool:
        """True when bytes are waiting to be read (``timeout`` None: wait for them)."""
        ready, _, _ = select.select([self._sock], [], [], timeout)
        return bool(ready)

    def recv(self, deadline: float | None = None,
             alive: Callable[[], bool] | None = None) -> Any:
        """The next message. Raises EOFError when the other end is closed or ``alive()``
        turns False with nothing to read, TimeoutError past ``deadline`` (a monotonic time),
        ChannelJunk for bytes that are no message."""
        head = self._read(self._HEAD.size, deadline, alive, check=True)
        _, size, crc = self._HEAD.unpack(head)
        data = self._read(size, deadline, alive)
        if zlib.crc32(data) != crc:
            raise ChannelJunk(bytes(head) + bytes(data))
        return pickle.loads(data)

    def _read(self, n: int, deadline: float | None, alive: Callable[[], bool] | None,
              check: bool = False) -> bytearray:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        wait = None if deadline is None and alive is None else self._POLL_S  # None: sleep
        while got < n:
            if not self.poll(wait):
                if alive is not None and not alive():
                    raise EOFError
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError
                continue
            k = self._sock.recv_into(view[got:])
            if k == 0:
                raise EOFError
            got += k
            if check and buf[: min(got, 4)] != self._MAGIC[: min(got, 4)]:
                raise ChannelJunk(bytes(buf[:got]) + self._drain())
        return buf

    def _drain(self) -> bytes:
        """What else is waiting (the rest of the junk)."""
        out = b""
        while len(out) < 1 << 16 and self.poll():
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                break
            out += chunk
        return out

    def close(self) -> None:
        self._sock.close()


def junk_message(junk: ChannelJunk) -> str:
    """What a worker's channel full of stray bytes says, for the caller's error."""
    return (f"a kernel wrote into its worker's message channel ({len(junk.junk)} bytes that "
            f"are no message, starting {junk.junk[:24]!r}: a write to a file descriptor it "
            "does not own)")


class Running:
    """What a worker is running now: a few hundred bytes of a file both sides hold open.

    The worker sets it (one ``pwrite``) before each kernel call and clears it after; when
    the worker ends in a way no hook of the operator module saw (an exit from a library,
    say), the parent reads there which operator and node was running. The worker finds
    the file through ``$OPSDK_RUNNING`` (its descriptor), set by :class:`Worker`.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryFile() as f:
        ...     r = Running(f.fileno())
        ...     r.set("Gelu, node 'g1'")
        ...     said = r.read()
        ...     r.clear()
        ...     said, r.read()
        ("Gelu, node 'g1'", '')
    """

    SIZE = 512

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def from_env(cls) -> Running | None:
        """In the worker: the file its parent passed on, else None."""
        spec = os.environ.pop("OPSDK_RUNNING", "")
        return cls(int(spec)) if spec else None

    def set(self, what: str) -> None:
        raw = what.encode()[: self.SIZE]
        os.pwrite(self.fd, raw + b"\0" * (self.SIZE - len(raw)), 0)

    def clear(self) -> None:
        os.pwrite(self.fd, b"\0", 0)

    def read(self) -> str:
        return os.pread(self.fd, self.SIZE, 0).split(b"\0", 1)[0].decode(errors="replace")


class Worker:
    """One worker process: ``python -m <module> <fd>`` started with a :class:`Lifeline`, a
    socket pair to it (``conn``), and its stdout and stderr in a log file read with
    :meth:`new_output` (so nothing the worker or its kernel starts holds the caller's pipes:
    ``opsdk check X | cat`` ends). Used by the validation worker and the serving worker.
    """

    def __init__(self, python: str, module: str, env: Mapping[str, str] | None = None) -> None:
        import subprocess
        import tempfile

        ours, theirs = socket.socketpair()
        self.log = tempfile.TemporaryFile()
        self._running = tempfile.TemporaryFile()
        self.running = Running(self._running.fileno())
        self._pos = 0  # how much of the log was read
        self.lifeline = Lifeline()
        kw = self.lifeline.popen_kwargs()
        kw["env"].update(env or {})
        kw["env"]["OPSDK_RUNNING"] = str(self.running.fd)
        kw["pass_fds"].extend([theirs.fileno(), self.running.fd])
        self.proc = subprocess.Popen(
            [python, "-m", module, str(theirs.fileno())],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, **kw,
        )
        theirs.close()
        self.lifeline.started()
        self.conn = Channel(ours.detach())

    def alive(self) -> bool:
        return self.proc.poll() is None

    def new_output(self, echo: bool) -> str:
        """What the worker printed since the last call, passed on to our stderr if ``echo``."""
        if self.log.closed:
            return ""
        self.log.seek(self._pos)
        data = self.log.read()
        self._pos += len(data)
        text = str(data.decode(errors="replace"))
        if echo and text:
            sys.stderr.write(text)
        return text

    def close(self) -> None:
        """Stop the worker and everything its kernel started."""
        self.conn.close()
        kill_group(self.proc.pid)
        self.proc.wait()
        self.lifeline.close()
        self.log.close()
        self._running.close()


def reply_error(reply: tuple[Any, ...]) -> Exception:
    """The exception a worker's ``("error", class name, message)`` reply stands for: that
    opsdk error class, else :class:`~opsdk.errors.KernelError`."""
    from .. import errors

    cls = getattr(errors, reply[1], None)
    if not (isinstance(cls, type) and issubclass(cls, errors.OpsdkError)):
        cls = errors.KernelError
    return cls(reply[2])


def kernel_last_words(text: str) -> tuple[str, str] | None:
    """``(operator, what)`` from the last line an operator module printed as its kernel
    ended the process, e.g. ``("Gelu", "crashed with SIGSEGV")``; None without one.

    Example:
        >>> kernel_last_words("opsdk: the kernel of Gelu called _exit(3); the process ends")
        ('Gelu', 'called _exit(3)')
    """
    found = _KERNEL_LINE.findall(text)
    return (found[-1][0], found[-1][1]) if found else None


def signal_name(num: int) -> str:
    """``SIGSEGV`` for 11, ``signal 99`` for a number with no name."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (the worker and what its kernel started)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def arm_worker() -> tuple[int, int]:
    """In the worker, at start: subreaper, lifeline watcher.

    Returns the lifeline's fd and the parent's pid, for the native watcher (``(-1, 0)`` when
    the worker was not started with a :class:`Lifeline`).
    """
    spec = os.environ.pop("OPSDK_LIFELINE", "")
    if not spec:
        return -1, 0
    fd, parent = (int(v) for v in spec.split(":"))
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before we started watching
        _end_group()
    threading.Thread(target=_watch, args=(fd, parent), name="opsdk-lifeline", daemon=True).start()
    return fd, parent


def watch_natively(lifeline: int, parent: int, module: Any = None) -> None:
    """In the worker, once its kernels are loaded: hand the lifeline (from
    :func:`arm_worker`) to the native watcher of ``module`` or of any loaded operator module,
    so that a kernel holding the GIL cannot stop it; without one the Python watcher stays
    (enough for kernels called through ctypes, which let go of the GIL)."""
    if lifeline < 0:
        return
    from . import cpu

    for candidate in (module, *list(cpu._MODULES.values())):
        watch = getattr(candidate, "watch_lifeline", None)
        if watch is not None:
            watch(lifeline, parent)
            return


def _watch(fd: int, parent: int) -> None:
    while os.getppid() == parent:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready and not os.read(fd, 1):
            break
    _end_group()


def _end_group() -> None:
    if os.getpgrp() == os.getpid():
        os.killpg(0, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _libc() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - not Linux
        return None


def has_children() -> bool:
    """True when this process has a child (running or exited, not yet reaped): one
    system call, cheap enough to ask after every kernel call."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _children() -> list[int]:
    """This process's children (zombies included), from /proc."""
    me = str(os.getpid())
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2 :].split()[1] == me:  # field 4: the parent's pid
            pids.append(int(d.name))
    return pids


def stop_children() -> int:
    """Kill and reap every descendant (they are our children: we are a subreaper).

    Returns how many processes were found; 0 when the kernel started none.
    """
    found: set[int] = set()
    for _ in range(100):
        kids = _children() if has_children() else []
        if not kids:
            break
        for pid in kids:
            found.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in kids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    return len(found)


def dies_with_us() -> dict[str, Any]:
    """``subprocess`` keyword arguments that end the child when this process ends, even by
    SIGKILL (``PR_SET_PDEATHSIG``, asked in the child before it execs): for the children of
    long commands (``opsdk test``'s pytest, tritonserver, check children), whose own children
    in turn die with them (a worker's lifeline, a stub's watch of its server).

    Linux sends the signal when the *thread* that started the child ends, so only a child
    started by the main thread is tied (empty arguments otherwise, and off Linux).

    Example:
        >>> import subprocess, sys
        >>> subprocess.run([sys.executable, "-c", "pass"], **dies_with_us()).returncode
        0
    """
    libc = _libc()
    if libc is None or threading.current_thread() is not threading.main_thread():
        return {}
    prctl, parent = libc.prctl, os.getpid()

    def tie() -> None:  # in the child, between fork and exec: no allocation, no locks
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # we ended before the child asked
            os._exit(1)

    return {"preexec_fn": tie}


def parent_death_command(cmd: list[str]) -> list[str]:
    """``cmd`` behind a trampoline that asks Linux for SIGKILL when we (its parent) end,
    then execs it: for a program with no watcher of its own (the C++ harness). Start it from
    a thread that waits for it (Linux sends the signal when that *thread* ends)."""
    return [sys.executable, "-m", "opsdk.runtime._procs", str(os.getpid()), *cmd]


def _trampoline(argv: list[str]) -> None:
    parent, cmd = int(argv[0]), argv[1:]
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before we asked
        sys.exit(1)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    _trampoline(sys.argv[1:])
