"""A real tritonserver (nvidia-pytriton, serving venv) on 127.0.0.1 serving opsdk repositories.

Needs the serving venv (``bash .ci/serve_env.sh``); where it is missing these tests skip with
that command, except under CI where they fail. A server that cannot start fails the tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import tritonclient.grpc as grpc  # noqa: E402
import tritonclient.http as http  # noqa: E402
from tritonclient.utils import InferenceServerException  # noqa: E402

from opsdk.triton import RepositoryOptions, TritonServer, TritonServerError, build_repository
from opsdk.triton.testing import process_gone, serve_env_or_skip, triton_server  # noqa: F401
from tests._helpers.procs import running_with as _with_token
from tests._helpers.triton_models import custom_op_model, graph_session, mlp_model

pytestmark = pytest.mark.slow
MAX_BATCH = 8
SHM = Path("/dev/shm")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("onnx") / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    return path


@pytest.fixture(scope="module")
def repo(model_file: Path, custom_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two models of the same graph: with dynamic batching and without."""
    root = tmp_path_factory.mktemp("repo")
    common: dict[str, Any] = {"max_batch_size": MAX_BATCH, "operators_path": ()}
    build_repository(model_file, root, RepositoryOptions(
        "mlp", max_queue_delay_us=2000, preferred_batch_sizes=(4, 8), warmup=True, **common))
    build_repository(model_file, root, RepositoryOptions(
        "mlp_unbatched", dynamic_batching=False, **common))
    build_repository(custom_file, root, RepositoryOptions("custom", max_batch_size=MAX_BATCH))
    return root


@pytest.fixture(scope="module")
def custom_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A graph with an opsdk custom node (com.opsdk::ThresholdedRelu) next to standard ones."""
    path = tmp_path_factory.mktemp("onnx") / "custom.onnx"
    onnx.save(custom_op_model("com.opsdk", "ThresholdedRelu"), str(path))
    return path


@pytest.fixture(scope="module")
def small_repo(model_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One model, for the tests that start their own servers."""
    root = tmp_path_factory.mktemp("small_repo")
    build_repository(model_file, root, RepositoryOptions("mlp", operators_path=()))
    return root


@pytest.fixture(scope="module")
def server(repo: Path, model_file: Path, custom_file: Path) -> Iterator[TritonServer]:
    graph_session(custom_file)  # builds the custom kernel into the cache the server shares
    env = serve_env_or_skip()
    with TritonServer(repo, venv=env.venv) as srv:
        yield srv
    assert srv.pid is None


@pytest.fixture(scope="module")
def session(model_file: Path) -> Any:
    return graph_session(model_file)


def sample(batch: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((batch, 16), dtype=np.float32),
            "z": rng.standard_normal((batch, 8), dtype=np.float32)}


def http_infer(client: Any, model: str, feeds: dict[str, np.ndarray],
               dtypes: dict[str, str] | None = None) -> np.ndarray:
    inputs = []
    for name, value in feeds.items():
        t = http.InferInput(name, list(value.shape), (dtypes or {}).get(name, "FP32"))
        t.set_data_from_numpy(value)
        inputs.append(t)
    return client.infer(model, inputs).as_numpy("y")


def test_http_matches_graph_executor(server: TritonServer, session: Any) -> None:
    feeds = sample(3, seed=1)
    with http.InferenceServerClient(server.http_url) as client:
        got = http_infer(client, "mlp", feeds)
    [want] = session.run(None, feeds)
    assert got.shape == (3, 8) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert np.any(got > 0)


def test_grpc_matches_graph_executor(server: TritonServer, session: Any) -> None:
    feeds = sample(5, seed=2)
    client = grpc.InferenceServerClient(server.grpc_url)
    try:
        inputs = []
        for name, value in feeds.items():
            t = grpc.InferInput(name, list(value.shape), "FP32")
            t.set_data_from_numpy(value)
            inputs.append(t)
        got = client.infer("mlp_unbatched", inputs).as_numpy("y")
    finally:
        client.close()
    [want] = session.run(None, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_custom_operator_node_serves_like_the_graph_executor(
    server: TritonServer, custom_file: Path
) -> None:
    x = np.array([[-2.0, 0.5, 1.0, 3.0], [1.5, -0.1, 0.99, 7.0]], np.float32)
    with http.InferenceServerClient(server.http_url) as client:
        t = http.InferInput("x", list(x.shape), "FP32")
        t.set_data_from_numpy(x)
        got = client.infer("custom", [t]).as_numpy("y")
    [want] = graph_session(custom_file).run(None, {"x": x})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.where(x > 1.0, x, 0.0))  # ThresholdedRelu, alpha=1


def run_clients(url: str, jobs: list[Callable[[Any], None]], workers: int = 8) -> list[str]:
    """Run the jobs from ``workers`` threads, one HTTP client each; return the errors."""
    errors: list[str] = []
    lock = threading.Lock()
    chunks = [jobs[i::workers] for i in range(workers)]

    def worker(chunk: list[Callable[[Any], None]]) -> None:
        with http.InferenceServerClient(url, connection_timeout=30, network_timeout=30) as c:
            for job in chunk:
                try:
                    job(c)
                except Exception as e:  # collected and asserted on below
                    with lock:
                        errors.append(f"{type(e).__name__}: {e}")

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(worker, chunks))
    return errors


