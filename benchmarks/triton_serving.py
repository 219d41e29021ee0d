"""Serving benchmark: an ONNX graph with an opsdk custom node, under a real tritonserver.

Builds a CPU model repository (Python backend running opsdk.onnx.Session) for a small MLP
whose activation is the opsdk ThresholdedRelu custom node, then measures p50/p99 latency
and throughput at concurrency 1 and 8 with dynamic batching on and off, and the overhead
against calling the graph executor in-process. Needs the serving venv
(``bash .ci/serve_env.sh``) and tritonclient in this environment.

    python benchmarks/triton_serving.py [--requests 1000] [--protocol http|grpc]
        [--batch 1] [--hidden 256] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from opsdk.triton import RepositoryOptions, build_repository
from opsdk.triton.bench import bench_triton, format_table


def mlp_with_custom_node(features: int, hidden: int) -> onnx.ModelProto:
    """y = ThresholdedRelu(x @ W1 + b1) @ W2, the activation being opsdk's custom node."""
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((features, hidden)) / np.sqrt(features)).astype(np.float32)
    b1 = (rng.standard_normal(hidden) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((hidden, features)) / np.sqrt(hidden)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("ThresholdedRelu", ["hb"], ["a"], domain="com.opsdk", alpha=0.1),
        helper.make_node("MatMul", ["a", "W2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "mlp_custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", features])],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "W1"), (b1, "b1"), (w2, "W2"))],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.opsdk", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 9
    return model


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=1000, help="timed requests per run")
    p.add_argument("--protocol", choices=("http", "grpc"), default="http")
    p.add_argument("--batch", type=int, default=1, help="rows per request")
    p.add_argument("--features", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="opsdk-bench-") as tmp:
        src = Path(tmp) / "mlp_custom.onnx"
        onnx.save(mlp_with_custom_node(args.features, args.hidden), str(src))
        build_repository(src, Path(tmp) / "repo", RepositoryOptions("mlp_custom",
                                                                    max_batch_size=32))
        result = bench_triton(Path(tmp) / "repo", "mlp_custom", requests=args.requests,
                              batch=args.batch, protocol=args.protocol,
                              progress=lambda m: print(f"  {m}", file=sys.stderr))
    print(format_table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
