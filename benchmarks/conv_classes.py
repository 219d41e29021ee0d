"""FusedConvBnRelu against ONNX Runtime's Conv+BatchNormalization+Relu per shape class.

The figures behind ``opsdk.onnx.CPU_SLOWER_CLASSES`` (which chains ``opsdk rewrite --fuse
conv-bn-relu`` refuses on the CPU): depthwise 3x3 and 5x5, grouped with 2 to 16 input
channels per group, dense convs with few and many input channels. Each row times ``op(x)``
and one ONNX Runtime session (BN folded into its Conv, as in a real model) alternately,
after a short pause each, and prints the medians and their ratio. Nothing asserts on time.

    python benchmarks/conv_classes.py [--threads 2] [--repeat 7]
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import opsdk

# name, N, C, H=W, M, k, stride, group
ROWS = [
    ("depthwise 16ch 56x56 3x3", 1, 16, 56, 16, 3, 1, 16),
    ("depthwise 72ch 28x28 3x3", 1, 72, 28, 72, 3, 1, 72),
    ("depthwise 16ch 112x112 3x3 s2", 1, 16, 112, 16, 3, 2, 16),
    ("depthwise 96ch 14x14 5x5", 1, 96, 14, 96, 5, 1, 96),
    ("depthwise 576ch 7x7 5x5", 1, 576, 7, 576, 5, 1, 576),
    ("depthwise 72ch 56x56 5x5 s2", 1, 72, 56, 72, 5, 2, 72),
    ("grouped 32->32 /16 (2 per group)", 1, 32, 28, 32, 3, 1, 16),
    ("grouped 64->64 /16 (4 per group)", 1, 64, 28, 64, 3, 1, 16),
    ("grouped 64->64 /4 (16 per group)", 1, 64, 28, 64, 3, 1, 4),
    ("dense 3->16 224x224 3x3 s2", 1, 3, 224, 16, 3, 2, 1),
    ("dense 3->64 224x224 7x7 s2", 1, 3, 224, 64, 7, 2, 1),
    ("dense 16->32 56x56 3x3", 1, 16, 56, 32, 3, 1, 1),
    ("dense 16->72 56x56 1x1", 1, 16, 56, 72, 1, 1, 1),
    ("dense 64->64 56x56 3x3", 1, 64, 56, 64, 3, 1, 1),
]


def _ort_session(w: np.ndarray, n: int, c: int, hw: int, attrs: dict[str, Any],
                 threads: int) -> Any:
    m = w.shape[0]
    inits = [numpy_helper.from_array(w, "w")] + [
        numpy_helper.from_array(v.astype(np.float32), name)
        for name, v in (("s", np.ones(m)), ("b", np.zeros(m)), ("mu", np.zeros(m)),
                        ("var", np.ones(m)))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], **attrs),
             helper.make_node("BatchNormalization", ["c", "s", "b", "mu", "var"], ["n"]),
             helper.make_node("Relu", ["n"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def _median(f: Any, other: Any, repeat: int) -> tuple[float, float]:
    a, b = [], []
    for _ in range(repeat):
        for fn, out in ((f, a), (other, b)):
            time.sleep(0.05)  # let the other runtime's threads stop polling
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return float(np.median(a)), float(np.median(b))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    op = opsdk.load("FusedConvBnRelu")
    rng = np.random.default_rng(0)
    print("| case | opsdk | onnxruntime | time vs ORT |\n|---|---|---|---|")
    for name, n, c, hw, m, k, stride, group in ROWS:
        w = rng.standard_normal((m, c // group, k, k)).astype(np.float32)
        x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
        b = np.zeros(m, np.float32)
        attrs = {"pads": [k // 2] * 4, "strides": [stride, stride], "group": group}
        sess = _ort_session(w, n, c, hw, attrs, args.threads)
        mine, theirs = _median(partial(op, x, w, b, **attrs),
                               partial(sess.run, None, {"x": x}), args.repeat)
        print(f"| {name} | {mine * 1e3:.3f} ms | {theirs * 1e3:.3f} ms | {mine / theirs:.2f}x |")


if __name__ == "__main__":
    main()
