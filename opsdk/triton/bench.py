"""`opsdk bench --triton REPO --model NAME`: latency and throughput of a served model.

One tritonserver serves two copies of the model, one with dynamic batching and one without
(the version folder is shared through a symlink). Each is driven at concurrency 1 and 8 by
threads with their own tritonclient HTTP (or gRPC) client; every request is timed. The same
inputs also run in-process in ``opsdk.onnx.Session`` so the serving overhead can be read off.
Figures depend on the host; compare ratios measured in one run, never absolute times.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import TritonConfigError
from ._server import TritonServer

__all__ = ["bench_triton", "format_table", "add_triton_arguments", "run_triton_bench"]

_VARIANTS = {True: "__dynbatch", False: "__nobatch"}


def _load_config(folder: Path) -> Any:
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    path = folder / "config.pbtxt"
    if not path.is_file():
        raise TritonConfigError(
            f"{folder} has no config.pbtxt; pass a repository made by `opsdk triton build` "
            "and the model's name (--model)"
        )
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


def _variant_repo(src: Path, config: Any, dest: Path, delay_us: int) -> dict[bool, str]:
    """dest/<name>__dynbatch and dest/<name>__nobatch sharing src's version folders."""
    from google.protobuf import text_format

    modes = [True, False] if config.max_batch_size > 0 else [False]
    names = {}
    for on in modes:
        name = f"{config.name}{_VARIANTS[on]}"
        folder = dest / name
        folder.mkdir()
        for item in src.iterdir():
            if item.is_dir():
                (folder / item.name).symlink_to(item.resolve())
        variant = type(config)()
        variant.CopyFrom(config)
        variant.name = name
        variant.ClearField("dynamic_batching")
        if on:
            variant.dynamic_batching.max_queue_delay_microseconds = (
                config.dynamic_batching.max_queue_delay_microseconds or delay_us
            )
            variant.dynamic_batching.preferred_batch_size.extend(
                config.dynamic_batching.preferred_batch_size
            )
        (folder / "config.pbtxt").write_text(text_format.MessageToString(variant))
        names[on] = name
    return names


