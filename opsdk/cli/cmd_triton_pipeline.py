"""``opsdk triton pipeline PIPELINE -o REPO --target cpu|ascend`` (an ensemble repository),
the ensemble branch of ``opsdk triton check``, and ``opsdk triton bench`` (a load report)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from ..errors import OpsdkError, SpecError
from ._grammar import add_shape_option, named_shapes
from ._numbers import count, count32, int_list, natural


def register(tsub: Any) -> None:
    """Add ``pipeline`` and ``bench`` to the ``opsdk triton`` subcommands."""
    p = tsub.add_parser(
        "pipeline",
        help="write a Triton ensemble repository from a pipeline description (TOML)",
        description="Write REPO/<pipeline>/ (an ensemble) and one model folder per step: "
        "ONNX models and opsdk operators as `triton build` writes them for the target, "
        "Python functions as Python-backend models. The wiring is checked as written.",
    )
    p.add_argument("pipeline", help="the pipeline file (.toml)")
    p.add_argument("-o", "--output", required=True, help="model repository folder")
    p.add_argument("--target", choices=("cpu", "ascend"), default="cpu")
    p.add_argument("--operators", action="append", default=None, metavar="DIR",
                   help="folder holding operator folders (repeatable; default: where opsdk "
                   "finds the models' custom ops)")
    p.add_argument("--force", action="store_true",
                   help="replace the pipeline's existing folders (only those opsdk wrote)")
    p.set_defaults(func=run_pipeline_build)
    b = tsub.add_parser(
        "bench",
        help="load report of a served model or ensemble: latency, throughput, server stats",
        description="Serve REPO on 127.0.0.1 twice over (dynamic batching on and off), drive "
        "MODEL at each concurrency and report client latency p50/p90/p99 and throughput "
        "beside the server's own statistics (/v2/models/<m>/stats: queue and compute time, "
        "batch sizes executed). Figures depend on the host: compare ratios of one run.",
    )
    b.add_argument("repository", help="model repository (from triton build or pipeline)")
    b.add_argument("--model", required=True, help="the model or ensemble to drive")
    b.add_argument("--concurrency", type=int_list(count, "1,2,4"), default=(1, 2, 4, 8, 16),
                   help="comma-separated client counts (default 1,2,4,8,16)")
    b.add_argument("--requests", type=count, default=200, help="timed requests per run")
    b.add_argument("--batch", type=count32, default=1, help="rows per request (batched models)")
    add_shape_option(b, "integer sizes of one request (for -1 dims)", type=_shape,
                     action="extend")
    b.add_argument("--input", action="append", type=_input_file, default=[],
                   metavar="INPUT=FILE",
                   help="send this as the input, the others random (repeatable): a .npy "
                   "file's array, or any other file's bytes as one TYPE_STRING element (e.g. "
                   "a PNG for an input that takes encoded images)")
    b.add_argument("--batching", choices=("both", "on", "off"), default="both",
                   help="dynamic batching variants to run (default both)")
    b.add_argument("--plot", default=None, metavar="PNG",
                   help="write a plot of latency and throughput against concurrency "
                   "(needs matplotlib: pip install 'opsdk[report]')")
    b.add_argument("--json", action="store_true", help="print the report as JSON")
    b.add_argument("--force", action="store_true", help="replace an existing --plot file")
    b.set_defaults(func=run_load_report)


def _shape(text: str) -> list[tuple[str, tuple[int, ...]]]:
    try:
        pairs = named_shapes([text])
    except SpecError:
        raise argparse.ArgumentTypeError(
            f"expected INPUT=D0,D1,... with integer sizes, got {text!r}") from None
    return [(name, int_list(natural, "1,3,224,224")(dims)) for name, dims in pairs]


def _input_file(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path:
        raise argparse.ArgumentTypeError(f"expected INPUT=FILE.npy, got {text!r}")
    return name.strip(), path


def _read_input(name: str, path: str) -> Any:
    """A .npy file's array, or any other file's bytes as a one-element object array."""
    import numpy as np

    try:
        if path.endswith(".npy"):
            return np.load(path)
        with open(path, "rb") as f:
            return np.array([f.read()], dtype=object)
    except (OSError, ValueError) as e:
        why = "not an .npy array (or one of objects, which opsdk does not unpickle)" \
            if "pickle" in str(e) else (e.strerror if isinstance(e, OSError) else str(e))
        raise OpsdkError(f"--input {name}={path}: {why}; pass INPUT=FILE.npy (numpy.save's "
                         "format) or INPUT=FILE (its bytes, e.g. a PNG)") from e


def run_pipeline_build(args: argparse.Namespace) -> int:
    import os

    from ..triton import build_pipeline, load_pipeline
    from ._io import check_output_dir

    made = not os.path.lexists(args.output)
    out = check_output_dir(args.output, "-o")
    try:
        pipe = load_pipeline(args.pipeline)
        ops = None if args.operators is None else tuple(os.path.abspath(d) for d in args.operators)
        try:
            folder = build_pipeline(pipe, args.output, target=args.target, force=args.force,
                                    report=lambda line: print(f"note: {line}", file=sys.stderr),
                                    operators_path=ops)
        except OpsdkError as e:
            raise type(e)(f"{e} -- while building the pipeline '{pipe.name}'") from e
    except BaseException:
        if made and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # the -o folder this run made, left empty by the failure
        raise
    print(f"wrote ensemble {folder} (target {args.target}): "
          f"{' -> '.join(s.name for s in pipe.steps)}")
    for step in pipe.steps:
        where = folder.parent / step.name
        print(f"  {where} ({step.kind}: {step.source})" if where.is_dir() else
              f"  {step.name} ({step.kind}: {step.source}): folded into the model it feeds")
    print(f"check it: opsdk triton check {folder}")
    if args.target == "cpu":
        print(f"serve it: opsdk serve {args.output}")
    return 0


def run_ensemble_check(args: argparse.Namespace) -> int:
    """``opsdk triton check`` on an ensemble folder: wiring, then each npu_ge step."""
    from ..triton import check_ensemble

    report = check_ensemble(args.folder, models=True, cann=args.cann)
    if args.json:
        data = asdict(report)
        data["models"] = {k: {**asdict(v), "ok": v.ok} for k, v in report.models.items()}
        print(json.dumps({**data, "ok": report.ok}, indent=2))
        return 0 if report.ok else 1
    print(f"{args.folder}: ensemble of {len(report.steps)} step(s): {' -> '.join(report.steps)}")
    for e in report.edges:
        print(f"  '{e.tensor}' {e.data_type} {list(e.dims)}: {e.producer} -> {e.consumer}")
    for step, result in report.models.items():
        print(f"  step '{step}': npu_ge model, CANN {result.cann} parser rules, ONNX Runtime "
              f"{result.onnxruntime or '(did not run)'}")
    for step in report.onnx_steps:
        print(f"  step '{step}': its model.onnx read, opened with opsdk.onnx.Session (as its "
              "model.py does) and compared with its config.pbtxt")
    for problem in report.problems:
        print(f"  problem: {problem}")
    print("ok" if report.ok else f"{len(report.problems)} problem(s)")
    return 0 if report.ok else 1


def run_load_report(args: argparse.Namespace) -> int:

    from ..triton import format_load_report, load_report, plot_load_report

    modes = {"both": (True, False), "on": (True,), "off": (False,)}[args.batching]
    given = {name: _read_input(name, path) for name, path in args.input}
    result = load_report(
        args.repository, args.model, concurrency=args.concurrency, requests=args.requests,
        batch=args.batch, shapes=dict(args.shape), batching=modes, inputs=given,
        progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True))
    if args.plot:
        plot_load_report(result, args.plot, force=args.force)
        result["plot"] = args.plot
    print(json.dumps(result, indent=2) if args.json else format_load_report(result))
    return 0
