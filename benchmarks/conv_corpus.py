"""FusedConvBnRelu on every Conv shape of the corpus models, against ONNX Runtime.

The benchmark set is not hand-picked: it is every Conv of PP-OCR det/rec/cls (the
rapidocr-onnxruntime wheel's paddle2onnx exports), torchvision's ResNet-18 and
MobileNetV3-small (exported here by torch.onnx, random weights) and YOLOv8n (the nudenet
wheel's), each on the input size below, deduplicated by geometry (N, C, H, W, M, kernel,
stride, pads, dilation, group). Each Conv's input shape is read from one ONNX Runtime run of
its model with the Conv inputs added as graph outputs. Every shape is timed
at 2 threads and at 1 thread by ``opsdk.bench.measure``: ``op(x)`` and ONNX Runtime's
Conv+BatchNormalization+Relu (``opsdk.bench.ort_equivalent``: weights as initializers, so ORT
folds BN and prepacks) interleaved in one process, medians. Nothing here asserts on time.

    python -m opsdk.testing.corpus --fetch && python -m opsdk.testing.corpus --fetch yolov8n
    python benchmarks/conv_corpus.py [--repeat 7] [--threads 2,1] [--json] [--markdown]
                                     [--only NAME-SUBSTRING] [--limit N]
    python benchmarks/conv_corpus.py --compare before.json after.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

import opsdk
from opsdk.bench import OrtRunner, format_markdown, format_rows, measure, ort_equivalent
from opsdk.testing import corpus

ORT_TARGET = 1.5
#: model -> its input size here: the classifiers' 224x224 (MobileNetV3 at batch 2, the
#: issue's 88-channel 28x28 block), YOLOv8n's fixed 320x320, PP-OCR rec's 48x320 and cls's
#: 48x192 (rapidocr's), det at 320x320 (rapidocr resizes to at most 736; halved to bound the
#: run).
INPUTS: dict[str, tuple[int, ...]] = {
    "ppocr-det": (1, 3, 320, 320),
    "ppocr-rec": (1, 3, 48, 320),
    "ppocr-cls": (1, 3, 48, 192),
    "yolov8n": (1, 3, 320, 320),
    "resnet18": (1, 3, 224, 224),
    "mobilenet_v3_small": (2, 3, 224, 224),
}


@dataclass(frozen=True)
class ConvShape:
    """One Conv geometry: input (N, C, H, W), M output channels, kernel, stride, pads..."""

    n: int
    c: int
    h: int
    w: int
    m: int
    kh: int
    kw: int
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    group: int

    @property
    def label(self) -> str:
        kind = ("dw" if self.group == self.c and self.group > 1 else
                f"g{self.group}" if self.group > 1 else "")
        s = f" s{self.strides[0]}" if self.strides != (1, 1) else ""
        if self.strides[0] != self.strides[1]:
            s = f" s{self.strides[0]}x{self.strides[1]}"
        d = f" d{self.dilations[0]}" if self.dilations != (1, 1) else ""
        return (f"N{self.n} {self.c}->{self.m} {self.h}x{self.w} {self.kh}x{self.kw}{s}{d}"
                + (f" {kind}" if kind else ""))

    def attrs(self) -> dict[str, Any]:
        return {"strides": list(self.strides), "pads": list(self.pads),
                "dilations": list(self.dilations), "group": self.group}


@dataclass
class Row:
    shape: ConvShape
    models: dict[str, int] = field(default_factory=dict)  # model -> Convs of this shape
    ms: dict[int, tuple[float, float]] = field(default_factory=dict)  # threads -> opsdk, ORT
    best: dict[int, tuple[float, float]] = field(default_factory=dict)  # fastest samples


# ------------------------------------------------------------------ the models
def _torchvision_model(name: str) -> onnx.ModelProto | None:
    """torchvision's ``name`` (random weights) exported by torch.onnx, or None."""
    try:
        import torch
        # torchvision's native ops library does not load beside the CPU build of torch; the
        # models never call it, but its import registers fakes for it: skip that module
        sys.modules.setdefault("torchvision._meta_registrations",
                               types.ModuleType("torchvision._meta_registrations"))
        import torchvision
    except ImportError as e:
        print(f"  {name}: skipped ({e})", file=sys.stderr)
        return None
    torch.manual_seed(0)
    module = getattr(torchvision.models, name)(weights=None).eval()
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.zeros(INPUTS[name]),), f, dynamo=False,
                          input_names=["x"], opset_version=17)
    return onnx.load_from_string(f.getvalue())


def models() -> dict[str, onnx.ModelProto]:
    """Every corpus model that is at hand, by name."""
    out: dict[str, onnx.ModelProto] = {}
    for name in INPUTS:
        if name in ("resnet18", "mobilenet_v3_small"):
            proto = _torchvision_model(name)
        else:
            path = corpus.find(name)
            if path is None:
                print(f"  {name}: not in the cache (python -m opsdk.testing.corpus --fetch "
                      f"{name})", file=sys.stderr)
                continue
            proto = onnx.load(str(path))
        if proto is not None:
            out[name] = proto
    return out


