"""Tests of `opsdk bench` and opsdk.bench: structure and behaviour, never wall-clock time.

Shapes are tiny and rounds few (--repeat 3) so the whole file runs in seconds.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import onnx
import pytest

from opsdk.bench import (
    DEFAULT_CASES,
    Bandwidth,
    _timing,
    bench_op,
    bench_sdk,
    format_markdown,
    format_result,
    format_rows,
    measure,
    ort_equivalent,
    parse_shape,
    stream_bandwidth,
)
from opsdk.bench._cases import resolve_shapes
from opsdk.bench._ort import OrtRunner
from opsdk.cli import main
from opsdk.errors import OpsdkError, SpecError
from opsdk.registry import find_operator

FAKE_BW = Bandwidth(copy=10.0, triad=11.0, threads=2, elements=1 << 20, method="test")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["bench", *argv])
    except SystemExit as e:  # an option's type refused its value
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------- timing
def test_measure_interleaves_rounds_and_rotates_order() -> None:
    order: list[str] = []
    cands = {k: (lambda k=k: order.append(k)) for k in "abc"}
    t = measure(cands, repeat=3, warmup=0, min_sample=0.0)
    assert set(t) == {"a", "b", "c"} and all(len(v.samples) == 3 for v in t.values())
    timed = order[3:]  # the first three calls calibrate
    assert timed == list("abc") + list("bca") + list("cab")


def test_measure_settles_before_each_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """settle: a pause, then an untimed sample's worth of calls, before each timed sample.

    The pauses are recorded in order with the calls (time.sleep replaced), not measured as
    gaps between calls, which a loaded machine lengthens anywhere."""
    order: list[str] = []
    monkeypatch.setattr(_timing.time, "sleep", lambda s: order.append(f"sleep {s:g}"))
    cands = {k: (lambda k=k: order.append(k)) for k in "ab"}
    t = measure(cands, repeat=2, warmup=0, min_sample=0.0, settle=0.02)
    assert all(len(v.samples) == 2 for v in t.values())
    # after calibration (one call each): per sample a pause, the warm call, the timed call
    pause = "sleep 0.02"
    assert order == ["a", "b", pause, "a", "a", pause, "b", "b", pause, "b", "b", pause, "a", "a"]


def test_measure_calibrates_calls_per_sample() -> None:
    t = measure({"fast": lambda: None}, repeat=2, warmup=1, min_sample=0.001, max_inner=50)
    assert t["fast"].inner == 50
    assert t["fast"].median > 0 and t["fast"].best <= t["fast"].median
    assert set(t["fast"].as_dict()) >= {"median_s", "best_s", "iqr_rel", "rounds"}


def test_measure_rejects_zero_rounds() -> None:
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        measure({"x": lambda: None}, repeat=0)


# ---------------------------------------------------------------------- shapes
def test_tables_as_text_and_markdown() -> None:
    rows = [["Gelu", "1.5"], ["Softmax", "12.0"]]
    assert format_rows(["op", "ms"], rows).splitlines() == ["op         ms", "Gelu      1.5",
                                                             "Softmax  12.0"]
    assert format_markdown(("op", "ms"), rows).splitlines() == [
        "| op | ms |", "|---|---|", "| Gelu | 1.5 |", "| Softmax | 12.0 |"]


def test_parse_shape() -> None:
    assert parse_shape("4096x1024") == (None, (4096, 1024))
    assert parse_shape("Scale=1024") == ("Scale", (1024,))
    assert parse_shape("scalar") == (None, ())
    with pytest.raises(SpecError, match="expected dims like 4096x1024"):
        parse_shape("4096xabc")


def test_resolve_shapes_derives_and_reports_missing() -> None:
    ln = find_operator("LayerNormalization").spec
    assert resolve_shapes(ln, ["8x6x5"], {"axis": 1}) == {
        "X": (8, 6, 5), "Scale": (6, 5), "B": (6, 5)}
    conv = find_operator("FusedConvBnRelu").spec
    with pytest.raises(SpecError, match="no shape for input\\(s\\) w"):
        resolve_shapes(conv, ["1x3x8x8"], {})
    with pytest.raises(SpecError, match="unknown input 'Q'"):
        resolve_shapes(ln, ["Q=3"], {})
    assert resolve_shapes(ln, None, {}) == dict(DEFAULT_CASES["LayerNormalization"].shapes)


# --------------------------------------------------------------- ONNX Runtime
@pytest.mark.parametrize("name", ["Gelu", "Softmax", "LayerNormalization", "ThresholdedRelu"])
def test_ort_equivalent_is_a_valid_standard_node(name: str) -> None:
    spec = find_operator(name).spec
    x = np.random.default_rng(0).uniform(-2, 2, (3, 8)).astype(np.float32)
    inputs = [x, np.ones(8, np.float32), None][: len(spec.inputs)]
    outs = [np.empty_like(x)] + [np.empty((3, 1), np.float32) for _ in spec.outputs[1:]]
    graph = ort_equivalent(spec, inputs, spec.resolve_attrs({}), outs)
    assert graph is not None
    onnx.checker.check_model(graph.model, full_check=True)
    assert [n.op_type for n in graph.model.graph.node] == [name]
    runner = OrtRunner(graph, inputs, outs, threads=1)
    runner()
    want = spec.reference(*[a for a in inputs if a is not None])
    want = want if isinstance(want, tuple) else (want,)
    for got, w in zip(outs, want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_ort_equivalent_conv_bn_relu_folds_into_initializers() -> None:
    spec = find_operator("FusedConvBnRelu").spec
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    out = np.empty((1, 5, 6, 6), np.float32)
    attrs = spec.resolve_attrs({"pads": [1, 1, 1, 1]})
    graph = ort_equivalent(spec, [x, w, b], attrs, [out])
    assert graph is not None and graph.feeds == ["x", None, None]
    assert [n.op_type for n in graph.model.graph.node] == ["Conv", "BatchNormalization", "Relu"]
    OrtRunner(graph, [x, w, b], [out], threads=1)()
    np.testing.assert_allclose(out, spec.reference(x, w, b, **attrs), rtol=1e-4, atol=1e-4)


def test_ort_runner_reports_missing_kernels_clearly() -> None:
    spec = find_operator("Gelu").spec
    x = np.zeros(4, np.float32)
    graph = ort_equivalent(spec, [x], {"approximate": "none"}, [x])
    assert graph is not None
    graph.model.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(OpsdkError, match="ONNX Runtime cannot run the equivalent"):
        OrtRunner(graph, [x], [np.empty_like(x)], threads=1)


# ----------------------------------------------------------------- bandwidth
def test_stream_bandwidth_structure() -> None:
    bw = stream_bandwidth(elements=1 << 16, threads=2, repeat=3)
    assert bw.copy > 0 and bw.triad > 0 and bw.threads == 2 and bw.elements == 1 << 16
    assert "C++" in bw.method
    assert set(bw.as_dict()) == {"copy_gbs", "triad_gbs", "threads", "array_mib", "method"}


# ------------------------------------------------------------------ bench_op
def test_bench_op_measures_all_three_candidates() -> None:
    r = bench_op("Softmax", shapes=["16x32"], repeat=3, warmup=1, bandwidth=FAKE_BW,
                 threads=1)
    assert set(r.timings) == {"opsdk", "opsdk outputs=", "numpy", "onnxruntime"}
    assert r.shapes == {"input": (16, 32)} and r.attrs == {"axis": -1}
    assert r.regime == "cache-resident"
    assert r.bytes_moved == 2 * 16 * 32 * 4
    assert r.ort_max_abs_diff is not None and r.ort_max_abs_diff < 1e-5
    d = r.as_dict()
    json.dumps(d)
    assert set(d["candidates"]) == {"opsdk", "opsdk outputs=", "numpy", "onnxruntime"}
    assert d["regime"] == "cache-resident"
    assert d["candidates"]["opsdk"]["copy_fraction"] is not None
    assert d["bandwidth"]["method"] == "test"
    table = format_result(r)
    assert d["load_average"] is None or d["load_average"] >= 0
    for word in ("opsdk outputs=", "numpy", "onnxruntime", "GB/s", "% of copy", "bandwidth: copy",
                 "cache-resident", "load average"):
        assert word in table


def test_bench_op_conv_reports_gflops() -> None:
    r = bench_op("FusedConvBnRelu", shapes=["1x4x8x8", "6x4x3x3", "6"], repeat=3, warmup=1,
                 attrs={"pads": [1, 1, 1, 1]}, bandwidth=True, threads=1)
    assert r.flops == 2.0 * 1 * 6 * 8 * 8 * 4 * 3 * 3
    assert r.bandwidth is None  # compute-bound: no bandwidth probe
    assert r.gflops() is not None and "GFLOP/s" in format_result(r)


def test_bench_op_float16_and_skips() -> None:
    r = bench_op("Gelu", shapes=["64"], dtype="float16", repeat=3, warmup=1,
                 numpy=False, onnxruntime=False, bandwidth=False)
    assert set(r.timings) == {"opsdk", "opsdk outputs="}
    assert r.dtype == "float16" and r.bandwidth is None
    with pytest.raises(SpecError, match="--dtype int32 is not allowed for input 'X'"):
        bench_op("Gelu", shapes=["8"], dtype="int32", repeat=1, bandwidth=False)


# -------------------------------------------------------------------- the CLI
def test_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "Gelu", "--shape", "8x16", "--repeat", "3",
                           "--attr", "approximate=tanh", "--no-bandwidth")
    assert code == 0
    assert out.splitlines()[0].startswith("Gelu  float32  X=8x16  approximate=tanh")
    rows = {re.split(r"\s{2,}", line.strip())[0] for line in out.splitlines()[2:6]}
    assert rows == {"opsdk", "opsdk outputs=", "numpy", "onnxruntime"}


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "LayerNormalization", "--shape", "X=4x8", "--repeat", "3",
                           "--json", "--threads", "1")
    assert code == 0
    d: dict[str, Any] = json.loads(out)
    assert d["op"] == "LayerNormalization" and d["threads"] == 1
    assert d["shapes"] == {"X": [4, 8], "Scale": [8], "B": [8]}
    assert d["bandwidth"]["copy_gbs"] > 0
    assert d["speedup_vs_numpy"] > 0 and d["speedup_vs_onnxruntime"] > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "name an operator"),
        (("Gelu", "--attr", "approx=tanh"), "unknown attribute 'approx'"),
        (("Gelu", "--attr", "approximate"), "expected NAME=VALUE"),
        (("Softmax", "--attr", "axis=x"), "axis=x: expected int"),
        (("Gelu", "--repeat", "0"), "argument --repeat: 0 is below 1"),
        (("Gelu", "--settle", "-1"), "argument --settle: expected 0 or more seconds, got '-1'"),
        (("--triton", "repo"), "needs --model NAME"),
        (("--sdk", "bogus"), "unknown part\\(s\\) bogus"),
        (("NoSuchOp",), "NoSuchOp"),
    ],
)
def test_cli_errors(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                    message: str) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == (2 if "argument --" in message else 1)
    assert err.startswith("opsdk bench: error:") and err.count("\n") == 1
    assert re.search(message, err), err


def test_cli_triton_is_routed_to_the_serving_benchmark(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    code, _, err = run_cli(capsys, "--triton", str(tmp_path), "--model", "mlp")
    assert code == 1
    assert f"{tmp_path}/mlp" in err and "config.pbtxt" in err


def test_cli_sdk_overhead(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--sdk", "overhead", "--repeat", "3", "--json")
    assert code == 0
    figures = json.loads(out)["median_s"]
    assert set(figures) == {
        "per-call: ThresholdedRelu op(x)", "per-call: ThresholdedRelu op.run(x, out)",
        "per-call: np.add(x, x)", "per-call: np.add(x, x, out)"}
    assert all(v > 0 for v in figures.values())


@pytest.mark.slow
def test_sdk_build_figures() -> None:
    r = bench_sdk(["noop", "edit"], repeat=3)
    assert set(r.figures) == {
        "no-op rebuild (in-process build_operator)",
        "no-op rebuild (`opsdk build OP` command)",
        "kernel.cpp edit -> rebuilt module",
    }
    assert all(len(r.samples[k]) >= 1 for k in r.figures)


def test_default_benchmark_covers_both_regimes_and_both_call_paths(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from opsdk.bench import DEFAULT_CASES, BenchCase, bench_regimes, regime_of

    for case in DEFAULT_CASES.values():  # the shipped defaults really are the two regimes
        spec_bytes = [sum(4 * int(np.prod(s)) for s in shapes.values())
                      for shapes in (case.small, case.shapes)]
        assert regime_of(2 * spec_bytes[0]) == "cache-resident" or case.flops is not None
        assert regime_of(2 * spec_bytes[1]) == "memory-bound" or case.flops is not None
    monkeypatch.setitem(DEFAULT_CASES, "Gelu", BenchCase({"X": (64, 32)}, {"X": (8, 4)}))
    rs = bench_regimes("Gelu", repeat=2, warmup=1, bandwidth=False, threads=1)
    assert [r.shapes["X"] for r in rs] == [(8, 4), (64, 32)]
    assert all(set(r.timings) >= {"opsdk", "opsdk outputs="} for r in rs)
    code, out, _ = run_cli(capsys, "Gelu", "--repeat", "2", "--no-bandwidth", "--no-numpy")
    assert code == 0 and out.count("Gelu  float32  X=") == 2
    assert "X=8x4" in out and "X=64x32" in out and out.count("opsdk outputs=") >= 2
    code, out, _ = run_cli(capsys, "Gelu", "--repeat", "2", "--no-bandwidth", "--json")
    assert [d["shapes"]["X"] for d in json.loads(out)] == [[8, 4], [64, 32]]
    with pytest.raises(OpsdkError, match="regime 'warm' is not one of cache-resident"):
        bench_op("Gelu", regime="warm", repeat=1, bandwidth=False)
