"""``opsdk bench``: operator speed against NumPy and ONNX Runtime, and the SDK's own speed.

    opsdk bench Gelu                                 default shapes: cache-resident, memory-bound
    opsdk bench Softmax --shape 8192x1024 --attr axis=-1 --json
    opsdk bench LayerNormalization --shape X=4096x768 --dtype float16 --threads 1
    opsdk bench --sdk                                new -> green, rebuilds, call overhead
    opsdk bench --triton repo/ --model mlp           a model served by tritonserver
    opsdk bench Gelu --device ascendc-model --soc Ascend910B3 --swimlane gelu.png
                                                     the AI Core kernel's cycle estimate
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import OpsdkError, SpecError
from ._grammar import add_shape_option, add_soc_option, equals_form
from ._numbers import count, natural, pause

EPILOG = """\
examples:
  opsdk bench Gelu
  opsdk bench Gelu --shape 4096x4096 --attr approximate=tanh --repeat 20
  opsdk bench LayerNormalization --shape X=8192x1024 --dtype float16 --json
  opsdk bench --sdk                 (or --sdk overhead,noop for some parts)
  opsdk bench --triton repo/ --model mlp
  opsdk bench Softmax --device ascendc-model --soc Ascend310P3 --trace softmax.json

Without --shape an operator is measured twice: at a cache-resident size (<= 16 MiB moved)
and at a memory-bound one (>= 64 MiB); --json then prints a list of two results.
opsdk is timed on both call paths: `opsdk` is op(x) as users write it (outputs from the
output pool), `opsdk outputs=` writes into preallocated outputs.
Times are medians of interleaved rounds (opsdk, NumPy reference, ONNX Runtime take turns).
GB/s counts every input and output once; '% of copy' compares with a STREAM-style copy
measured in the same run with the same threads. Compare ratios, not absolute times.

--device ascendc-model runs the operator's AI Core kernel on opsdk's model of the AI Core's
pipes and reports an ESTIMATE of its time on --soc (never an NPU time): kernel time,
per-pipe busy time and utilisation, the critical path and the bound. The costs and their
sources are in opsdk/ascend/data/aicore_costs.json; --costs FILE replaces any of them.
--trace writes a Chrome/Perfetto trace (ui.perfetto.dev), --swimlane a PNG of the pipes.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench", help="benchmark an operator (vs NumPy and ONNX Runtime) or the SDK",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("op", nargs="?", help="operator (MyOp, my_op, domain::MyOp or a folder)")
    add_shape_option(p, "shorthand: dims by input position, 4096x1024 (--shape 64x4096 4096)",
                     nargs="+", action="extend")
    p.add_argument("--dtype", default="float32", help="dtype of the operator's type "
                   "variable, e.g. float32, float16, bfloat16 (default float32)")
    p.add_argument("--attr", nargs="+", default=[], metavar="NAME=VALUE",
                   help="attributes, e.g. approximate=tanh axis=1 pads=1,1,1,1")
    p.add_argument("--threads", type=count, default=None,
                   help="threads for opsdk, ONNX Runtime and the bandwidth probe (default: "
                   "all cores or $OPSDK_NUM_THREADS)")
    p.add_argument("--repeat", type=count, default=10, help="interleaved rounds (default 10)")
    p.add_argument("--warmup", type=natural, default=2, help="untimed calls first (default 2)")
    p.add_argument("--settle", type=pause, default=0.1, metavar="SECONDS",
                   help="pause, then one untimed sample, before each timed sample, so no "
                   "candidate is timed while another's idle threads still poll (ONNX "
                   "Runtime's do for about 40 ms after a run); 0 = back to back (default 0.1)")
    p.add_argument("--no-numpy", action="store_true", help="skip the NumPy reference")
    p.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    p.add_argument("--no-bandwidth", action="store_true", help="skip the bandwidth probe")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--sdk", nargs="?", const="all", default=None, metavar="PARTS",
                   help="benchmark the SDK itself: cold,noop,edit,overhead (default all)")
    p.add_argument("--triton", metavar="REPO", default=None,
                   help="benchmark a model served by tritonserver from this repository")
    p.add_argument("--model", default=None, help="model name in the repository (--triton)")
    p.add_argument("--device", choices=("cpu", "ascendc-model"), default="cpu",
                   help="cpu: time the CPU kernel (default); ascendc-model: estimate the AI "
                   "Core kernel on opsdk's model of the pipes (an estimate, not an NPU time)")
    add_soc_option(p, " (the SoC of the estimate, --device ascendc-model)")
    p.add_argument("--costs", metavar="FILE", default=None,
                   help="JSON of estimate costs replacing the table's (--device ascendc-model)")
    p.add_argument("--trace", metavar="FILE", default=None,
                   help="write the estimate's pipes as Chrome/Perfetto trace JSON")
    p.add_argument("--swimlane", metavar="PNG", default=None,
                   help="draw the estimate's pipes of the busiest core into a PNG")
    p.set_defaults(func=run)


