"""PP-OCR det/rec/cls with their Conv+BN+Relu chains fused, against the originals.

For each OCR model of the corpus (``scripts/setup.d/35-model-corpus.sh`` fetches them), on its
corpus input shape: the original under plain ONNX Runtime, the original under
``opsdk.onnx.Session`` and the model with every Conv+BatchNormalization+Relu chain fused into
FusedConvBnRelu (``rewrite(force=True)``) under ``Session``, timed in interleaved rounds in
one process (medians). The fused model cannot run under plain ONNX Runtime with opsdk's kernels:
no registry package carries ONNX Runtime's C API headers to build a custom-op library from
(docs/onnx.md). Nothing here asserts on time.

    python benchmarks/ocr_fusions.py [--repeat N] [--threads N] [--markdown]
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import onnxruntime as ort

from opsdk.bench import fmt_seconds, format_markdown, format_rows, measure
from opsdk.onnx import Session, rewrite
from opsdk.onnx._model import load_model
from opsdk.testing import corpus


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
    t = measure({
        "ONNX Runtime": lambda: plain.run(None, feeds),
        "Session": lambda: orig.run(None, feeds),
        "fused, Session": lambda: new.run(None, feeds),
    }, repeat=repeat, settle=0.1)
    base = t["ONNX Runtime"].median
    shape = "x".join(map(str, next(iter(m.feeds.values()))))
    return [f"{m.name} {shape}", str(fused), *(fmt_seconds(v.median) for v in t.values()),
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
              "Session / ORT", "fused / ORT", "fused / Session", "max |diff|", "load"]
    print(format_markdown(header, rows) if args.markdown else format_rows(header, rows))
    print(f"\nmedians of {args.repeat} interleaved rounds; threads "
          f"{args.threads or 'default'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
