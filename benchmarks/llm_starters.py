"""The LLM starters' CPU kernels against ONNX Runtime, float32 and float16, at LLM shapes.

Each ``--like llm:*`` starter is scaffolded unedited into a temporary project
(``opsdk new NAME --like llm:X``), built, and timed in one process against its ONNX Runtime
equivalent and its NumPy reference, interleaved (``opsdk.bench.measure``: every candidate
once per round, the order rotating, a pause and an untimed sample before each sample):

    llm:rms_norm              SimplifiedLayerNormalization (the starter's registered one)
    llm:add_rms_norm          SkipSimplifiedLayerNormalization, com.microsoft (registered)
    llm:rotary_embedding      RotaryEmbedding, com.microsoft (position ids and the cos/sin
                              cache as initializers, as in an exported model; built here)
    llm:swiglu                its decomposition Mul(Mul(gate, Sigmoid(gate)), up)
    llm:dequant_swiglu_quant  its decomposition (Cast/Mul/Slice/Sigmoid/ReduceMax/Round/...)

Rows are tokens x hidden (1, 32, 512, 2048 tokens x 4096); rotary is x (1, 32 heads,
tokens, 128) with a (tokens, 128) rotate-half cos/sin table of real frequencies. opsdk is
timed as ``op(x)``, the call users write; ONNX Runtime writes into preallocated outputs
(I/O binding) with the same number of intra-op threads. "vs ORT" is ONNX Runtime's median
over opsdk's (above 1: opsdk is faster). Nothing here asserts on time.

    python benchmarks/llm_starters.py [--markdown] [--json] [--repeat N] [--threads N] [--tiny]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from opsdk.bench import (
    OrtGraph,
    OrtRunner,
    fmt_seconds,
    format_markdown,
    format_rows,
    measure,
    ort_equivalent,
    register_ort_equivalent,
)

NAMES = {
    "rms_norm": "BenchRmsNorm",
    "add_rms_norm": "BenchAddRmsNorm",
    "rotary_embedding": "BenchRope",
    "swiglu": "BenchSwiglu",
    "dequant_swiglu_quant": "BenchDequantSwigluQuant",
}
ORT_NAMES = {
    "rms_norm": "SimplifiedLayerNormalization",
    "add_rms_norm": "SkipSimplifiedLayerNormalization",
    "rotary_embedding": "RotaryEmbedding (com.microsoft)",
    "swiglu": "decomposition (Sigmoid, Mul, Mul)",
    "dequant_swiglu_quant": "decomposition",
}
HIDDEN, HEADS, HEAD_DIM = 4096, 32, 128
TOKENS = (1, 32, 512, 2048)
HEADER = ["starter", "ONNX Runtime", "dtype", "shape", "opsdk op(x)", "numpy", "onnxruntime",
          "vs numpy", "vs ORT", "max abs diff vs ORT"]


@dataclass(frozen=True)
class Row:
    starter: str
    dtype: str
    tokens: int
    hidden: int


def rows(tiny: bool) -> list[Row]:
    """Every (starter, dtype, tokens) row; ``tiny``: one small shape per starter and dtype,
    and one 16 MiB rms_norm output (its non-temporal stores)."""
    tokens, hidden = ((3,), 64) if tiny else (TOKENS, HIDDEN)
    out = []
    for starter in NAMES:
        dtypes = ("int32",) if starter == "dequant_swiglu_quant" else ("float32", "float16")
        out += [Row(starter, dt, t, hidden) for dt in dtypes for t in tokens]
    return out + [Row("rms_norm", "float32", 1024, HIDDEN)] if tiny else out


def _rope_tables(tokens: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin (tokens, dim) of positions 0..tokens-1, rotate-half: cat(f, f)."""
    inv = 1.0 / (10000.0 ** (np.arange(0, dim, 2) / dim))
    f = np.outer(np.arange(tokens), inv)
    f = np.concatenate([f, f], axis=-1)
    return np.cos(f), np.sin(f)