def _attr_value(spec: Any, name: str, text: str) -> Any:
    a = spec.attr_map.get(name)
    if a is None:
        raise SpecError(f"{spec.name}: unknown attribute {name!r} in --attr; the spec declares "
                        f"{', '.join(spec.attr_map) or 'none'}")
    try:
        if a.type == "int":
            return int(text)
        if a.type == "float":
            return float(text)
        if a.type == "bool":
            return text.lower() in ("1", "true", "yes")
        if a.type == "ints":
            return [int(v) for v in text.split(",") if v]
        if a.type == "floats":
            return [float(v) for v in text.split(",") if v]
    except ValueError:
        raise SpecError(f"{spec.name}: --attr {name}={text}: expected {a.type}") from None
    return text


def _parse_attrs(op: str, items: list[str]) -> dict[str, Any]:
    if not items:
        return {}
    from ..registry import find_operator

    spec = find_operator(op).spec
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise SpecError(f"--attr {item!r}: expected NAME=VALUE, e.g. axis=1")
        out[name] = _attr_value(spec, name, value)
    return out


def _run_triton(args: argparse.Namespace) -> int:
    if not args.model:
        raise OpsdkError("--triton REPO needs --model NAME (the model to benchmark)")
    try:
        from ..triton import bench as triton_bench
    except ImportError as e:
        raise OpsdkError(
            f"--triton needs opsdk's Triton support (opsdk.triton.bench), which failed to "
            f"import: {e}; install the client with pip install 'tritonclient[http,grpc]' "
            "(the server runs from the serving venv: bash .ci/serve_env.sh)"
        ) from e
    result = triton_bench.bench_triton(
        args.triton, args.model,
        progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True),
    )
    print(json.dumps(result, indent=2) if args.json else triton_bench.format_table(result))
    return 0


def _run_sdk(args: argparse.Namespace) -> int:
    from ..bench import SDK_PARTS, bench_sdk, fmt_seconds, format_rows

    parts = SDK_PARTS if args.sdk == "all" else tuple(p.strip() for p in args.sdk.split(","))
    result = bench_sdk(parts, repeat=args.repeat)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
        return 0
    rows = [[name, fmt_seconds(v), str(len(result.samples[name])), result.notes.get(name, "")]
            for name, v in result.figures.items()]
    print(format_rows(["figure", "median", "n", "note"], rows, left=(0, 3)))
    return 0


def _run_model(args: argparse.Namespace) -> int:
    from .._written import write_file
    from ..bench._model import estimate_op

    outputs = [Path(f) for f in (args.trace, args.swimlane) if f]
    for out in outputs:
        if out.exists() or out.is_symlink():
            raise OpsdkError(f"bench: {out} exists; remove it or name another file")
    results = []
    for small in ((False,) if args.shape else (True, False)):
        results.append(estimate_op(
            args.op, shapes=equals_form(args.shape), dtype=args.dtype,
            attrs=_parse_attrs(args.op, args.attr), soc=args.soc, costs=args.costs, small=small,
            progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True)))
    last = results[-1]
    if args.trace:
        write_file(outputs[0].parent, outputs[0].name, json.dumps(last.chrome_trace()))
    if args.swimlane:
        last.swimlane(args.swimlane)
    if args.json:
        data = [r.as_dict() for r in results]
        print(json.dumps(data[0] if args.shape else data, indent=2))
    else:
        print("\n\n".join(r.format() for r in results))
        for out in outputs:
            print(f"wrote {out}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.device == "ascendc-model":
        if args.triton or args.sdk or not args.op:
            raise OpsdkError("bench --device ascendc-model: name an operator (opsdk bench Gelu "
                             "--device ascendc-model); --triton and --sdk time other things")
        return _run_model(args)
    if args.trace or args.swimlane or args.costs:
        raise OpsdkError("bench: --trace, --swimlane and --costs belong to the estimate "
                         "(--device ascendc-model)")
    if args.triton:
        return _run_triton(args)
    if args.sdk:
        return _run_sdk(args)
    if not args.op:
        raise OpsdkError("bench: name an operator (opsdk bench Gelu), or pass --sdk or --triton")
    from ..bench import bench_op, bench_regimes, format_result

    kwargs: dict[str, Any] = dict(
        dtype=args.dtype, attrs=_parse_attrs(args.op, args.attr), threads=args.threads,
        repeat=args.repeat, warmup=args.warmup, numpy=not args.no_numpy,
        onnxruntime=not args.no_ort, bandwidth=not args.no_bandwidth, settle=args.settle,
    )
    if args.shape:
        result = bench_op(args.op, shapes=equals_form(args.shape), **kwargs)
        print(json.dumps(result.as_dict(), indent=2) if args.json else format_result(result))
        return 0
    results = bench_regimes(args.op, **kwargs)
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2))
    else:
        print("\n\n".join(format_result(r) for r in results))
    return 0
