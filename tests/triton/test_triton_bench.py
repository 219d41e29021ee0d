"""`opsdk.triton.bench`: the benchmark behind `opsdk bench --triton` against a real server."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from opsdk.triton import RepositoryOptions, TritonConfigError, build_repository
from opsdk.triton.bench import bench_triton, format_table
from opsdk.triton.testing import serve_env_or_skip
from tests._helpers.triton_models import graph_session, mlp_model


@pytest.mark.slow
def test_bench_measures_every_mode_against_the_graph_executor(tmp_path: Path) -> None:
    src = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(src))
    graph_session(src)
    env = serve_env_or_skip()
    build_repository(src, tmp_path / "repo", RepositoryOptions("mlp", max_batch_size=8,
                                                               operators_path=()))
    result = bench_triton(tmp_path / "repo", "mlp", requests=24, concurrency=(1, 4),
                          warmup=2, venv=env.venv)
    modes = sorted((r["dynamic_batching"], r["concurrency"]) for r in result["runs"])
    assert modes == [(False, 1), (False, 4), (True, 1), (True, 4)]
    for run in result["runs"]:
        assert run["errors"] == 0, run["first_error"]
        assert 0 < run["p50_ms"] <= run["p99_ms"]
        assert run["throughput_rps"] > 0
    assert set(result["overhead_ms"]) == {"on", "off"}
    assert result["direct"]["p50_ms"] > 0
    json.dumps(result)  # --json must be able to print it
    table = format_table(result)
    assert "graph executor, in-process" in table and "dynamic batching on" in table


def test_bench_rejects_a_non_cpu_model(tmp_path: Path) -> None:
    src = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(src))
    build_repository(src, tmp_path / "repo", RepositoryOptions("net", target="ascend"))
    with pytest.raises(TritonConfigError, match="uses backend 'npu_ge'; bench --triton runs"):
        bench_triton(tmp_path / "repo", "net")
    with pytest.raises(TritonConfigError, match="has no config.pbtxt"):
        bench_triton(tmp_path / "repo", "missing")


def test_bench_cli_hook_arguments() -> None:
    import argparse

    from opsdk.triton.bench import add_triton_arguments, run_triton_bench

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")  # the bench command's own
    add_triton_arguments(parser)
    args = parser.parse_args(["--triton", "repo", "--triton-concurrency", "1,4", "--json"])
    assert args.triton == "repo" and args.triton_concurrency == (1, 4) and args.json
    with pytest.raises(TritonConfigError, match="needs --model NAME"):
        run_triton_bench(args)
