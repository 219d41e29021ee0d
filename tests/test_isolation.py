"""Validation runs keep misbehaving kernels in a worker process: crashes, aborts, endless
loops, writes past an output and sanitizer findings fail their case, and the run goes on.

The test-only operator tests/data/misbehave copies its input; its float64 kernel
misbehaves as ``$OPSDK_MISBEHAVE`` says (segv, abort, loop, past_end, read_past_end, ...).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.build import SANITIZERS, sanitizer_env
from opsdk.errors import BuildError, KernelCrash
from opsdk.runtime.cpu import Operator
from opsdk.runtime.isolated import IsolatedOperator

OP_DIR = Path(__file__).resolve().parent / "data" / "misbehave"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def misbehave() -> Operator:
    op: Operator = opsdk.load(str(OP_DIR))
    return op


def opsdk_cmd(*args: str, mode: str, **kw: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPSDK_MISBEHAVE": mode}
    return subprocess.run([sys.executable, "-m", "opsdk", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600, **kw)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "mode, message",
    [
        ("segv", "the kernel crashed with SIGSEGV (signal 11)"),
        ("abort", "the kernel crashed with SIGABRT (signal 6)"),
        ("past_end", "the kernel wrote 8 bytes past the end of output 'y' (float64[5])"),
    ],
)
def test_a_crash_is_an_error_naming_the_operator_and_the_next_call_works(
    misbehave: Operator, mode: str, message: str
) -> None:
    op = IsolatedOperator(misbehave, timeout=60, env={"OPSDK_MISBEHAVE": mode})
    with pytest.raises(KernelCrash, match=re.escape(f"misbehave/kernel.cpp): {message}")):
        op.run([np.arange(5.0)], {})
    (y,) = op.run([np.arange(3, dtype=np.float32)], {})  # a fresh worker
    np.testing.assert_array_equal(y, [0, 1, 2])
    op.close()


def test_an_endless_kernel_is_stopped_at_the_timeout(misbehave: Operator) -> None:
    op = IsolatedOperator(misbehave, timeout=1.0, env={"OPSDK_MISBEHAVE": "loop"})
    with pytest.raises(KernelCrash, match="did not finish within 1 s and was stopped"):
        op.run([np.arange(5.0)], {})
    np.testing.assert_array_equal(op.run([np.arange(2, dtype=np.float32)], {})[0], [0, 1])
    op.close()


def test_guard_regions_in_a_debug_process(
    misbehave: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPSDK_DEBUG", "1")
    debug = Operator(misbehave.spec, misbehave.module, misbehave.folder)
    monkeypatch.setenv("OPSDK_MISBEHAVE", "past_end")
    with pytest.raises(KernelCrash, match="wrote 8 bytes past the end of output 'y'"):
        debug(np.arange(4.0))
    np.testing.assert_array_equal(debug(np.arange(4, dtype=np.float32)), np.arange(4))


def test_opsdk_check_reports_a_crash_and_goes_on() -> None:
    p = opsdk_cmd("check", str(OP_DIR), mode="segv")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "ok      float32-odd" in p.stderr and "ok      float32-strided" in p.stderr
    line = next(ln for ln in p.stderr.splitlines() if "FAILED  float64-odd" in ln)
    assert "(float64[17], attrs {})" in line and "crashed with SIGSEGV (signal 11)" in line
    assert f"reproduce: opsdk check {OP_DIR} --seed 0" in p.stderr


def test_opsdk_test_turns_an_abort_into_failed_cases() -> None:
    p = opsdk_cmd("test", str(OP_DIR), "-q", "-p", "no:cacheprovider", "-k", "odd or small",
                  mode="abort")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "2 failed, 2 passed" in p.stdout
    assert "Misbehave [float64-small] on cpu FAILED" in p.stdout
    assert "inputs: float64[2, 3, 4]" in p.stdout
    assert "crashed with SIGABRT (signal 6)" in p.stdout
    assert "--opsdk-isolate" in next(ln for ln in p.stdout.splitlines() if "reproduce:" in ln)


def _running_with(token: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and token.encode() in (d / "environ").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("command", ["check", "test"])
def test_ctrl_c_stops_an_endless_kernel_promptly(command: str) -> None:
    token = f"OPSDK_TEST_TOKEN={uuid.uuid4().hex}"
    env = {**os.environ, "OPSDK_MISBEHAVE": "loop", token.split("=")[0]: token.split("=")[1]}
    args = [sys.executable, "-m", "opsdk", command, str(OP_DIR)]
    args += ["-k", "float64-odd"] if command == "test" else []
    proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(_running_with(token)) < 2 + (command == "test"):  # the worker has started
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (1, 2, 130), out + err
    assert "Traceback" not in err
    time.sleep(0.5)
    assert _running_with(token) == []  # no worker left behind


def test_sanitizer_reports_an_out_of_bounds_read_with_file_and_line() -> None:
    try:
        sanitizer_env(SANITIZERS)
    except BuildError as e:
        pytest.skip(str(e))
    p = opsdk_cmd("test", str(OP_DIR), "--sanitize", "address,undefined", "-q",
                  "-p", "no:cacheprovider", "-k", "odd", mode="read_past_end")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "1 failed, 1 passed" in p.stdout
    assert "SUMMARY: AddressSanitizer: heap-buffer-overflow" in p.stdout
    assert f"{OP_DIR / 'kernel.cpp'}:33" in p.stdout  # the line reading x[n + 2]


def test_the_worker_reports_inputs_the_kernel_modified(misbehave: Operator) -> None:
    from opsdk.testing import build_cases, run_case

    op = IsolatedOperator(misbehave, timeout=60, env={"OPSDK_MISBEHAVE": "write_input"})
    case = next(c for c in build_cases(misbehave.spec) if c.id == "float64-odd")
    result = run_case(misbehave.spec, op, case)
    assert "the kernel modified input 'x' in place" in result.problems, result.summary()
    op.close()


def test_the_worker_passes_non_contiguous_inputs_with_their_strides(probe: Operator) -> None:
    op = IsolatedOperator(probe, timeout=60)
    x = np.arange(48, dtype=np.float32).reshape(4, 12)[:, ::3]
    here, there = probe.run([x], {})[0], op.run([x], {})[0]
    assert list(there[1:4]) == list(here[1:4]) == [2, 3, 16]  # ndim, last stride, numel
    op.close()


def test_undefined_behaviour_sanitizer_names_the_line() -> None:
    p = opsdk_cmd("check", str(OP_DIR), "--sanitize", "undefined", mode="int_overflow")
    assert p.returncode == 1, p.stdout + p.stderr
    line = next(ln for ln in p.stderr.splitlines() if "FAILED  float64-odd" in ln)
    assert "failed a sanitizer check" in line
    assert f"{OP_DIR / 'kernel.cpp'}:37:" in line and "runtime error: signed integer overflow" in line


def test_ctrl_c_twice_ends_an_endless_kernel_in_a_plain_python_call() -> None:
    code = ("import sys, numpy as np, opsdk; op = opsdk.load(sys.argv[1]); "
            "print('loaded', flush=True); op(np.arange(5.0))")
    env = {**os.environ, "OPSDK_MISBEHAVE": "loop"}
    proc = subprocess.Popen([sys.executable, "-c", code, str(OP_DIR)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "loaded"
        time.sleep(1.0)  # inside the kernel by now
        proc.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert proc.poll() is None  # the first Ctrl-C only tells what the second does
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "opsdk: interrupt inside the kernel of Misbehave; it stops when the kernel " in err
    assert "interrupted again inside the kernel of Misbehave; ending the process" in err


def test_ctrl_c_outside_a_kernel_is_a_keyboard_interrupt_as_usual(probe: Operator) -> None:
    code = ("import os, signal, sys, numpy as np, opsdk; op = opsdk.load(sys.argv[1]); "
            "os.kill(os.getpid(), signal.SIGINT); print('not reached')")
    p = subprocess.run([sys.executable, "-c", code, str(Path(OP_DIR).parent / "probe")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "KeyboardInterrupt" in p.stderr and "not reached" not in p.stdout