def stats(client: Any, model: str, requests: int = 0) -> tuple[int, int, int]:
    """(requests, inferences, executions) of `model` once they count every execution and
    at least `requests` successful requests.

    Triton counts a request (its success and its rows) after sending its response, and the
    execution that ran it after that: the figures are complete when the executions' rows
    (batch_stats) add up to the rows counted. That is the event waited for, with a cap
    only a hung server reaches."""
    deadline = time.monotonic() + 300
    while True:
        s = client.get_inference_statistics(model)["model_stats"][0]
        now = (int(s["inference_stats"]["success"]["count"]), int(s["inference_count"]),
               int(s["execution_count"]))
        executed = sum(int(b["batch_size"]) * int(b["compute_infer"]["count"])
                       for b in s.get("batch_stats", []))
        if now[0] >= requests and executed == now[1]:
            return now
        if time.monotonic() > deadline:
            raise AssertionError(f"statistics of {model} never counted every request and "
                                 f"execution: {now}, rows executed {executed}")
        time.sleep(0.01)


def test_batched_and_unbatched_give_equal_results(server: TritonServer, session: Any) -> None:
    requests = [sample(1 + i % 3, seed=100 + i) for i in range(48)]
    results: dict[tuple[str, int], np.ndarray] = {}

    def job(model: str, i: int) -> Callable[[Any], None]:
        def run(client: Any) -> None:
            results[(model, i)] = http_infer(client, model, requests[i])
        return run

    with http.InferenceServerClient(server.http_url) as client:
        before = {m: stats(client, m) for m in ("mlp", "mlp_unbatched")}
        jobs = [job(m, i) for m in ("mlp", "mlp_unbatched") for i in range(len(requests))]
        assert run_clients(server.http_url, jobs) == []
        after = {m: stats(client, m, before[m][0] + len(requests))
                 for m in ("mlp", "mlp_unbatched")}
    for i, feeds in enumerate(requests):
        [want] = session.run(None, feeds)
        np.testing.assert_array_equal(results[("mlp", i)], results[("mlp_unbatched", i)])
        np.testing.assert_allclose(results[("mlp", i)], want, rtol=1e-6, atol=1e-6)
    diff = {m: [a - b for a, b in zip(after[m], before[m], strict=True)] for m in after}
    for model in ("mlp", "mlp_unbatched"):
        assert diff[model][:2] == [len(requests), sum(len(r["x"]) for r in requests)]
    assert diff["mlp"][2] < len(requests), "dynamic batching never merged concurrent requests"
    assert diff["mlp_unbatched"][2] == len(requests)  # no dynamic batching: one run per request


def test_eight_concurrent_clients_200_requests_each(server: TritonServer, session: Any) -> None:
    feeds = [sample(1 + i % 4, seed=1000 + i) for i in range(16)]
    wants = [session.run(None, f)[0] for f in feeds]

    def job(i: int) -> Callable[[Any], None]:
        def run(client: Any) -> None:
            got = http_infer(client, "mlp", feeds[i % 16])
            np.testing.assert_allclose(got, wants[i % 16], rtol=1e-6, atol=1e-6)
        return run

    errors = run_clients(server.http_url, [job(i) for i in range(8 * 200)])
    assert errors == [], f"{len(errors)} of 1600 requests failed, first: {errors[:3]}"
    assert server.poll() is None


