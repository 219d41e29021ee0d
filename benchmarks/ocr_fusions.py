"""PP-OCR det/rec/cls with their Conv+BN+Relu chains fused, against the originals.

For each OCR model of the corpus (``scripts/setup.d/35-model-corpus.sh`` fetches them), on its
corpus input shape: the original under plain ONNX Runtime, the original under
``opsdk.onnx.Session`` and the model with every Conv+BatchNormalization+Relu chain fused into
FusedConvBnRelu (``rewrite(force=True)``) under ``Session``, timed in interleaved rounds in
one process (medians). The fused model cannot run under plain ONNX Runtime with a custom-op
library of opsdk's kernels: no registry package carries ONNX Runtime's C API headers to build
one from (docs/onnx.md). Where ``onnxruntime_extensions`` is importable (``pip install
onnxruntime-extensions``; no test needs it), one more column runs the fused model in one ONNX
Runtime graph anyway, each fused node a Python custom op of that package (its ``onnx_op``,
domain ``ai.onnx.contrib``, one op type per node since it takes no list attributes) calling
``op(x)``. Nothing here asserts on time.

    python benchmarks/ocr_fusions.py [--repeat N] [--threads N] [--markdown]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

import opsdk
from opsdk.bench import fmt_seconds, format_markdown, format_rows, measure
from opsdk.onnx import Session, rewrite
from opsdk.onnx._model import load_model
from opsdk.testing import corpus


def pyop_session(fused: onnx.ModelProto, threads: int | None) -> ort.InferenceSession | None:
    """The fused model in one ONNX Runtime graph, its opsdk nodes onnxruntime-extensions'
    Python custom ops calling ``op(x)``; None without that package."""
    try:
        from onnxruntime_extensions import PyCustomOpDef, get_library_path, onnx_op
    except ImportError:
        return None
    g = onnx.ModelProto()
    g.CopyFrom(fused)
    for i, n in enumerate(g.graph.node):
        if n.domain != "com.opsdk":
            continue
        op = opsdk.load(n.op_type)
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        n.domain, n.op_type = "ai.onnx.contrib", f"OpsdkNode{i}"
        del n.attribute[:]
        onnx_op(op_type=n.op_type, inputs=[PyCustomOpDef.dt_float] * len(n.input),
                outputs=[PyCustomOpDef.dt_float])(
            lambda *xs, op=op, attrs=attrs: op(*xs, **attrs))
    imports = [o for o in g.opset_import if o.domain != "com.opsdk"]
    del g.opset_import[:]
    g.opset_import.extend([*imports, helper.make_opsetid("ai.onnx.contrib", 1)])
    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    opts.register_custom_ops_library(get_library_path())
    return ort.InferenceSession(g.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def run_model(m: corpus.CorpusModel, repeat: int, threads: int | None) -> list[str] | None:
    path = corpus.find(m.name)
    if path is None:
        print(f"{m.name}: not fetched (scripts/setup.d/35-model-corpus.sh); left out")
        return None
    model = load_model(str(path))
    result = rewrite(model, fuse=["conv-bn-relu"], force=True)
    fused = sum(1 for r in result.records if r.action == "fused")
    rng = np.random.default_rng(0)
    feeds = {k: rng.random(shape, dtype=np.float32) for k, shape in m.feeds.items()}
    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    plain = ort.InferenceSession(model.SerializeToString(), opts,
                                 providers=["CPUExecutionProvider"])
    orig, new = Session(model, threads=threads), Session(result.model, threads=threads)
    want = plain.run(None, feeds)[0]
    diff = float(np.max(np.abs(new.run(None, feeds)[0] - want)))
    candidates = {
        "ONNX Runtime": lambda: plain.run(None, feeds),
        "Session": lambda: orig.run(None, feeds),
        "fused, Session": lambda: new.run(None, feeds),
    }
    pyop = pyop_session(result.model, threads) if fused else None
    if pyop is not None:
        diff = max(diff, float(np.max(np.abs(pyop.run(None, feeds)[0] - want))))
        candidates["fused, one ORT graph (PyOp)"] = lambda: pyop.run(None, feeds)
    t = measure(candidates, repeat=repeat, settle=0.1)
    base = t["ONNX Runtime"].median
    shape = "x".join(map(str, next(iter(m.feeds.values()))))
    one_graph = t.get("fused, one ORT graph (PyOp)")
    return [f"{m.name} {shape}", str(fused),
            *(fmt_seconds(t[k].median) for k in ("ONNX Runtime", "Session", "fused, Session")),
            fmt_seconds(one_graph.median) if one_graph else "n/a",
            f"{t['Session'].median / base:.2f}", f"{t['fused, Session'].median / base:.2f}",
            f"{t['fused, Session'].median / t['Session'].median:.2f}", f"{diff:.1e}",
            f"{os.getloadavg()[0]:.1f}"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=11)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    rows = [r for m in corpus.MODELS if m.name.startswith("ppocr")
            if (r := run_model(m, args.repeat, args.threads)) is not None]
    header = ["model", "chains fused", "ONNX Runtime", "Session", "fused, Session",
              "fused, one ORT graph (PyOp)", "Session / ORT", "fused / ORT", "fused / Session",
              "max |diff|", "load"]
    print(format_markdown(header, rows) if args.markdown else format_rows(header, rows))
    print(f"\nmedians of {args.repeat} interleaved rounds; threads "
          f"{args.threads or 'default'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