def _inputs(config: Any, batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    from tritonclient.utils import triton_to_np_dtype

    rng = np.random.default_rng(seed)
    feeds = {}
    for t in config.input:
        dims = [1 if d < 0 else int(d) for d in t.dims]
        shape = [batch, *dims] if config.max_batch_size > 0 else dims
        dtype = np.dtype(triton_to_np_dtype(_type_name(t.data_type)))
        if dtype.kind == "f":
            feeds[t.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[t.name] = rng.integers(0, 2, shape).astype(dtype)
        else:
            feeds[t.name] = rng.integers(0, 10, shape).astype(dtype)
    return feeds


def _type_name(data_type: int) -> str:
    from tritonclient.grpc import model_config_pb2

    return str(model_config_pb2.DataType.Name(data_type)).removeprefix("TYPE_")


def _client_factory(protocol: str, server: TritonServer) -> tuple[Any, str]:
    if protocol == "http":
        import tritonclient.http as module

        return module, server.http_url
    if protocol == "grpc":
        import tritonclient.grpc as module

        return module, server.grpc_url
    raise TritonConfigError(f"protocol {protocol!r} is not one of http, grpc")


def _stats(latencies: list[float], wall: float, items: int) -> dict[str, float]:
    arr = np.asarray(latencies) * 1e3
    return {
        "p50_ms": float(np.percentile(arr, 50)),
        "p90_ms": float(np.percentile(arr, 90)),
        "p99_ms": float(np.percentile(arr, 99)),
        "mean_ms": float(arr.mean()),
        "throughput_rps": len(latencies) / wall,
        "throughput_items_s": items / wall,
    }


def _drive(
    protocol: str, server: TritonServer, model: str, feeds: dict[str, np.ndarray],
    concurrency: int, requests: int, warmup: int,
) -> dict[str, Any]:
    """``requests`` timed inferences from ``concurrency`` threads; latencies and errors."""
    module, url = _client_factory(protocol, server)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start_gate = threading.Barrier(concurrency + 1)

    def worker(count: int) -> None:
        client = module.InferenceServerClient(url)
        try:
            inputs = []
            for name, value in feeds.items():
                t = module.InferInput(name, list(value.shape), _np_to_triton(value))
                t.set_data_from_numpy(value)
                inputs.append(t)
            for _ in range(warmup):
                client.infer(model, inputs)
            start_gate.wait()
            mine = []
            for _ in range(count):
                t0 = time.perf_counter()
                try:
                    client.infer(model, inputs)
                except Exception as e:  # counted, reported in the result
                    with lock:
                        errors.append(f"{type(e).__name__}: {e}")
                mine.append(time.perf_counter() - t0)
            with lock:
                latencies.extend(mine)
        finally:
            client.close()

    counts = [requests // concurrency + (i < requests % concurrency) for i in range(concurrency)]
    with ThreadPoolExecutor(concurrency) as pool:
        futures = [pool.submit(worker, c) for c in counts]
        start_gate.wait()
        t0 = time.perf_counter()
        for f in futures:
            f.result()
        wall = time.perf_counter() - t0
    batch = len(next(iter(feeds.values()))) if feeds else 1
    return {**_stats(latencies, wall, len(latencies) * batch), "errors": len(errors),
            "first_error": errors[0] if errors else None}


def _np_to_triton(value: np.ndarray) -> str:
    from tritonclient.utils import np_to_triton_dtype

    return str(np_to_triton_dtype(value.dtype))


def _direct(onnx_path: Path, feeds: dict[str, np.ndarray], requests: int) -> dict[str, Any]:
    """The graph executor called in-process, as the baseline for the serving overhead."""
    from ..onnx import Session

    session = Session(str(onnx_path))
    for _ in range(10):
        session.run(None, feeds)
    latencies = []
    t_start = time.perf_counter()
    for _ in range(requests):
        t0 = time.perf_counter()
        session.run(None, feeds)
        latencies.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t_start
    batch = len(next(iter(feeds.values()))) if feeds else 1
    return {**_stats(latencies, wall, requests * batch), "errors": 0}


def bench_triton(
    repo: str | Path,
    model: str,
    *,
    requests: int = 400,
    concurrency: Sequence[int] = (1, 8),
    batch: int = 1,
    protocol: str = "http",
    warmup: int = 10,
    max_queue_delay_us: int = 100,
    venv: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Measure p50/p99 latency and throughput of ``model`` served from ``repo``.

    Returns a JSON-ready dict: ``runs`` (one per dynamic-batching mode and concurrency),
    ``direct`` (the graph executor in-process) and ``overhead_ms`` (p50 at concurrency 1
    minus the direct p50, per mode).

    Example:
        >>> result = bench_triton("repo", "mlp", requests=200)  # doctest: +SKIP
        >>> print(format_table(result))  # doctest: +SKIP
    """
    note = progress or (lambda _m: None)
    src = Path(repo) / model
    config = _load_config(src)
    if config.backend != "python":
        raise TritonConfigError(
            f"model '{model}' uses backend {config.backend!r}; bench --triton runs the cpu "
            "target (Python backend) here: rebuild it with `opsdk triton build --target cpu`"
        )
    versions = sorted((p for p in src.iterdir() if p.is_dir() and p.name.isdigit()),
                      key=lambda p: int(p.name))
    if not versions:
        raise TritonConfigError(f"{src} has no version folder (1/, 2/, ...)")
    feeds = _inputs(config, batch)
    work = Path(tempfile.mkdtemp(prefix="opsdk-bench-"))
    try:
        names = _variant_repo(src, config, work, max_queue_delay_us)
        note(f"starting tritonserver with {', '.join(names.values())}")
        t0 = time.perf_counter()
        with TritonServer(work, venv=venv, progress=note) as server:
            startup = time.perf_counter() - t0
            runs = []
            for on, name in names.items():
                for conc in concurrency:
                    note(f"dynamic batching {'on' if on else 'off'}, concurrency {conc}")
                    stats = _drive(protocol, server, name, feeds, conc, requests, warmup)
                    runs.append({"dynamic_batching": on, "concurrency": conc, **stats})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    onnx_path = versions[-1] / _onnx_name(config)
    note("graph executor, in-process")
    direct = _direct(onnx_path, feeds, requests)
    return _result(model, Path(repo), protocol, batch, requests, feeds, startup, runs, direct)


def _onnx_name(config: Any) -> str:
    param = config.parameters.get("onnx_model")
    return str(param.string_value) if param is not None and param.string_value else "model.onnx"


def _result(
    model: str, repo: Path, protocol: str, batch: int, requests: int,
    feeds: dict[str, np.ndarray], startup: float, runs: list[dict[str, Any]],
    direct: dict[str, Any],
) -> dict[str, Any]:
    overhead = {
        ("on" if r["dynamic_batching"] else "off"): r["p50_ms"] - direct["p50_ms"]
        for r in runs
        if r["concurrency"] == 1
    }
    return {
        "model": model,
        "repository": str(repo),
        "protocol": protocol,
        "batch": batch,
        "requests_per_run": requests,
        "inputs": {k: list(v.shape) for k, v in feeds.items()},
        "server_startup_s": startup,
        "runs": runs,
        "direct": direct,
        "overhead_ms": overhead,
    }


def format_table(result: dict[str, Any]) -> str:
    """A plain-text table of :func:`bench_triton`'s result.

    Example:
        >>> print(format_table(result))  # doctest: +SKIP
    """
    head = (f"model {result['model']} ({result['protocol'].upper()}, batch {result['batch']}, "
            f"{result['requests_per_run']} requests per run, inputs {result['inputs']})")
    rows = [("graph executor, in-process", 1, result["direct"])]
    for r in result["runs"]:
        mode = "on" if r["dynamic_batching"] else "off"
        rows.append((f"triton, dynamic batching {mode}", r["concurrency"], r))
    lines = [head, f"{'mode':<30}{'conc':>5}{'p50 ms':>9}{'p99 ms':>9}{'req/s':>9}{'errors':>8}"]
    for label, conc, r in rows:
        lines.append(f"{label:<30}{conc:>5}{r['p50_ms']:>9.3f}{r['p99_ms']:>9.3f}"
                     f"{r['throughput_rps']:>9.0f}{r['errors']:>8}")
    over = ", ".join(f"batching {k} +{v:.3f} ms" for k, v in result["overhead_ms"].items())
    lines.append(f"serving overhead (p50 at concurrency 1 minus direct p50): {over}")
    lines.append(f"server startup: {result['server_startup_s']:.1f} s")
    return "\n".join(lines)


def add_triton_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--triton REPO --model NAME`` (and friends) to the ``opsdk bench`` parser.

    Example:
        >>> p = argparse.ArgumentParser()
        >>> add_triton_arguments(p)
        >>> p.parse_args(["--triton", "repo", "--model", "mlp"]).triton_concurrency
        (1, 8)
    """
    g = parser.add_argument_group("Triton serving (--triton)")
    g.add_argument("--triton", metavar="REPO", default=None,
                   help="benchmark a model served by tritonserver from this repository")
    g.add_argument("--model", default=None, help="model name in the repository (--triton)")
    g.add_argument("--triton-requests", type=int, default=400, help="timed requests per run")
    g.add_argument("--triton-concurrency", type=_ints, default=(1, 8), help="e.g. 1,8")
    g.add_argument("--triton-batch", type=int, default=1, help="rows per request")
    g.add_argument("--triton-protocol", choices=("http", "grpc"), default="http")
    try:
        parser.add_argument("--json", action="store_true", help="print JSON")
    except argparse.ArgumentError:
        pass  # the bench command has its own --json: it is shared


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def run_triton_bench(args: argparse.Namespace) -> int:
    """Run ``opsdk bench --triton`` from parsed arguments; print a table or JSON."""
    if not args.model:
        raise TritonConfigError("--triton REPO needs --model NAME (the model to benchmark)")
    result = bench_triton(
        args.triton, args.model, requests=args.triton_requests,
        concurrency=args.triton_concurrency, batch=args.triton_batch,
        protocol=args.triton_protocol,
        progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True),
    )
    print(json.dumps(result, indent=2) if getattr(args, "json", False) else format_table(result))
    return 0
