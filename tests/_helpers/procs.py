"""Processes of the tests that start opsdk commands: each carries a unique token in its
environment, which its descendants inherit, so a test can count what is left of a run
(workers run in process groups of their own) and kill all of it on the way out."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A cap on waiting for something a correct run does promptly: generous, so that it holds on
# a loaded machine (2 cores, load 10) and only a hung run reaches it. No test measures time.
CAP_S = 600.0


def running_with(token: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and token.encode() in (d / "environ").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


def wait_for(what: str, done: Callable[[], bool], proc: subprocess.Popen[str] | None = None,
              cap: float = CAP_S) -> None:
    deadline = time.monotonic() + cap
    while not done():
        if proc is not None and proc.poll() is not None and not done():
            pytest.fail(f"the process ended (status {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {cap:g} s")
        time.sleep(0.1)


def ctrl_c_live() -> None:
    """In the child: SIGINT back to its default, so Python installs KeyboardInterrupt. A suite
    started as a background job of a non-interactive shell inherits SIGINT ignored (POSIX), and
    a process that ignores Ctrl-C is what opsdk must respect, not what these tests are about."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def tracked(args: list[str], mode: str, **kw: Any) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A subprocess in its own session whose descendants carry a unique token in their
    environment; on the way out (failures included) every one of them is killed."""
    token = uuid.uuid4().hex
    env = {**os.environ, "OPSDK_MISBEHAVE": mode, "OPSDK_TEST_TOKEN": token}
    proc = subprocess.Popen(args, env=env, cwd=ROOT, text=True, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=ctrl_c_live, **kw)
    try:
        with proc:
            yield proc, token
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in running_with(token):  # workers run in process groups of their own
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def communicate(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=CAP_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the command did not end within {CAP_S:g} s (something holds its pipes?)")


def gone(token: str) -> None:
    """Wait until no process carries ``token``; the failure lists those left."""
    try:
        wait_for("every process of the run ending", lambda: not running_with(token))
    except pytest.fail.Exception:
        left = []
        for pid in running_with(token):
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                left.append(f"{pid}: {cmd.decode(errors='replace')[:200]}")
        pytest.fail("processes left: " + "; ".join(left))