MALFORMED = {
    "wrong dtype": ({"x": np.zeros((2, 16), np.float64), "z": np.zeros((2, 8), np.float32)},
                    {"x": "FP64"}, "data-type is 'FP64', but model 'mlp' expects 'FP32'"),
    "wrong shape": ({"x": np.zeros((2, 15), np.float32), "z": np.zeros((2, 8), np.float32)},
                    None, "unexpected shape for input 'x'"),
    "wrong input name": ({"q": np.zeros((2, 16), np.float32), "z": np.zeros((2, 8), np.float32)},
                         None, "unexpected inference input 'q'"),
    "missing input": ({"x": np.zeros((2, 16), np.float32)}, None, "expected 2 inputs but got 1"),
    "oversize batch": ({"x": np.zeros((9, 16), np.float32), "z": np.zeros((9, 8), np.float32)},
                       None, f"batch-size must be <= {MAX_BATCH}"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_request_gets_an_error_and_server_keeps_serving(
    server: TritonServer, session: Any, case: str
) -> None:
    feeds, dtypes, message = MALFORMED[case]
    with http.InferenceServerClient(server.http_url) as client:
        with pytest.raises(InferenceServerException, match=message):
            http_infer(client, "mlp", feeds, dtypes)
        good = sample(2, seed=7)
        np.testing.assert_allclose(http_infer(client, "mlp", good), session.run(None, good)[0],
                                   rtol=1e-6, atol=1e-6)
    assert server.poll() is None


def test_a_model_that_fails_to_load_fails_the_start_loudly(
    small_repo: Path, model_file: Path, tmp_path: Path
) -> None:
    graph_session(model_file)
    env = serve_env_or_skip()
    broken = tmp_path / "broken"
    shutil.copytree(small_repo, broken)
    (broken / "mlp" / "1" / "model.onnx").unlink()
    server = TritonServer(broken, venv=env.venv)
    try:
        with pytest.raises(TritonServerError, match=r"(?s)exited with code 1 before it was "
                           r"ready.*failed to load 'mlp'.*model\.onnx"):
            server.start()
    finally:
        server.stop()  # a server that did start is not left running (issue 23 item 15)
    assert server.pid is None
    # this server's segments only: the other test worker's servers make theirs meanwhile
    assert not list(SHM.glob(f"{server.shm_prefix}*"))


_FIXTURE_RUN: dict[str, Any] = {}


def test_fixture_starts_a_ready_server(
    triton_server: Callable[..., TritonServer], small_repo: Path, model_file: Path  # noqa: F811
) -> None:
    graph_session(model_file)
    srv = triton_server(small_repo)
    with http.InferenceServerClient(srv.http_url) as client:
        assert client.is_model_ready("mlp")
        http_infer(client, "mlp", sample(1, seed=3))
    assert list(SHM.glob(f"{srv.shm_prefix}*")), "the Python backend made no shm segment"
    _FIXTURE_RUN.update(pid=srv.pid, prefix=srv.shm_prefix)


def test_after_the_fixture_the_server_is_gone_and_shm_is_clean() -> None:
    if "pid" not in _FIXTURE_RUN:
        pytest.fail("test_fixture_starts_a_ready_server did not run first")
    assert process_gone(_FIXTURE_RUN["pid"])
    assert not list(SHM.glob(f"{_FIXTURE_RUN['prefix']}*"))


def test_opsdk_serve_stops_cleanly_on_sigint(small_repo: Path, model_file: Path) -> None:
    graph_session(model_file)
    env = serve_env_or_skip()
    cmd = [sys.executable, "-m", "opsdk", "serve", str(small_repo), "--venv", str(env.venv)]
    pid = None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None and proc.stderr is not None
            lines = []
            for line in proc.stdout:  # bounded: the CLI prints 6 lines once ready, or exits
                lines.append(line)
                if line.startswith("Ctrl-C"):
                    break
            text = "".join(lines)
            assert "HTTP  http://127.0.0.1:" in text, text + proc.stderr.read()
            pid = int(text.split("(pid ")[1].split(")")[0])
            url = text.split("HTTP  http://")[1].split()[0]
            with http.InferenceServerClient(url) as client:
                assert client.is_server_ready()
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=600) == 0  # a cap for a hung stop only (issue 23 item 15)
            assert process_gone(pid)
            assert "tritonserver stopped (exit code 0)" in proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
            if pid is not None and not process_gone(pid):  # the server runs in its own session
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)


def test_a_crashing_kernel_fails_its_request_and_the_model_keeps_serving(
    triton_server: Callable[..., TritonServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """Issue 23 item 3: a request whose kernel segfaults gets an error naming the operator,
    the model stays ready and serves the next requests, and no worker outlives the server."""
    from onnx import TensorProto as T
    from onnx import helper

    token = os.urandom(8).hex()
    monkeypatch.setenv("OPSDK_MISBEHAVE", "segv_on_13")  # tests/data/misbehave, float64 kernel
    monkeypatch.setenv("OPSDK_TEST_TOKEN", token)
    g = helper.make_graph(
        [helper.make_node("Misbehave", ["x"], ["y"], domain="com.opsdk.test")], "g",
        [helper.make_tensor_value_info("x", T.DOUBLE, ["n", 4])],
        [helper.make_tensor_value_info("y", T.DOUBLE, ["n", 4])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.opsdk.test", 1)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    ops = Path(__file__).resolve().parents[1] / "data"
    build_repository(tmp_path / "m.onnx", tmp_path / "repo",
                     RepositoryOptions("mis", max_batch_size=8, operators_path=(str(ops),)))
    server = triton_server(tmp_path / "repo")

    def infer(client: Any, value: float) -> np.ndarray:
        x = http.InferInput("x", [1, 4], "FP64")
        x.set_data_from_numpy(np.full((1, 4), value))
        return client.infer("mis", [x]).as_numpy("y")

    with http.InferenceServerClient(server.http_url) as client:
        np.testing.assert_array_equal(infer(client, 1.0), np.full((1, 4), 1.0))
        with pytest.raises(InferenceServerException,
                           match=r"the kernel of Misbehave crashed with SIGSEGV \(signal 11\)"):
            infer(client, 13.0)
        assert client.is_server_ready() and client.is_model_ready("mis")
        for v in (2.0, 3.0):
            np.testing.assert_array_equal(infer(client, v), np.full((1, 4), v))
    server.stop()
    deadline = time.monotonic() + 600  # a cap for a hung run only
    while _with_token(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _with_token(token), "a graph worker outlived the server"
