"""A served ensemble (Python step -> ONNX model -> Python step) on a real tritonserver:
its outputs equal the same steps run in one process, with dynamic batching on and off, and
the load report's server statistics count exactly the requests sent (counts, never times).
One server serves both variants for the whole module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opsdk.triton import (
    LoadTarget,
    Pipeline,
    TritonConfigError,
    TritonServer,
    build_pipeline,
    format_load_report,
    load_pipeline,
    load_report,
    plot_load_report,
    run_pipeline,
    variant_server,
)
from opsdk.triton.testing import serve_env_or_skip
from tests._helpers.pipelines import write_pipeline

pytestmark = pytest.mark.slow
REQUESTS = 12
BATCH = 2


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    return load_pipeline(write_pipeline(tmp_path_factory.mktemp("src")))


@pytest.fixture(scope="module")
def repo(pipe: Pipeline, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    build_pipeline(pipe, root, operators_path=())
    return root


@pytest.fixture(scope="module")
def served(repo: Path) -> Iterator[LoadTarget]:
    env = serve_env_or_skip()
    with variant_server(repo, "scaled_mlp", venv=env.venv) as target:
        yield target
    assert target.server.pid is None


def _infer(target: LoadTarget, model: str, feeds: dict[str, np.ndarray]) -> Any:
    import tritonclient.http as http

    inputs = []
    for name, value in feeds.items():
        t = http.InferInput(name, list(value.shape), "FP32")
        t.set_data_from_numpy(value)
        inputs.append(t)
    with http.InferenceServerClient(target.server.http_url) as client:
        return client.infer(model, inputs)


@pytest.mark.parametrize("batching", [True, False], ids=["dynbatch", "nobatch"])
def test_ensemble_output_equals_the_steps_in_one_process(
    served: LoadTarget, pipe: Pipeline, batching: bool
) -> None:
    rng = np.random.default_rng(7)
    for rows in (1, 3):
        feeds = {"raw": rng.standard_normal((rows, 16), dtype=np.float32),
                 "z": rng.standard_normal((rows, 8), dtype=np.float32)}
        result = _infer(served, served.name(batching), feeds)
        want = run_pipeline(pipe, feeds)
        np.testing.assert_array_equal(result.as_numpy("label"), want["label"])
        np.testing.assert_allclose(result.as_numpy("score"), want["score"], rtol=1e-6)
        assert result.as_numpy("label").shape == (rows, 1)


def test_load_report_server_counts_match_the_requests_sent(
    served: LoadTarget, repo: Path, tmp_path: Path
) -> None:
    report = load_report(repo, "scaled_mlp", concurrency=(1, 4), requests=REQUESTS,
                         batch=BATCH, served=served)
    assert report["ensemble"] and report["models"] == ["scale", "mlp", "top"]
    assert report["inputs"] == {"raw": [BATCH, 16], "z": [BATCH, 8]}
    modes = [(r["dynamic_batching"], r["concurrency"]) for r in report["runs"]]
    assert modes == [(True, 1), (True, 4), (False, 1), (False, 4)]
    for run in report["runs"]:
        client = run["client"]
        assert client["errors"] == 0, client["first_error"]
        assert client["requests"] == REQUESTS
        assert client["p50_ms"] <= client["p90_ms"] <= client["p99_ms"]
        assert sorted(run["server"]) == ["mlp", "scale", "scaled_mlp", "top"]
        for name, stats in run["server"].items():
            assert stats["success"] == REQUESTS and stats["fail"] == 0, (name, stats)
            assert stats["inference_count"] == REQUESTS * BATCH, (name, stats)
            if name == "scaled_mlp":
                continue
            sizes = {int(b): n for b, n in stats["batch_sizes"].items()}
            assert sum(b * n for b, n in sizes.items()) == REQUESTS * BATCH, (name, sizes)
            assert sum(sizes.values()) == stats["execution_count"], (name, stats)
            if not run["dynamic_batching"] or run["concurrency"] == 1:
                assert sizes == {BATCH: REQUESTS}, (name, run["concurrency"], sizes)
    json.dumps(report)  # --json prints it
    table = format_load_report(report)
    assert "ensemble of scale, mlp, top" in table and "p90 ms" in table
    assert f"mlp: {REQUESTS} ok, 0 failed" in table
    png = plot_load_report(report, tmp_path / "load.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(TritonConfigError, match="load.png exists; pass --force"):
        plot_load_report(report, png)


def test_load_report_refuses_an_npu_ge_model(tmp_path: Path, pipe: Pipeline) -> None:
    build_pipeline(pipe, tmp_path, target="ascend")
    with pytest.raises(TritonConfigError, match=r"model 'mlp' uses backend 'npu_ge', which "
                                                r"this host's tritonserver does not have"):
        load_report(tmp_path, "scaled_mlp")


def test_ctrl_c_while_the_server_loads_leaves_no_server(repo: Path) -> None:
    """Found interrupting `opsdk triton bench` during startup: the server outlived it."""
    from opsdk.triton.testing import process_gone

    env = serve_env_or_skip()
    server = TritonServer(repo, venv=env.venv)
    seen: list[int] = []

    def interrupted() -> None:
        assert server.pid is not None and server.poll() is None
        seen.append(server.pid)
        raise KeyboardInterrupt

    server._wait_ready = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        server.start()
    assert len(seen) == 1 and server.pid is None
    assert process_gone(seen[0])
    assert not list(Path("/dev/shm").glob(f"{server.shm_prefix}*"))
