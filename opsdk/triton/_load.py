"""`opsdk triton bench REPO --model NAME`: a load report of a served model or ensemble.

One tritonserver serves two variants of the model and everything it runs (an ensemble's
steps): ``<m>__dynbatch`` with dynamic batching on every batching model, ``<m>__nobatch``
without (version folders shared through symlinks, configs rewritten). Each variant is
driven at each concurrency by client threads (``bench._drive``); the server's own
statistics (``/v2/models/<m>/stats``: request counts, queue and compute time, the batch
sizes it executed) are read before and after each run and reported as the difference,
per model, beside the client's latency percentiles and throughput.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._limits import allocation_problem
from .._written import write_file
from ._errors import TritonConfigError
from ._server import TritonServer
from .bench import _drive, _load_config, _type_name

__all__ = ["load_report", "format_load_report", "plot_load_report", "variant_server",
           "LoadTarget"]

_SUFFIX = {True: "__dynbatch", False: "__nobatch"}
_TIMES = ("queue", "compute_input", "compute_infer", "compute_output")


def _members(repo: Path, model: str) -> dict[str, Any]:
    """The model and, for an ensemble, every model it runs (nested ones too): name -> config."""
    found: dict[str, Any] = {}
    todo = [model]
    while todo:
        name = todo.pop(0)
        if name in found:
            continue
        found[name] = config = _load_config(repo / name)
        if config.platform == "ensemble":
            todo += [s.model_name for s in config.ensemble_scheduling.step]
        elif config.backend != "python":
            raise TritonConfigError(
                f"model '{name}' uses backend {config.backend!r}, which this host's "
                "tritonserver does not have (it serves the Python backend and ensembles): "
                "build the cpu target (--target cpu) to measure it here")
    return found


def _variant(repo: Path, configs: Mapping[str, Any], dest: Path, on: bool) -> None:
    """dest/<name><suffix> for every model: its folders linked, its config rewritten."""
    from google.protobuf import text_format

    for name, config in configs.items():
        folder = dest / f"{name}{_SUFFIX[on]}"
        folder.mkdir()
        for item in (repo / name).iterdir():
            if item.is_dir():
                (folder / item.name).symlink_to(item.resolve())
        variant = type(config)()
        variant.CopyFrom(config)
        variant.name = folder.name
        for step in variant.ensemble_scheduling.step:
            step.model_name += _SUFFIX[on]
        if variant.platform != "ensemble":
            delay = config.dynamic_batching.max_queue_delay_microseconds or 100
            variant.ClearField("dynamic_batching")
            if on and config.max_batch_size > 0:
                variant.dynamic_batching.max_queue_delay_microseconds = delay
                variant.dynamic_batching.preferred_batch_size.extend(
                    config.dynamic_batching.preferred_batch_size)
        (folder / "config.pbtxt").write_text(text_format.MessageToString(variant))


def check_input_names(config: Any, shapes: Mapping[str, Sequence[int]],
                      given: Mapping[str, Any]) -> None:
    """Refuse a ``--shape`` or ``--input`` naming no input of the model (it would be
    ignored, and the whole report run on shapes the user did not mean), and an input given
    both ways (the array's own shape is sent).

    Example:
        >>> from tritonclient.grpc import model_config_pb2 as pb
        >>> config = pb.ModelConfig(name="m", input=[pb.ModelInput(name="x")])
        >>> try:
        ...     check_input_names(config, {"images": (3, 224, 224)}, {})
        ... except TritonConfigError as e:
        ...     print(e)
        model 'm': --shape images=3,224,224 names no input of the model; its inputs are 'x'
    """
    names = [t.name for t in config.input]
    for flag, named in (("--shape", shapes), ("--input", given)):
        for name, value in named.items():
            if name not in names:
                shown = ",".join(map(str, value)) if flag == "--shape" else "FILE"
                raise TritonConfigError(
                    f"model '{config.name}': {flag} {name}={shown} names no input of the "
                    f"model; its inputs are {', '.join(repr(n) for n in names) or 'none'}")
    both = sorted(set(shapes) & set(given))
    if both:
        raise TritonConfigError(
            f"model '{config.name}': input '{both[0]}' is given by --input and by --shape; the "
            "file's array is sent with its own shape: drop --shape " + both[0])


def _feeds(config: Any, batch: int, shapes: Mapping[str, Sequence[int]],
           given: Mapping[str, np.ndarray], seed: int = 0) -> dict[str, np.ndarray]:
    """``given`` and random inputs of the model's dtypes for the others: dims from
    ``shapes``, else the config's."""
    from tritonclient.utils import triton_to_np_dtype

    rng = np.random.default_rng(seed)
    feeds = dict(given)
    for t in config.input:
        if t.name in given:
            continue
        dims = list(shapes.get(t.name, t.dims))
        if len(dims) != len(t.dims) or any(d < 1 for d in dims):
            raise TritonConfigError(
                f"model '{config.name}': input '{t.name}' has dims {list(t.dims)}; give its "
                f"size per request with --shape {t.name}=" + ",".join(
                    "N" if d < 0 else str(d) for d in t.dims))
        shape = [batch, *dims] if config.max_batch_size > 0 else dims
        dtype = np.dtype(triton_to_np_dtype(_type_name(t.data_type)))
        problem = allocation_problem(tuple(shape), dtype.itemsize)
        if problem:
            raise TritonConfigError(f"model '{config.name}': input '{t.name}' of shape {shape} "
                                    f"(--batch {batch}, --shape) {problem}")
        if dtype.kind == "f":
            feeds[t.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iub":
            feeds[t.name] = rng.integers(0, 2 if dtype.kind == "b" else 10, shape).astype(dtype)
        else:
            raise TritonConfigError(f"model '{config.name}': input '{t.name}' is "
                                    f"{_type_name(t.data_type)}; the load report makes "
                                    "numeric inputs only: give its value with --input "
                                    f"{t.name}=FILE (a file's bytes, e.g. a PNG)")
    return feeds


def _snapshot(client: Any, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for name in names:
        stats = client.get_inference_statistics(name)["model_stats"][0]
        inf = stats["inference_stats"]
        out[name] = {
            "success": int(inf["success"]["count"]), "fail": int(inf["fail"]["count"]),
            "inference_count": int(stats.get("inference_count", 0)),
            "execution_count": int(stats.get("execution_count", 0)),
            **{f"{k}_ns": int(inf[k]["ns"]) for k in _TIMES},
            "batches": {int(b["batch_size"]): int(b["compute_infer"]["count"])
                        for b in stats.get("batch_stats", [])},
        }
    return out


def _server_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """One model's statistics over one run: counts, per-request mean times, batch sizes."""
    d = {k: after[k] - before[k] for k in ("success", "fail", "inference_count",
                                           "execution_count")}
    n = max(d["success"], 1)
    for k in _TIMES:
        d[f"{k}_ms"] = (after[f"{k}_ns"] - before[f"{k}_ns"]) / n / 1e6
    sizes = {b: after["batches"][b] - before["batches"].get(b, 0) for b in after["batches"]}
    d["batch_sizes"] = {str(b): c for b, c in sorted(sizes.items()) if c}
    return d


@contextlib.contextmanager
def variant_server(repo: str | Path, model: str, batching: Sequence[bool] = (True, False),
                   venv: str | Path | None = None,
                   progress: Callable[[str], None] | None = None) -> Iterator[LoadTarget]:
    """A tritonserver serving ``model`` (and an ensemble's steps) as ``<m>__dynbatch`` and
    ``<m>__nobatch``; stopped, and its variant folders removed, on exit.

    Example:
        >>> with variant_server("repo", "scaled_mlp") as target:  # doctest: +SKIP
        ...     target.name(True)
        'scaled_mlp__dynbatch'
    """
    root = Path(repo)
    configs = _members(root, model)
    work = Path(tempfile.mkdtemp(prefix="opsdk-load-"))
    try:
        for on in batching:
            _variant(root, configs, work, on)
        t0 = time.perf_counter()
        with TritonServer(work, venv=venv, progress=progress) as server:
            yield LoadTarget(server, root, model, configs, tuple(batching),
                             time.perf_counter() - t0)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@dataclass(frozen=True)
class LoadTarget:
    """A served variant pair: the server, the model's name and the configs it runs."""

    server: TritonServer
    repository: Path
    model: str
    configs: Mapping[str, Any]
    batching: tuple[bool, ...]
    startup_s: float

    def name(self, dynamic_batching: bool, model: str | None = None) -> str:
        """The served name of ``model`` (default: the driven one) in that variant."""
        return f"{model or self.model}{_SUFFIX[dynamic_batching]}"


def load_report(
    repo: str | Path,
    model: str,
    *,
    concurrency: Sequence[int] = (1, 2, 4, 8, 16),
    requests: int = 200,
    batch: int = 1,
    shapes: Mapping[str, Sequence[int]] | None = None,
    batching: Sequence[bool] = (True, False),
    warmup: int = 2,
    protocol: str = "http",
    venv: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    served: LoadTarget | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Drive ``model`` of ``repo`` at each concurrency, dynamic batching on and off; return
    the JSON-ready report: per run the client figures (``client``: p50/p90/p99 latency,
    throughput, errors) and the server's (``server``: per model, the counts it served,
    mean queue and compute times per request, the batch sizes it executed). ``served``: a
    :func:`variant_server` already running (else one is started and stopped here);
    ``inputs``: the request's arrays by input name (e.g. a real image; batch axis included
    for a batching model), the others random.

    Example:
        >>> report = load_report("repo", "scaled_mlp", concurrency=(1, 4))  # doctest: +SKIP
        >>> print(format_load_report(report))  # doctest: +SKIP
    """
    note = progress or (lambda _m: None)
    _check_counts(requests=requests, batch=batch, warmup=warmup, concurrency=concurrency)
    check_input_names(_load_config(Path(repo) / model), shapes or {}, inputs or {})
    if served is None:
        with variant_server(repo, model, batching, venv, note) as target:
            return load_report(repo, model, concurrency=concurrency, requests=requests,
                               batch=batch, shapes=shapes, batching=batching, warmup=warmup,
                               protocol=protocol, progress=note, served=target,
                               inputs=inputs)
    configs = served.configs
    given = dict(inputs or {})
    feeds = _feeds(configs[model], batch, shapes or {}, given)
    runs = _drive_all(served, protocol, batching, feeds, concurrency, requests, warmup, note)
    return {
        "model": model, "repository": str(served.repository), "protocol": protocol,
        "batch": batch, "ensemble": configs[model].platform == "ensemble",
        "models": [m for m in configs if m != model],
        "requests_per_run": requests, "inputs": {k: list(v.shape) for k, v in feeds.items()},
        "server_startup_s": served.startup_s, "runs": runs,
    }


def _drive_all(target: LoadTarget, protocol: str, batching: Sequence[bool],
               feeds: dict[str, np.ndarray], concurrency: Sequence[int], requests: int,
               warmup: int, note: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every (concurrency, mode) run, the modes interleaved at each concurrency so that a
    drift of the host's load falls on both alike; returned mode by mode."""
    import tritonclient.http as http

    for on in batching:
        if on not in target.batching:
            raise TritonConfigError(f"the server runs no variant with dynamic batching "
                                    f"{'on' if on else 'off'}")
        if warmup:
            _drive(protocol, target.server, target.name(on), feeds, 1, warmup, 0)
    names = list(target.configs)
    runs = []
    with http.InferenceServerClient(target.server.http_url) as client:
        for conc in concurrency:
            for on in batching:
                note(f"dynamic batching {'on' if on else 'off'}, concurrency {conc}")
                served = [target.name(on, n) for n in names]
                before = _snapshot(client, served)
                stats = _drive(protocol, target.server, target.name(on), feeds, conc,
                               requests, 0)
                after = _snapshot(client, served)
                runs.append({
                    "dynamic_batching": on, "concurrency": conc,
                    "client": {"requests": requests, **stats},
                    "server": {n: _server_delta(before[s], after[s])
                               for n, s in zip(names, served, strict=True)},
                })
    order = {on: i for i, on in enumerate(batching)}
    return sorted(runs, key=lambda r: order[r["dynamic_batching"]])


def _check_counts(*, requests: int, batch: int, warmup: int,
                  concurrency: Sequence[int]) -> None:
    """Refuse counts out of range before a server starts (``--requests -1`` once reached
    the statistics of zero requests as an IndexError)."""
    for name, value, least in (("requests", requests, 1), ("batch", batch, 1),
                               ("warmup", warmup, 0),
                               *(("concurrency", c, 1) for c in concurrency or [0])):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise TritonConfigError(f"load report: {name}={value!r} must be a whole number "
                                    f">= {least}; pass e.g. --{name} {max(least, 1)}")


def format_load_report(result: Mapping[str, Any]) -> str:
    """The report as a text table: client figures, then the server's per model.

    Example:
        >>> print(format_load_report(report))  # doctest: +SKIP
    """
    kind = f"ensemble of {', '.join(result['models'])}" if result["ensemble"] else "model"
    lines = [f"{result['model']} ({kind}; {result['protocol'].upper()}, batch "
             f"{result['batch']}, {result['requests_per_run']} requests per run, inputs "
             f"{result['inputs']})",
             f"{'batching':<9}{'conc':>5}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'req/s':>9}"
             f"{'errors':>7}   server: model queue/compute ms per request, executions, "
             "batch sizes"]
    for run in result["runs"]:
        c = run["client"]
        lines.append(f"{'on' if run['dynamic_batching'] else 'off':<9}{run['concurrency']:>5}"
                     f"{c['p50_ms']:>9.2f}{c['p90_ms']:>9.2f}{c['p99_ms']:>9.2f}"
                     f"{c['throughput_rps']:>9.1f}{c['errors']:>7}")
        for name, s in run["server"].items():
            compute = s["compute_input_ms"] + s["compute_infer_ms"] + s["compute_output_ms"]
            sizes = " ".join(f"{b}x{n}" for b, n in s["batch_sizes"].items()) or "-"
            lines.append(f"{'':<14}{name}: {s['success']} ok, {s['fail']} failed, queue "
                         f"{s['queue_ms']:.2f}, compute {compute:.2f}, "
                         f"{s['execution_count']} executions, batches {sizes}")
    lines.append(f"server startup: {result['server_startup_s']:.1f} s")
    return "\n".join(lines)


def plot_load_report(result: Mapping[str, Any], path: str | Path, force: bool = False) -> Path:
    """Write a PNG: latency p50/p99 and throughput against concurrency, one line per
    batching mode. An existing file is replaced only with ``force``.

    Example:
        >>> plot_load_report(report, "load.png")  # doctest: +SKIP
        PosixPath('load.png')
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TritonConfigError("--plot needs matplotlib: pip install 'opsdk[report]'") from None
    out = Path(path)
    if out.exists() and not force:
        raise TritonConfigError(f"{out} exists; pass --force to replace it or pick another "
                                "--plot file")
    fig, (lat, thr) = plt.subplots(1, 2, figsize=(10, 4))
    for on, color in ((True, "tab:blue"), (False, "tab:orange")):
        runs = [r for r in result["runs"] if r["dynamic_batching"] is on]
        if not runs:
            continue
        conc = [r["concurrency"] for r in runs]
        label = f"dynamic batching {'on' if on else 'off'}"
        for pct, style in (("p50", "-o"), ("p99", "--^")):
            lat.plot(conc, [r["client"][f"{pct}_ms"] for r in runs], style, color=color,
                     label=f"{label}, {pct}")
        thr.plot(conc, [r["client"]["throughput_rps"] for r in runs], "-o", color=color,
                 label=label)
    ticks = sorted({r["concurrency"] for r in result["runs"]})
    for ax, ylabel in ((lat, "latency (ms)"), (thr, "throughput (requests/s)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xlabel("concurrent clients")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{result['model']}: client latency and throughput (one host, one run)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    write_file(out.parent if str(out.parent) else Path("."), out.name, buf.getvalue())
    return out
