"""Issue 33 item 3: a fork or an exit anywhere in a served model or a validation worker is
reported with the operator whose kernel did it.

The test-only operator tests/data/misbehave (float64 kernel) forks (``fork``), or ends the
process with the exit_group system call (``exit_group0``): what a library the kernel calls
does, which no exit hook of the operator module sees.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

import opsdk
from opsdk.errors import KernelCrash
from opsdk.onnx import IsolatedSession
from opsdk.runtime.isolated import IsolatedOperator
from opsdk.triton import RepositoryOptions, build_repository
from opsdk.triton.testing import triton_server  # noqa: F401 - the fixture

OP_DIR = Path(__file__).resolve().parents[1] / "data" / "misbehave"
CAP_S = 600.0  # only a hung worker reaches it


def _model(tmp_path: Path) -> Path:
    """A graph Relu -> Misbehave (node 'copy') -> Relu."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Misbehave", ["r"], ["m"], domain="com.opsdk.test", name="copy"),
             helper.make_node("Relu", ["m"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", T.DOUBLE, ["n"])],
                          [helper.make_tensor_value_info("y", T.DOUBLE, ["n"])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("com.opsdk.test", 1)]),
              str(tmp_path / "m.onnx"))
    return tmp_path / "m.onnx"


def _served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> IsolatedSession:
    """That graph in the serving worker."""
    monkeypatch.setenv("OPSDK_MISBEHAVE", mode)
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(OP_DIR.parent))
    return IsolatedSession(_model(tmp_path), threads=1)


@pytest.mark.parametrize("mode, message", [
    ("fork", "the kernel of Misbehave (node 'copy') started 1 child process (fork), stopped "
             "after the call; a kernel must not fork"),
    ("exit_group0", "the kernel of Misbehave (node 'copy') ended the worker process with exit "
                    "status 0 while it ran (an exit from code outside the operator module, e.g. "
                    "a library it calls); its worker process was restarted"),
])
def test_a_served_model_names_the_operator_and_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str) -> None:
    sess = _served(tmp_path, monkeypatch, mode)
    try:
        with pytest.raises(KernelCrash, match=re.escape(message)):
            sess.run(None, {"x": np.arange(3.0)})
    finally:
        sess.close()


