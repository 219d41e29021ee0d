"""What calling an opsdk operator through torch costs: the torch op, ``op(x)``, native torch.

For Gelu, LayerNormalization, Softmax, GridSample and ThresholdedRelu at 4 output elements
and at 1M (float32), one interleaved run of: the operator through ``opsdk.torch`` on CPU
tensors (``torch.ops.com_opsdk.<Op>``), ``op(x)`` on NumPy views of the same tensors, the
nearest native torch function (``F.gelu``, ``F.layer_norm``, ``F.softmax``,
``F.grid_sample``, ``torch.where``), ``torch.ops.aten.clone.default`` of the first input (the
floor of a call through ``torch.ops``: torch's own C++ kernel, one tensor in, one allocated
out) and ``np.add`` of the first input to itself (the floor of a NumPy call). Reports
medians and the ratios to ``op(x)``, and which CPU kernel the torch op took (the C++ one of
``opsdk.torch._cpp``, or the Python one and why); nothing here asserts on time.

    python benchmarks/torch_overhead.py [--repeat N] [--markdown]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

import opsdk
import opsdk.torch as ot
from opsdk.bench import fmt_seconds, format_markdown, format_rows, measure
from opsdk.torch._convert import to_numpy
from opsdk.torch._cpp import unavailable

#: op -> (shapes at 4 elements, shapes at 1M, attrs, native torch equivalent)
CASES: dict[str, tuple[list[tuple[int, ...]], list[tuple[int, ...]], dict[str, Any],
                       Callable[..., Any]]] = {
    "Gelu": ([(4,)], [(1024, 1024)], {}, lambda x: F.gelu(x)),
    "LayerNormalization": ([(1, 4), (4,), (4,)], [(1024, 1024), (1024,), (1024,)], {},
                           lambda x, s, b: F.layer_norm(x, s.shape, s, b, 1e-5)),
    "Softmax": ([(1, 4)], [(1024, 1024)], {"axis": -1}, lambda x: F.softmax(x, dim=-1)),
    "GridSample": ([(1, 1, 2, 2), (1, 2, 2, 2)], [(1, 1, 1024, 1024), (1, 1024, 1024, 2)],
                   {}, lambda x, g: F.grid_sample(x, g, align_corners=False)),
    "ThresholdedRelu": ([(4,)], [(1024, 1024)], {"alpha": 0.5},
                        lambda x: torch.where(x > 0.5, x, 0.0)),
}


def run_case(name: str, shapes: list[tuple[int, ...]], attrs: dict[str, Any],
             native: Callable[..., Any], repeat: int) -> list[str]:
    gen = torch.Generator().manual_seed(0)
    tensors = [torch.rand(s, generator=gen) * 2 - 1 for s in shapes]
    arrays = [to_numpy(t) for t in tensors]
    torch_op, op = ot.load(name), opsdk.load(name)
    clone = torch.ops.aten.clone.default
    t = measure({
        "torch op": lambda: torch_op(*tensors, **attrs),
        "op(x)": lambda: op(*arrays, **attrs),
        "native torch": lambda: native(*tensors),
        "torch.ops floor": lambda: clone(tensors[0]),
        "np.add": lambda: np.add(arrays[0], arrays[0]),
    }, repeat=repeat, settle=0.05)
    base = t["op(x)"].median
    size = "x".join(map(str, shapes[0]))
    return [f"{name} {size}", *(fmt_seconds(v.median) for v in t.values()),
            f"{t['torch op'].median / base:.2f}", f"{t['native torch'].median / base:.2f}",
            f"{t['torch.ops floor'].median / base:.2f}", f"{t['np.add'].median / base:.2f}",
            f"{os.getloadavg()[0]:.1f}"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--repeat", type=int, default=11)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    rows = [run_case(name, shapes, attrs, native, args.repeat)
            for name, (small, large, attrs, native) in CASES.items()
            for shapes in (small, large)]
    header = ["op, float32", "torch op", "op(x)", "native torch", "torch.ops floor", "np.add",
              "torch op / op(x)", "native / op(x)", "floor / op(x)", "np.add / op(x)", "load"]
    print(format_markdown(header, rows) if args.markdown else format_rows(header, rows))
    path = unavailable()
    print(f"\nmedians of {args.repeat} interleaved rounds; torch threads "
          f"{torch.get_num_threads()}; torch op CPU kernel: "
          + ("C++ (opsdk.torch._cpp)" if not path else f"Python ({path})"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
