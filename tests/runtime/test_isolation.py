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
import threading
import uuid
from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.build import SANITIZERS, sanitizer_env
from opsdk.errors import BuildError, KernelCrash
from opsdk.runtime.cpu import Operator
from opsdk.runtime.isolated import IsolatedOperator
from tests._helpers.procs import CAP_S
from tests._helpers.procs import communicate as _communicate
from tests._helpers.procs import ctrl_c_live as _ctrl_c_live
from tests._helpers.procs import gone as _gone
from tests._helpers.procs import running_with as _running_with
from tests._helpers.procs import tracked as _tracked
from tests._helpers.procs import wait_for as _wait_for

OP_DIR = Path(__file__).resolve().parents[1] / "data" / "misbehave"
ROOT = Path(__file__).resolve().parents[2]


def _line_of(text: str) -> int:
    """The line number of ``text`` in the misbehave kernel."""
    lines = (OP_DIR / "kernel.cpp").read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


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
    op = IsolatedOperator(misbehave, timeout=CAP_S, env={"OPSDK_MISBEHAVE": mode})
    with pytest.raises(KernelCrash, match=re.escape(f"misbehave/kernel.cpp): {message}")):
        op.run([np.arange(5.0)], {})
    (y,) = op.run([np.arange(3, dtype=np.float32)], {})  # a fresh worker
    np.testing.assert_array_equal(y, [0, 1, 2])
    op.close()


def test_an_endless_kernel_is_stopped_at_the_timeout(misbehave: Operator) -> None:
    op = IsolatedOperator(misbehave, timeout=1.0, env={"OPSDK_MISBEHAVE": "loop"})
    with pytest.raises(KernelCrash, match="did not finish within 1 s and was stopped"):
        op.run([np.arange(5.0)], {})
    op.timeout = CAP_S  # the next call in a fresh worker: no limit a loaded machine could hit
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


@pytest.mark.parametrize("command", ["check", "test"])
def test_ctrl_c_stops_an_endless_kernel_promptly(command: str) -> None:
    """Issue 23 item 15: no fixed deadline that fails under load, every process cleaned up."""
    args = [sys.executable, "-m", "opsdk", command, str(OP_DIR)]
    args += ["-k", "float64-odd"] if command == "test" else []
    with _tracked(args, "loop") as (proc, token):
        need = 2 + (command == "test")  # opsdk (+ pytest) and the worker
        _wait_for("the worker starting", lambda: len(_running_with(token)) >= need, proc)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = _communicate(proc)
        assert proc.returncode in (1, 2, 130), out + err
        assert "Traceback" not in err
        _gone(token)  # no worker left behind


def test_a_kernel_that_forks_fails_its_case_and_leaves_nothing_running() -> None:
    """Issue 23 item 5: `opsdk check KOp | cat` ends (the child held the pipe), the case
    fails naming the operator, and the child is gone."""
    with _tracked([sys.executable, "-m", "opsdk", "check", str(OP_DIR)], "fork") as (proc, token):
        out, err = _communicate(proc)
        assert proc.returncode == 1, out + err
        line = next(ln for ln in err.splitlines() if "FAILED  float64-odd" in ln)
        assert "Misbehave" in err and "the kernel started 1 child process (fork)" in line
        _gone(token)


def test_a_worker_dies_with_its_parent_and_takes_its_children() -> None:
    """Issue 23 item 5: the parent of a worker running an endless kernel (that forked first)
    is killed; the worker and the kernel's child end too."""
    code = ("import sys, numpy as np, opsdk; from opsdk.runtime.isolated import IsolatedOperator; "
            "op = IsolatedOperator(opsdk.load(sys.argv[1])); op.run([np.arange(5.0)], {})")
    with _tracked([sys.executable, "-c", code, str(OP_DIR)], "fork_loop") as (proc, token):
        # the parent, the worker and the kernel's child
        _wait_for("the kernel forking", lambda: len(_running_with(token)) >= 3, proc)
        os.kill(proc.pid, signal.SIGKILL)
        _gone(token)


@pytest.mark.parametrize("mode, call", [("exit0", "exit(0)"), ("_exit0", "_exit(0)")])
def test_exit_in_a_worker_is_a_failed_case(misbehave: Operator, mode: str, call: str) -> None:
    """Issue 23 item 7: exit/_exit in a kernel run by a worker fails the call naming the op."""
    op = IsolatedOperator(misbehave, timeout=CAP_S, env={"OPSDK_MISBEHAVE": mode})
    with pytest.raises(KernelCrash, match=re.escape(
            f"Misbehave ({OP_DIR / 'kernel.cpp'}): the kernel called {call}, which ended the "
            "worker process")):
        op.run([np.arange(5.0)], {})
    np.testing.assert_array_equal(op.run([np.arange(2, dtype=np.float32)], {})[0], [0, 1])
    op.close()


