"""The graph executor against ONNX Runtime alone, on the same model.

Two models of N float32 elements (default 1M), each in two spellings:

- ``chain``:  x -> Mul(2) -> ThresholdedRelu(alpha=0.5) -> Add(1) -> y
- ``single``: x -> ThresholdedRelu(alpha=0.5) -> y

The *native* spelling uses ai.onnx ThresholdedRelu and runs in one
``onnxruntime.InferenceSession`` (default options, with ``intra_op_num_threads`` set to
the same thread count as the ``Session`` when one is given). The *opsdk* spelling uses
com.opsdk::ThresholdedRelu and runs in ``opsdk.onnx.Session``: ONNX Runtime parts for Mul
and Add, the compiled opsdk kernel for ThresholdedRelu.

Two regimes, both reported:

- **steady** (the target): back-to-back calls, as a busy server makes them. Rounds of
  one phase per side (``--calls`` calls each, sides alternating). Each phase starts after
  a quiet gap of ``QUIET_S`` (ONNX Runtime's threads keep polling for ~40 ms after its last
  run, opsdk's for 300 us: without the gap one side's phase ran while the other's threads
  still held a core), its first quarter is dropped (warm-up), the rest gives the phase
  median. Reported: the medians over rounds, the median of the per-round ratios and the
  worst round. Target: ratio <= 1.3.
- **after idle**: blocks of 20 calls after 0.2 s of sleep, sides alternating; the median
  over block pairs of the ratio of block medians. Cold caches and halted CPUs hit the
  executor's sleeping thread pools harder than ONNX Runtime's spinning ones.

Run: python benchmarks/graph_executor.py [--size 1048576] [--rounds 4] [--calls 400] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import opsdk
from opsdk.onnx import Session, make_node

Call = Callable[[], Any]


def build(kind: str, custom: bool) -> onnx.ModelProto:
    """The benchmark model: ``kind`` is chain or single; custom picks the opsdk op."""
    ins, outs = (["a"], ["b"]) if kind == "chain" else (["x"], ["y"])
    if custom:
        trelu = make_node("ThresholdedRelu", ins, outs, {"alpha": 0.5}, name="trelu")
    else:
        trelu = helper.make_node("ThresholdedRelu", ins, outs, alpha=0.5, name="trelu")
    nodes, inits = [trelu], []
    if kind == "chain":
        nodes = [helper.make_node("Mul", ["x", "two"], ["a"]), trelu,
                 helper.make_node("Add", ["b", "one"], ["y"])]
        inits = [numpy_helper.from_array(np.array(2, np.float32), "two"),
                 numpy_helper.from_array(np.array(1, np.float32), "one")]
    graph = helper.make_graph(
        nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])], initializer=inits,
    )
    imports = [helper.make_opsetid("", 15)]
    if custom:
        imports.append(helper.make_opsetid("com.opsdk", 1))
    return helper.make_model(graph, opset_imports=imports, ir_version=8)


def _timed(f: Call, n: int) -> list[float]:
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return ts


#: Pause before each steady phase: longer than ONNX Runtime's idle polling (~40 ms).
QUIET_S = 0.1


def steady(native: Call, ours: Call, rounds: int, calls: int) -> dict[str, float]:
    """Alternating phases of back-to-back calls; medians and the median round ratio."""
    med: dict[str, list[float]] = {"native": [], "opsdk": []}
    for r in range(rounds):
        sides = [("native", native), ("opsdk", ours)]
        for name, f in sides if r % 2 == 0 else sides[::-1]:
            time.sleep(QUIET_S)
            med[name].append(statistics.median(_timed(f, calls)[calls // 4:]))
    ratios = [o / n for o, n in zip(med["opsdk"], med["native"], strict=True)]
    return {
        "native_ms": statistics.median(med["native"]) * 1e3,
        "opsdk_ms": statistics.median(med["opsdk"]) * 1e3,
        "ratio": statistics.median(ratios),
        "worst": max(ratios),
    }


def after_idle(native: Call, ours: Call, blocks: int, block: int = 20) -> dict[str, float]:
    """Blocks of calls after 0.2 s of sleep, sides alternating; median block-pair ratio."""
    med: dict[str, list[float]] = {"native": [], "opsdk": []}
    for b in range(2 * blocks):
        name, f = (("native", native), ("opsdk", ours))[b % 2]
        time.sleep(0.2)
        med[name].append(statistics.median(_timed(f, block)))
    ratios = [o / n for o, n in zip(med["opsdk"], med["native"], strict=True)]
    return {
        "native_ms": statistics.median(med["native"]) * 1e3,
        "opsdk_ms": statistics.median(med["opsdk"]) * 1e3,
        "ratio": statistics.median(ratios),
    }


def measure(kind: str, size: int, rounds: int, calls: int, threads: int | None) -> dict[str, Any]:
    """Both regimes for one model and one ``Session(threads=...)`` setting."""
    x = np.random.default_rng(0).normal(size=size).astype(np.float32)
    so = ort.SessionOptions()
    if threads is not None:  # the same thread count on both sides
        so.intra_op_num_threads = threads
    native_sess = ort.InferenceSession(build(kind, False).SerializeToString(), so,
                                       providers=["CPUExecutionProvider"])
    ours_sess = Session(build(kind, True), threads=threads)
    np.testing.assert_array_equal(
        ours_sess.run(None, {"x": x})[0], native_sess.run(None, {"x": x})[0]
    )

    def native() -> Any:
        return native_sess.run(None, {"x": x})

    def ours() -> Any:
        return ours_sess.run(None, {"x": x})

    for f in (native, ours):
        _timed(f, 20)
    return {
        "model": kind,
        "threads": "default" if threads is None else threads,
        "elements": size,
        "parts": [s.kind for s in ours_sess.steps],
        "steady": steady(native, ours, rounds, calls),
        "after_idle": after_idle(native, ours, blocks=8),
    }


def _spin_us() -> int:
    return int(opsdk.load("ThresholdedRelu").module.get_spin_microseconds())


def _load() -> str:
    if not os.path.exists("/proc/loadavg"):
        return "n/a"
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--threads", type=int, nargs="+", default=None,
                    help="Session(threads=...) settings to measure (default: default and 1)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    settings: list[int | None] = [None, 1] if args.threads is None else list(args.threads)
    load = _load()
    rows = [
        measure(kind, args.size, args.rounds, args.calls, t)
        for t in settings
        for kind in ("chain", "single")
    ]
    if args.json:
        print(json.dumps({"load_average": load, "spin_us": _spin_us(), "rows": rows}, indent=2))
        return
    print(f"load average: {load}; {os.cpu_count()} CPUs; kernel threads poll "
          f"{_spin_us()} us after a kernel")
    print(f"{'model':7} {'threads':>8} {'steady: native ms':>18} {'opsdk ms':>9} {'ratio':>6}"
          f" {'worst':>6} {'after idle: native':>19} {'opsdk':>6} {'ratio':>6}  parts")
    for r in rows:
        s, i = r["steady"], r["after_idle"]
        print(f"{r['model']:7} {r['threads']!s:>8} {s['native_ms']:>18.3f} {s['opsdk_ms']:>9.3f}"
              f" {s['ratio']:>6.2f} {s['worst']:>6.2f} {i['native_ms']:>19.3f}"
              f" {i['opsdk_ms']:>6.3f} {i['ratio']:>6.2f}  {' + '.join(r['parts'])}")
    for t in settings:
        tag = "default" if t is None else t
        worst = max(r["steady"]["ratio"] for r in rows if r["threads"] == tag)
        print(f"threads={tag}: steady-state target opsdk / native <= 1.30 -> "
              f"{'met' if worst <= 1.3 else 'NOT met'} (worst {worst:.2f})")


if __name__ == "__main__":
    main()