def _attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _pads(node: onnx.NodeProto, hw: tuple[int, int], k: tuple[int, int],
          s: tuple[int, int], d: tuple[int, int]) -> tuple[int, int, int, int]:
    auto = _attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("NOTSET", "VALID"):
        p = list(_attr(node, "pads", [0, 0, 0, 0])) if auto == "NOTSET" else [0, 0, 0, 0]
        return (p[0], p[1], p[2], p[3])
    total = [max(0, (-(-hw[i] // s[i]) - 1) * s[i] + d[i] * (k[i] - 1) + 1 - hw[i])
             for i in range(2)]
    lo = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
    return (lo[0], lo[1], total[0] - lo[0], total[1] - lo[1])


def conv_shapes(model: onnx.ModelProto, feed: tuple[int, ...]) -> list[ConvShape]:
    """Every Conv of ``model`` with the shapes one run on a ``feed``-shaped input gives."""
    g = onnx.ModelProto()
    g.CopyFrom(model)
    convs = [n for n in g.graph.node if n.op_type == "Conv" and n.domain in ("", "ai.onnx")]
    inits = {i.name: tuple(i.dims) for i in g.graph.initializer}
    consts = {n.output[0]: tuple(numpy_helper.to_array(n.attribute[0].t).shape)
              for n in g.graph.node if n.op_type == "Constant" and n.attribute
              and n.attribute[0].name == "value"}
    present = {o.name for o in g.graph.output}
    wanted = [v for n in convs for v in n.input[:2] if v not in inits and v not in consts]
    for v in dict.fromkeys(wanted):
        if v not in present and v != g.graph.input[0].name:
            g.graph.output.append(helper.make_empty_tensor_value_info(v))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(g.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    first = sess.get_inputs()[0].name
    x = np.random.default_rng(0).standard_normal(feed).astype(np.float32)
    names = [o.name for o in sess.get_outputs()]
    got = {n: a.shape for n, a in zip(names, sess.run(names, {first: x}))}
    got[first] = feed
    shapes = {**inits, **consts, **got}
    out = []
    for node in convs:
        xs, ws = shapes[node.input[0]], shapes[node.input[1]]
        if len(xs) != 4:
            continue  # a 1-D or 3-D Conv: FusedConvBnRelu is 2-D only
        k = (int(ws[2]), int(ws[3]))
        s = tuple(_attr(node, "strides", [1, 1]))
        d = tuple(_attr(node, "dilations", [1, 1]))
        out.append(ConvShape(int(xs[0]), int(xs[1]), int(xs[2]), int(xs[3]), int(ws[0]),
                             k[0], k[1], (s[0], s[1]), _pads(node, (xs[2], xs[3]), k, s, d),
                             (d[0], d[1]), int(_attr(node, "group", 1))))
    return out


def corpus_rows(protos: dict[str, onnx.ModelProto]) -> list[Row]:
    """The deduplicated shapes of every model, in order of first appearance."""
    rows: dict[ConvShape, Row] = {}
    for name, proto in protos.items():
        for shape in conv_shapes(proto, INPUTS[name]):
            row = rows.setdefault(shape, Row(shape))
            row.models[name] = row.models.get(name, 0) + 1
    return list(rows.values())


# -------------------------------------------------------------------- timing
def measure_row(op: Any, row: Row, threads: list[int], repeat: int) -> None:
    """Time ``op(x)`` and ONNX Runtime's Conv+BN+Relu on ``row``'s shape at each thread
    count (the shared harness: interleaved rounds, medians; a pause and an untimed sample
    before each sample at 2 or more threads, while ONNX Runtime's idle workers poll)."""
    s = row.shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((s.n, s.c, s.h, s.w)).astype(np.float32)
    w = (rng.standard_normal((s.m, s.c // s.group, s.kh, s.kw)) * 0.1).astype(np.float32)
    b = rng.standard_normal(s.m).astype(np.float32)
    attrs = s.attrs()
    out = op(x, w, b, **attrs)
    graph = ort_equivalent(op.spec, [x, w, b], attrs, [out])
    assert graph is not None
    previous = op.module.get_num_threads()
    try:
        for t in threads:
            op.set_num_threads(t)
            runner = OrtRunner(graph, [x, w, b], [np.empty_like(out)], t)
            # One thread: short samples (0.5 ms), of which a loaded machine cuts fewer.
            # Two or more: 0.1 s of sleep first, since ONNX Runtime's workers poll for about
            # 45 ms after a run (81% of a core over a 50 ms sleep, measured) and took a core
            # from the opsdk sample after it at 0.05 s; then 5 ms samples, since after the
            # sleep the first 0.5 ms of both runtimes measured waking up (384->256 10x10
            # 1x1: 1.83x-2.49x in 0.5 ms samples, 1.15x in 5 ms ones).
            many = t > 1
            got = measure({"opsdk": lambda: op(x, w, b, **attrs), "onnxruntime": runner},
                          repeat=repeat, warmup=1, min_sample=0.005 if many else 0.0005,
                          settle=0.1 if many else 0.0)
            row.ms[t] = (got["opsdk"].median * 1e3, got["onnxruntime"].median * 1e3)
            row.best[t] = (got["opsdk"].best * 1e3, got["onnxruntime"].best * 1e3)
    finally:
        op.set_num_threads(previous)


def _cells(row: Row, threads: list[int]) -> list[str]:
    cells = [row.shape.label, ", ".join(f"{m}" + (f" x{k}" if k > 1 else "")
                                        for m, k in row.models.items())]
    for t in threads:
        mine, theirs = row.ms[t]
        cells += [f"{theirs:.3f}", f"{mine:.3f}", f"{mine / theirs:.2f}x"]
    return cells


def summary(rows: list[Row], threads: list[int]) -> list[str]:
    """One line per thread count: the median ratio and the shapes above the target."""
    out = []
    for t in threads:
        ratios = [r.ms[t][0] / r.ms[t][1] for r in rows]
        over = [f"{r.shape.label} {q:.2f}x" for r, q in zip(rows, ratios) if q > ORT_TARGET]
        out.append(f"{t} thread(s): median ratio {np.median(ratios):.2f}x, "
                   f"max {max(ratios):.2f}x; {len(over)} of {len(rows)} above {ORT_TARGET}x"
                   + (": " + "; ".join(over) if over else ""))
    return out


def compare(before: str, after: str, threads: list[int]) -> str:
    """The Markdown table of two ``--json`` runs: per shape and thread count, ONNX
    Runtime's time and the ratio in each run, opsdk's time in the second."""
    runs = [{r["label"]: r for r in json.loads(Path(f).read_text())} for f in (before, after)]
    header = ["shape", "models"]
    for t in threads:
        header += [f"ORT ms {t}t", f"opsdk ms {t}t", f"ratio {t}t before", f"ratio {t}t after"]
    cells = []
    for label, r in runs[1].items():
        row = [label, ", ".join(m + (f" x{k}" if k > 1 else "") for m, k in r["models"].items())]
        for t in threads:
            now, old = r["ms"][str(t)], runs[0].get(label, {}).get("ms", {}).get(str(t))
            was = f"{old['opsdk'] / old['onnxruntime']:.2f}x" if old else "-"
            row += [f"{now['onnxruntime']:.3f}", f"{now['opsdk']:.3f}", was,
                    f"{now['opsdk'] / now['onnxruntime']:.2f}x"]
        cells.append(row)
    return format_markdown(header, cells)


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--repeat", type=int, default=7, help="interleaved rounds per shape")
    p.add_argument("--threads", default="2,1", help="thread counts, comma-separated")
    p.add_argument("--only", default="", help="only shapes whose label contains this")
    p.add_argument("--limit", type=int, default=0, help="at most this many shapes")
    p.add_argument("--operator", default="FusedConvBnRelu",
                   help="the operator's name or folder (a copy of an earlier kernel, to "
                   "measure the before table with the same harness)")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                   help="print the Markdown table of two --json runs; measure nothing")
    args = p.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    if args.compare:
        print(compare(*args.compare, threads))
        return 0
    rows = [r for r in corpus_rows(models()) if args.only in r.shape.label]
    rows = rows[:args.limit] if args.limit else rows
    load = [os.getloadavg()[0]]
    op = opsdk.load(args.operator)
    for i, row in enumerate(rows):
        print(f"  [{i + 1}/{len(rows)}] {row.shape.label} ...", file=sys.stderr, flush=True)
        measure_row(op, row, threads, args.repeat)
    load.append(os.getloadavg()[0])
    if args.json:
        print(json.dumps([{"shape": r.shape.__dict__, "label": r.shape.label,
                           "models": r.models,
                           "ms": {t: {"opsdk": a, "onnxruntime": b} for t, (a, b) in r.ms.items()},
                           "best_ms": {t: {"opsdk": a, "onnxruntime": b}
                                       for t, (a, b) in r.best.items()}}
                          for r in rows], indent=1))
        return 0
    header = ["shape", "models"]
    for t in threads:
        header += [f"ORT ms ({t}t)", f"opsdk ms ({t}t)", f"ratio ({t}t)"]
    cells = [_cells(r, threads) for r in rows]
    print(format_markdown(header, cells) if args.markdown else format_rows(header, cells))
    print(f"\nmedians of {args.repeat} interleaved rounds; ratio = opsdk op(x) time / ONNX "
          f"Runtime's; load average (1 min) before {load[0]:.1f}, after {load[1]:.1f}")
    for line in summary(rows, threads):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