@pytest.mark.parametrize("mode, status, message", [
    ("exit0", 1, "the kernel of Misbehave called exit(0); the process ends here, inside the "
                 "operator call, with status 1"),
    ("_exit0", 1, "the kernel of Misbehave called _exit(0)"),
    ("segv", -signal.SIGSEGV, "the kernel of Misbehave crashed with SIGSEGV; the process ends"),
    ("abort", -signal.SIGABRT, "the kernel of Misbehave crashed with SIGABRT"),
])
def test_a_kernel_ending_a_plain_python_process_names_the_operator(
        mode: str, status: int, message: str) -> None:
    """Issue 23 item 7: in-process `op(x)` that ends the process says which operator did,
    and exit(0) does not report success."""
    code = ("import sys, numpy as np, opsdk; op = opsdk.load(sys.argv[1]); "
            "op(np.arange(5.0)); print('not reached')")
    with _tracked([sys.executable, "-c", code, str(OP_DIR)], mode) as (proc, _):
        out, err = _communicate(proc)
    assert proc.returncode == status, err
    assert f"opsdk: {message}" in err and "not reached" not in out


def test_no_isolate_runs_in_process_and_refuses_worker_options() -> None:
    """Issue 23 item 8: `opsdk test --no-isolate` runs the kernel in the pytest process (an
    abort ends it, naming the operator), and --sanitize / --timeout with it are refused."""
    with _tracked([sys.executable, "-m", "opsdk", "test", str(OP_DIR), "--no-isolate", "-q",
                   "-p", "no:cacheprovider", "-k", "float64-odd"], "abort") as (proc, _):
        out, err = _communicate(proc)
    assert proc.returncode != 1 and "failed" not in out, out + err  # no worker, no failed case
    assert "--opsdk-isolate" not in out and "--opsdk-timeout" not in out
    assert "opsdk: the kernel of Misbehave crashed with SIGABRT" in err + out
    for cmd, flag in (("check", ["--sanitize", "address"]), ("test", ["--sanitize", "address"]),
                      ("check", ["--timeout", "5"]), ("test", ["--timeout", "5"])):
        p = opsdk_cmd(cmd, str(OP_DIR), "--no-isolate", *flag, mode="")
        assert p.returncode != 0 and "Traceback" not in p.stderr, p.stdout + p.stderr
        assert f"{flag[0]} {flag[1]}" in p.stderr and "needs a worker process" in p.stderr
        assert "drop --no-isolate" in p.stderr


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
    assert f"{OP_DIR / 'kernel.cpp'}:{_line_of('x[n + 2]')}" in p.stdout


def test_the_worker_reports_inputs_the_kernel_modified(misbehave: Operator) -> None:
    from opsdk.testing import build_cases, run_case

    op = IsolatedOperator(misbehave, timeout=CAP_S, env={"OPSDK_MISBEHAVE": "write_input"})
    case = next(c for c in build_cases(misbehave.spec) if c.id == "float64-odd")
    result = run_case(misbehave.spec, op, case)
    assert "the kernel modified input 'x' in place" in result.problems, result.summary()
    op.close()


def test_the_worker_passes_non_contiguous_inputs_with_their_strides(probe: Operator) -> None:
    op = IsolatedOperator(probe, timeout=CAP_S)
    x = np.arange(48, dtype=np.float32).reshape(4, 12)[:, ::3]
    here, there = probe.run([x], {})[0], op.run([x], {})[0]
    assert list(there[1:4]) == list(here[1:4]) == [2, 3, 16]  # ndim, last stride, numel
    op.close()


def test_undefined_behaviour_sanitizer_names_the_line() -> None:
    p = opsdk_cmd("check", str(OP_DIR), "--sanitize", "undefined", mode="int_overflow")
    assert p.returncode == 1, p.stdout + p.stderr
    line = next(ln for ln in p.stderr.splitlines() if "FAILED  float64-odd" in ln)
    assert "failed a sanitizer check" in line
    assert f"{OP_DIR / 'kernel.cpp'}:{_line_of('big + static_cast')}:" in line
    assert "runtime error: signed integer overflow" in line


def test_ctrl_c_twice_ends_an_endless_kernel_in_a_plain_python_call() -> None:
    """Issue 23 item 15: each step waits for what the process says, not for a fixed time."""
    code = "import sys, numpy as np, opsdk; op = opsdk.load(sys.argv[1]); op(np.arange(5.0))"
    with _tracked([sys.executable, "-c", code, str(OP_DIR)], "loop") as (proc, _):
        lines: list[str] = []
        assert proc.stderr is not None
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")),
                                  daemon=True)
        reader.start()
        _wait_for("the kernel looping", lambda: "misbehave: looping\n" in lines, proc)
        proc.send_signal(signal.SIGINT)
        _wait_for("the first Ctrl-C's message", lambda: any("interrupt inside" in ln
                                                             for ln in lines), proc)
        assert proc.poll() is None  # the first Ctrl-C only tells what the second does
        proc.send_signal(signal.SIGINT)
        _wait_for("the process ending", lambda: proc.poll() is not None)
        reader.join(CAP_S)
    err = "".join(lines)
    assert proc.returncode == 130, err
    assert "opsdk: interrupt inside the kernel of Misbehave; it stops when the kernel " in err
    assert "interrupted again inside the kernel of Misbehave; ending the process" in err