def test_threads_sharing_a_served_model_each_get_their_own_reply(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three threads on one session, one of them sending inputs that crash the kernel: every
    other request gets its own outputs and each crash is one KernelCrash (before, replies
    crossed between threads and concurrent restarts left the callers waiting for ever)."""
    sess = _served(tmp_path, monkeypatch, "segv_on_13")
    got: dict[tuple[int, int], Any] = {}

    def calls(tid: int) -> None:
        for i in range(3):
            x = np.array([13.0 if tid == 0 and i < 2 else 100.0 * tid + i, 1.0])
            try:
                got[tid, i] = sess.run(None, {"x": x})[0]
            except KernelCrash as e:
                got[tid, i] = e

    _run_threads(calls, 3, sess.close)
    for (tid, i), y in sorted(got.items()):
        if tid == 0 and i < 2:
            assert isinstance(y, KernelCrash) and "SIGSEGV" in str(y), (tid, i, y)
        else:
            np.testing.assert_array_equal(y, [100.0 * tid + i, 1.0])
    assert len(got) == 9


def test_threads_sharing_a_validation_worker_each_get_their_own_outputs() -> None:
    """Before, replies crossed: a thread got the outputs of another thread's call."""
    op = IsolatedOperator(opsdk.load(str(OP_DIR)), timeout=CAP_S)
    wrong: list[tuple[int, int]] = []

    def calls(tid: int) -> None:
        for i in range(10):
            x = np.full(64, 1000.0 * tid + i)
            if not np.array_equal(op.run([x], {})[0], x):
                wrong.append((tid, i))

    _run_threads(calls, 4, op.close)
    assert wrong == []


def test_an_exit_from_any_code_in_a_validation_worker_says_so() -> None:
    op = IsolatedOperator(opsdk.load(str(OP_DIR)), timeout=CAP_S,
                          env={"OPSDK_MISBEHAVE": "exit_group0"})
    try:
        with pytest.raises(KernelCrash, match=re.escape(
                f"Misbehave ({OP_DIR / 'kernel.cpp'}): the kernel ended the worker process with "
                "exit status 0 while it ran (an exit from code outside the operator module, "
                "e.g. a library it calls; a kernel must return or throw, never end the "
                "process)")):
            op.run([np.arange(5.0)], {})
        # the next call runs in a fresh worker
        np.testing.assert_array_equal(op.run([np.arange(2, dtype=np.float32)], {})[0], [0, 1])
    finally:
        op.close()


def test_a_real_server_names_the_operator_that_forked(
        triton_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    """The same through tritonserver (the CPU target's Python model): the failed request's
    error names the operator and the node, and the model keeps serving."""
    import tritonclient.http as http
    from tritonclient.utils import InferenceServerException

    monkeypatch.setenv("OPSDK_MISBEHAVE", "fork")
    build_repository(_model(tmp_path), tmp_path / "repo", RepositoryOptions(
        "mis", max_batch_size=0, operators_path=(str(OP_DIR.parent),)))
    server = triton_server(tmp_path / "repo")
    x = http.InferInput("x", [3], "FP64")
    x.set_data_from_numpy(np.arange(3.0))
    with http.InferenceServerClient(server.http_url) as client:
        with pytest.raises(InferenceServerException, match=re.escape(
                "the kernel of Misbehave (node 'copy') started 1 child process (fork)")):
            client.infer("mis", [x])
        assert client.is_model_ready("mis")
    server.stop()


def _run_threads(calls: Callable[[int], None], n: int, close: Callable[[], None]) -> None:
    """Run ``calls(tid)`` on ``n`` threads at once; none may outlive the cap; then ``close``."""
    import threading

    threads = [threading.Thread(target=calls, args=(t,)) for t in range(n)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(CAP_S)
        assert not any(t.is_alive() for t in threads), "a caller hung"
    finally:
        close()


@pytest.mark.parametrize("mode, message", [
    ("loop_on_13", "the kernel of Misbehave (node 'copy') did not finish within 10 s (an "
                   "endless loop?); its worker process was stopped and restarted"),
    ("junk_on_13", "a kernel wrote into its worker's message channel ("),
])
def test_a_served_model_recovers_from_a_stuck_or_scribbling_kernel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str) -> None:
    """A request whose kernel never returns, or writes into the worker's channel, fails
    within the limit naming what happened (before: it and every later one waited for ever),
    and the next request is served by a fresh worker."""
    monkeypatch.setenv("OPSDK_MISBEHAVE", mode)
    monkeypatch.setenv("OPSDK_OPERATORS_PATH", str(OP_DIR.parent))
    sess = IsolatedSession(_model(tmp_path), threads=1, timeout=10.0)  # only a bound
    try:
        np.testing.assert_array_equal(sess.run(None, {"x": np.arange(3.0)})[0], [0, 1, 2])
        with pytest.raises(KernelCrash, match=re.escape(message)) as e:
            sess.run(None, {"x": np.full(3, 13.0)})
        if mode == "junk_on_13":
            assert "starting b'stray bytes from a kerne': a write to a file descriptor it " \
                "does not own); its worker process was restarted" in str(e.value)
        sess.timeout = CAP_S  # the next call: no limit a loaded machine could hit
        np.testing.assert_array_equal(sess.run(None, {"x": np.arange(2.0)})[0], [0, 1])
    finally:
        sess.close()


def test_a_validation_worker_finds_bytes_a_kernel_wrote_into_its_channel() -> None:
    op = IsolatedOperator(opsdk.load(str(OP_DIR)), timeout=CAP_S,
                          env={"OPSDK_MISBEHAVE": "junk_on_13"})
    try:
        with pytest.raises(KernelCrash, match=re.escape(
                f"Misbehave ({OP_DIR / 'kernel.cpp'}): a kernel wrote into its worker's "
                "message channel (")):
            op.run([np.full(4, 13.0)], {})
        np.testing.assert_array_equal(op.run([np.arange(2.0)], {})[0], [0, 1])
    finally:
        op.close()


def test_a_real_server_recovers_from_a_hang_a_crash_and_stray_writes(
        triton_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    """Through tritonserver (the CPU target's Python model, request_timeout_s 10): a request
    whose kernel never returns, one whose kernel segfaults and one whose kernel writes into
    the worker's channel each get an error naming what happened; the request after each is
    served (before: the endless kernel and the stray writes wedged the model for good while
    its ready endpoint said 200)."""
    import tritonclient.http as http
    from tritonclient.utils import InferenceServerException

    monkeypatch.setenv("OPSDK_MISBEHAVE", "by_value")
    build_repository(_model(tmp_path), tmp_path / "repo", RepositoryOptions(
        "mis", max_batch_size=0, operators_path=(str(OP_DIR.parent),),
        extra_parameters=(("request_timeout_s", "10"),)))
    server = triton_server(tmp_path / "repo")

    def infer(client: Any, first: float) -> Any:
        x = http.InferInput("x", [3], "FP64")
        x.set_data_from_numpy(np.array([first, 1.0, 2.0]))
        return client.infer("mis", [x]).as_numpy("y")

    with http.InferenceServerClient(server.http_url, network_timeout=CAP_S,
                                    connection_timeout=CAP_S) as client:
        np.testing.assert_array_equal(infer(client, 0.0), [0.0, 1.0, 2.0])
        for first, said in ((13.0, "the kernel of Misbehave (node 'copy') did not finish "
                                   "within 10 s (an endless loop?)"),
                            (14.0, "the kernel of Misbehave crashed with SIGSEGV"),
                            (15.0, "a kernel wrote into its worker's message channel")):
            with pytest.raises(InferenceServerException, match=re.escape(said)):
                infer(client, first)
            np.testing.assert_array_equal(infer(client, 7.0), [7.0, 1.0, 2.0])
        assert client.is_model_ready("mis")
    server.stop()