def make_inputs(row: Row, rng: np.random.Generator) -> list[np.ndarray]:
    """The row's inputs, with values as a model has them."""
    n, d = row.tokens, row.hidden
    if row.starter == "dequant_swiglu_quant":
        return [rng.integers(-30000, 30000, (n, 2 * d), dtype=np.int32),
                rng.uniform(1e-4, 1e-3, 2 * d).astype(np.float32),
                rng.uniform(0.1, 1.0, n).astype(np.float32)]
    dt = np.dtype(row.dtype)
    if row.starter == "rotary_embedding":
        heads, head_dim = (2, 16) if d < HIDDEN else (HEADS, HEAD_DIM)
        cos, sin = _rope_tables(n, head_dim)
        x = rng.standard_normal((1, heads, n, head_dim))
        return [x.astype(dt), cos.astype(dt), sin.astype(dt)]
    gamma = 1.0 + 0.1 * rng.standard_normal(d)
    acts = [rng.standard_normal((n, d)).astype(dt)
            for _ in range(2 if row.starter in ("add_rms_norm", "swiglu") else 1)]
    return acts if row.starter == "swiglu" else [*acts, gamma.astype(dt)]


def _rotary_equivalent(spec: Any, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any],
                       outputs: Sequence[np.ndarray]) -> OrtGraph:
    """ONNX Runtime's RotaryEmbedding (com.microsoft) for x (B, N, S, D) and a (S, D)
    rotate-half table: position ids 0..S-1 and the half-width cos/sin cache are
    initializers, as an exported model has them."""
    from onnx import helper, numpy_helper

    x, cos, sin = inputs
    assert x is not None and cos is not None and sin is not None
    s, half = cos.shape[0], cos.shape[-1] // 2
    inits = [numpy_helper.from_array(np.arange(s, dtype=np.int64)[None], "position_ids"),
             numpy_helper.from_array(np.ascontiguousarray(cos[:, :half]), "cos_cache"),
             numpy_helper.from_array(np.ascontiguousarray(sin[:, :half]), "sin_cache")]
    node = helper.make_node("RotaryEmbedding", ["x", "position_ids", "cos_cache", "sin_cache"],
                            ["y"], domain="com.microsoft", interleaved=attrs["interleaved"])
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([node], "rope", [helper.make_tensor_value_info("x", elem, x.shape)],
                              [helper.make_tensor_value_info("y", elem, outputs[0].shape)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 9
    return OrtGraph(model, ["x", None, None], "com.microsoft RotaryEmbedding", ["y"])


register_ort_equivalent(NAMES["rotary_embedding"])(_rotary_equivalent)


def scaffold(root: Path) -> dict[str, Any]:
    """Scaffold every starter unedited into ``root`` and load (build) it."""
    from opsdk.cli import main
    from opsdk.naming import snake_case
    from opsdk.runtime import load

    ops = {}
    for starter, name in NAMES.items():
        print(f"  opsdk new {name} --like llm:{starter}; build ...", file=sys.stderr, flush=True)
        with contextlib.redirect_stdout(sys.stderr):  # stdout carries only the table
            status = main(["new", name, "--like", f"llm:{starter}", "--dir",
                           str(root / "operators"), "--domain", "com.llm"])
        if status != 0:
            raise SystemExit(f"opsdk new {name} --like llm:{starter} failed")
        ops[starter] = load(str(root / "operators" / snake_case(name)))
    return ops


def bench_row(op: Any, row: Row, threads: int, repeat: int, settle: float) -> dict[str, Any]:
    """One row: op(x), the NumPy reference and ONNX Runtime, interleaved; medians."""
    inputs = make_inputs(row, np.random.default_rng(0))
    attrs = op.spec.resolve_attrs({})
    op.set_num_threads(threads)
    outs = op.run(inputs, attrs)
    ort_outs = [np.empty_like(o) for o in outs]
    graph = ort_equivalent(op.spec, inputs, dict(attrs), ort_outs)
    assert graph is not None, op.spec.name
    n_out = len(graph.output_names) or len(ort_outs)
    runner = OrtRunner(graph, inputs, ort_outs[:n_out], threads)
    ref = op.spec.reference
    cands: dict[str, Callable[[], Any]] = {
        "opsdk": lambda: op(*inputs, **attrs),
        "numpy": lambda: ref(*inputs, **attrs),
        "onnxruntime": runner,
    }
    timings = measure(cands, repeat=repeat, settle=settle)
    runner()
    main_out = 1 if row.starter == "dequant_swiglu_quant" else 0  # y (int8) is its second
    ours = op(*inputs, **attrs)
    diff = float(np.max(np.abs(np.asarray(ours[main_out] if isinstance(ours, (list, tuple))
                                          else ours, np.float64)
                               - ort_outs[min(main_out, n_out - 1)].astype(np.float64)),
                        initial=0.0))
    med = {k: t.median for k, t in timings.items()}
    return {"starter": row.starter, "dtype": row.dtype, "shape": shape_label(row, inputs),
            "threads": threads, "median_s": med,
            "spread": {k: t.spread for k, t in timings.items()},
            "vs_numpy": med["numpy"] / med["opsdk"], "vs_ort": med["onnxruntime"] / med["opsdk"],
            "max_abs_diff_vs_ort": diff, "load_average": load_average()}


def shape_label(row: Row, inputs: Sequence[np.ndarray]) -> str:
    if row.starter == "rotary_embedding":
        return "x " + "x".join(map(str, inputs[0].shape)) + ", cos " + "x".join(
            map(str, inputs[1].shape))
    x = inputs[0]
    return "x".join(map(str, x.shape)) + (" int32" if x.dtype == np.int32 else "")


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - no load average on this platform
        return math.nan


def cells(r: dict[str, Any]) -> list[str]:
    m = r["median_s"]
    return [f"llm:{r['starter']}", ORT_NAMES[r["starter"]],
            "int32 -> int8" if r["dtype"] == "int32" else r["dtype"], r["shape"],
            fmt_seconds(m["opsdk"]), fmt_seconds(m["numpy"]), fmt_seconds(m["onnxruntime"]),
            f"{r['vs_numpy']:.2f}x", f"{r['vs_ort']:.2f}x", f"{r['max_abs_diff_vs_ort']:.3g}"]


def machine_note(results: Sequence[dict[str, Any]], loads: Sequence[float], repeat: int,
                 threads: int) -> str:
    import onnxruntime

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:  # pragma: no cover - not Linux
        pass
    behind = [f"{r['starter']} {r['dtype']} {r['shape']} ({r['vs_ort']:.2f}x)"
              for r in results if r["vs_ort"] < 1.0]
    return "\n".join([
        f"machine: {cpu}, {os.cpu_count()} cores, shared and loaded (1-minute load average "
        f"{min(loads):.1f} to {max(loads):.1f} during the run); onnxruntime "
        f"{onnxruntime.__version__}; {threads} threads on both sides",
        f"medians of {repeat} interleaved rounds; vs numpy / vs ORT = their median / opsdk's "
        "(above 1: opsdk is faster)",
        "rows where ONNX Runtime was faster: " + ("; ".join(behind) if behind else "none"),
    ])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=21, help="interleaved rounds per row")
    p.add_argument("--threads", type=int, default=None,
                   help="intra-op threads of both sides (default: every core)")
    p.add_argument("--settle", type=float, default=0.1,
                   help="seconds of pause and an untimed sample before each sample")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--json", action="store_true", help="print JSON results")
    p.add_argument("--tiny", action="store_true",
                   help="one tiny shape per starter and dtype, 3 rounds (a smoke run)")
    p.add_argument("--only", action="append", choices=sorted(NAMES),
                   help="run only this starter (repeatable)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    repeat = 3 if args.tiny else args.repeat
    settle = 0.0 if args.tiny else args.settle
    threads = args.threads or os.cpu_count() or 1
    selected = [r for r in rows(args.tiny) if not args.only or r.starter in args.only]
    with tempfile.TemporaryDirectory(prefix="opsdk-llm-bench-") as tmp:
        ops = scaffold(Path(tmp))
        loads, results = [load_average()], []
        for row in selected:
            print(f"  {row.starter} {row.dtype} {row.tokens} tokens ...", file=sys.stderr,
                  flush=True)
            results.append(bench_row(ops[row.starter], row, threads, repeat, settle))
            loads.append(load_average())
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    table = [cells(r) for r in results]
    print(format_markdown(HEADER, table) if args.markdown else format_rows(HEADER, table,
                                                                            left=(0, 1, 2, 3)))
    print()
    print(machine_note(results, loads, repeat, threads))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