def test_ctrl_c_outside_a_kernel_is_a_keyboard_interrupt_as_usual(probe: Operator) -> None:
    code = ("import os, signal, sys, numpy as np, opsdk; op = opsdk.load(sys.argv[1]); "
            "os.kill(os.getpid(), signal.SIGINT); print('not reached')")
    p = subprocess.run([sys.executable, "-c", code, str(Path(OP_DIR).parent / "probe")],
                       capture_output=True, text=True, timeout=CAP_S, preexec_fn=_ctrl_c_live)
    assert p.returncode != 0 and "KeyboardInterrupt" in p.stderr and "not reached" not in p.stdout


def test_the_cross_harness_run_leaves_no_process_behind(tmp_path: Path) -> None:
    """Issue 23 item 5: a harness whose kernel left a child running returns (the child holds
    no pipe of ours) and the child is killed with the harness's process group."""
    from opsdk.runtime.cross import _run_harness

    token = uuid.uuid4().hex
    env = {**os.environ, "OPSDK_TEST_TOKEN": token}
    code, out = _run_harness(["sh", "-c", "sleep 600 & echo started; exit 3"], env,
                             tmp_path / "log.txt")
    assert (code, out) == (3, "started\n")
    _gone(token)


def test_an_isolated_session_survives_a_crashing_kernel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 item 3 (what the Triton CPU model runs): a graph whose kernel segfaults on
    one value fails that call naming the operator; the next call runs in a fresh worker."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper

    from opsdk.onnx import IsolatedSession

    monkeypatch.setenv("OPSDK_MISBEHAVE", "segv_on_13")
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(OP_DIR.parent))
    g = helper.make_graph(
        [helper.make_node("Misbehave", ["x"], ["y"], domain="com.opsdk.test")], "g",
        [helper.make_tensor_value_info("x", T.DOUBLE, ["n"])],
        [helper.make_tensor_value_info("y", T.DOUBLE, ["n"])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("com.opsdk.test", 1)]),
              str(tmp_path / "m.onnx"))
    sess = IsolatedSession(tmp_path / "m.onnx", threads=1)
    try:
        np.testing.assert_array_equal(sess.run(None, {"x": np.arange(3.0)})[0], [0, 1, 2])
        with pytest.raises(KernelCrash, match=re.escape(
                "the kernel of Misbehave crashed with SIGSEGV (signal 11); its worker process "
                "was restarted")):
            sess.run(None, {"x": np.full(3, 13.0)})
        np.testing.assert_array_equal(sess.run(["y"], {"x": np.ones(2)})[0], [1, 1])
        # what the Triton model reads to find rank-0 inputs, as Session gives it
        assert [(i.name, i.shape) for i in sess.get_inputs()] == [("x", ["n"])]
        assert [o.name for o in sess.get_outputs()] == ["y"]
    finally:
        sess.close()


def test_the_cross_harness_dies_with_its_parent(tmp_path: Path) -> None:
    """Issue 23 item 5: a harness (here a stand-in that never ends) whose caller is killed
    is killed too."""
    code = ("from opsdk.runtime.cross import _run_harness; import os, sys, pathlib; "
            "_run_harness(['sh', '-c', 'echo up; exec sleep 600'], dict(os.environ), "
            "pathlib.Path(sys.argv[1]))")
    log = tmp_path / "log.txt"
    with _tracked([sys.executable, "-c", code, str(log)], "") as (proc, token):
        _wait_for("the harness starting", lambda: log.is_file() and b"up" in log.read_bytes(),
                  proc)
        os.kill(proc.pid, signal.SIGKILL)
        _gone(token)


def test_sanitizer_builds_keep_the_isa_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sanitizer build compiles the kernel for this machine's ISA as the ordinary build
    does (its -march, any OPSDK_CXXFLAGS), only at -O1 with debug info: otherwise a
    kernel's `#if __AVX512F__` code would never be the code checked."""
    from opsdk.build import sanitizer_flags

    assert sanitizer_flags(("address",)).split()[0] == "-march=native"
    monkeypatch.setenv("OPSDK_CXXFLAGS", "-O2 -mavx2 -mfma")
    flags = sanitizer_flags(("address", "undefined")).split()
    assert flags[:2] == ["-mavx2", "-mfma"] and "-O2" not in flags and "-O1" in flags
    assert "-fsanitize=address,undefined" in flags
