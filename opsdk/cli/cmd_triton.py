"""``opsdk triton build model.onnx -o repo/ --name NAME --target cpu|ascend``;
``opsdk triton check REPO/NAME`` (an npu_ge model folder, as the backend and GE see it)."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

from ..ascend.versions import DEFAULT_CANN
from ..errors import OpsdkError
from ._io import probe_value
from ._numbers import count, count32, int_list, max_batch, memory_policy, queue_delay


def register(sub: Any) -> None:
    p = sub.add_parser("triton", help="Triton Inference Server model repositories")
    tsub = p.add_subparsers(dest="triton_command", metavar="ACTION")
    b = tsub.add_parser(
        "build",
        help="write a Triton model repository from an ONNX model",
        description="Write REPO/NAME/{config.pbtxt, 1/model.onnx[, 1/model.py]}. --target cpu "
        "serves with the Python backend running opsdk.onnx.Session (custom nodes included); "
        "--target ascend writes a config for the npu_ge (GE) backend.",
    )
    b.add_argument("model", help="the .onnx model")
    b.add_argument("-o", "--output", required=True, help="model repository folder")
    b.add_argument("--name", required=True, help="model name in the repository")
    b.add_argument("--target", choices=("cpu", "ascend"), default="cpu")
    b.add_argument("--max-batch-size", type=max_batch, default=None,
                   help="0 disables batching; default 32 if every input/output has a "
                   "variable leading dim, else 0")
    b.add_argument("--preferred-batch-size", type=int_list(count32, "4,8"), default=(),
                   help="comma-separated, e.g. 4,8,16")
    b.add_argument("--max-queue-delay-us", type=queue_delay, default=100)
    b.add_argument("--no-dynamic-batching", action="store_true",
                   help="keep max_batch_size but let Triton run requests one by one")
    b.add_argument("--instances", type=count32, default=1, help="model instances (instance_group)")
    b.add_argument("--threads", type=count32, default=1,
                   help="cpu: threads per model instance for the graph executor (default 1: "
                   "instances and dynamic batching give the parallelism)")
    b.add_argument("--warmup", action="store_true",
                   help="zero-data model_warmup requests: one per --shape-gears gear, else one "
                   "per batch size the batcher forms (1, each preferred size, the maximum)")
    b.add_argument("--operators", action="append", default=None, metavar="DIR",
                   help="folder holding operator folders, stored as OPSDK_OPERATORS_PATH "
                   "(repeatable; default: where opsdk finds the model's custom ops)")
    b.add_argument("--parameter", action="append", type=_key_value, default=[],
                   metavar="KEY=VALUE", help="an extra config parameter (repeatable; ascend: "
                   "checked against what npu_ge reads)")
    _ascend_arguments(b)
    b.add_argument("--force", action="store_true",
                   help="replace an existing model folder written by opsdk")
    b.set_defaults(func=run_build)
    c = tsub.add_parser(
        "check",
        help="check an npu_ge model folder as the backend and GE will see it, or an "
        "ensemble's wiring (every edge's name, dtype, dims, batch size) and its npu_ge steps",
        description="Check REPO/NAME written by `opsdk triton build --target ascend`: one "
        "model file in the folder; GE's ONNX parser rules of the target CANN; ONNX Runtime "
        "1.23.2 (as inside npu_ge, no custom ops) opens and runs it, matching opsdk's kernels. "
        "Needs the ONNX Runtime 1.23.2 venv (opsdk.triton.ensure_ort_env()).",
    )
    c.add_argument("folder", help="the model folder, REPO/NAME")
    c.add_argument("--cann", default="auto", help="CANN release whose parser rules apply")
    c.add_argument("--op-project", action="append", default=[], metavar="DIR",
                   help="an `opsdk cann` project whose plugin keys apply (repeatable)")
    c.add_argument("--dim", action="append", type=_key_value, default=[], metavar="NAME=SIZE",
                   help="size of a symbolic input dim for the test run (default: sizes "
                   "the model runs on, as the build's dim check probes them)")
    c.add_argument("--probe-values", action="append", type=probe_value, default=[],
                   metavar="INPUT=VALUE",
                   help="the value a value input (e.g. a sample rate) is filled with for the "
                   "test run (repeatable; default: the constant the graph compares it with)")
    c.add_argument("--json", action="store_true", help="print a JSON report")
    c.set_defaults(func=run_check)
    from . import cmd_triton_pipeline

    cmd_triton_pipeline.register(tsub)
    p.set_defaults(func=lambda args: _usage(p))


def _ascend_arguments(b: argparse.ArgumentParser) -> None:
    g = b.add_argument_group("ascend (npu_ge) options")
    g.add_argument("--cann", default="auto",
                   help="CANN release whose GE ONNX parser rules the model file follows: "
                   f"auto (the installed toolkit, else {DEFAULT_CANN}), 8, 9.1, 8.1.RC1, ...")
    g.add_argument("--op-project", action="append", default=[], metavar="DIR",
                   help="an `opsdk cann` project whose plugin keys the model must use "
                   "(repeatable; default: each operator's spec version)")
    g.add_argument("--device-ids", default="0", help="NPU ids, e.g. 0 or 2,3")
    g.add_argument("--static-model", action="store_true",
                   help="GE static graph (fixed shapes; with --max-batch-size > 0 npu_ge runs "
                   "a batch-1 graph once per row)")
    g.add_argument("--device-exec-blocks", type=count32, default=None,
                   help="graphs (each with its stream) per device; default: instances x "
                   "instance_exec_blocks spread over the devices")
    g.add_argument("--instance-exec-blocks", type=count32, default=None,
                   help="graphs per instance_group count (default 1)")
    g.add_argument("--session-option", action="append", type=_key_value, default=[],
                   metavar="GE_OPTION=VALUE",
                   help="a GE session option for this model, written as session.GE_OPTION "
                   "(repeatable), e.g. ge.exec.precision_mode_v2=fp16")
    g.add_argument("--precision-mode-v2", default=None, metavar="MODE",
                   help="shorthand for --session-option ge.exec.precision_mode_v2=MODE")
    g.add_argument("--shape-gears", type=_gears, default=(), metavar="G1;G2",
                   help="GE shape gears: one comma-separated value per variable input dim "
                   "(in input order) each, gears separated by ';', e.g. '1;2;4;8'")
    g.add_argument("--output-dims", action="append", type=_output_dims, default=[],
                   metavar="OUTPUT=E0,E1,...",
                   help="an output's dims, one entry per dim: a size or an expression npu_ge "
                   "evaluates over the input dim names (+ - * / and parentheses), for dims the "
                   "graph does not determine (repeatable), e.g. 'y=batch,(seq+1)/2,64'")
    g.add_argument("--probe-dims", action="append", type=_probe, default=[],
                   metavar="NAME=SIZE,...",
                   help="input dim sizes the model accepts, one probe per use (repeatable): "
                   "ONNX Runtime runs the model on them to check every output dim name "
                   "(default: the shape gears, else leading dims 1 and 2, others 64, 96, ...)")
    g.add_argument("--probe-values", action="append", type=probe_value, default=[],
                   metavar="INPUT=VALUE",
                   help="the value a value input (e.g. a sample rate) is filled with on the "
                   "probe runs (repeatable; default: the constant the graph compares it "
                   "with, e.g. 16000 for Equal(sr, 16000), else 0)")
    g.add_argument("--buffer-optimize", choices=("l2_optimize", "l1_optimize", "off_optimize"),
                   help="GE ge.bufferOptimize for this model's session (as ATC's "
                   "--buffer_optimize; see docs/serving.md)")
    g.add_argument("--static-memory-policy", type=memory_policy, default=None, metavar="N",
                   help="GE ge.exec.staticMemoryPolicy for this model's session: 0 by size, 2 "
                   "static shapes, 3 dynamic shapes, 4 both (warned where it conflicts)")
    g.add_argument("--dump-graph", action="store_true", help="npu_ge dumps GE graphs")
    g.add_argument("--profiling", choices=("true", "dynamic"), default=None,
                   help="npu_ge profiling (./profiling)")
    g.add_argument("--dump-data", action="store_true", help="npu_ge dumps tensors (./dump_data)")


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _gears(text: str) -> tuple[tuple[int, ...], ...]:
    gears = [g for g in text.split(";") if g.strip()]
    if not gears:
        raise argparse.ArgumentTypeError(
            f"expected gears like '1;2;4' or '224,224;336,336', got {text!r}")
    return tuple(int_list(count, "224,224")(g) for g in gears)


def _output_dims(text: str) -> tuple[str, tuple[str, ...]]:
    name, sep, dims = text.rpartition("=")
    if not sep or not name.strip() or not dims.strip():
        raise argparse.ArgumentTypeError(
            f"expected OUTPUT=E0,E1,... (one size or expression per dim), got {text!r}")
    return name.strip(), tuple(d.strip() for d in dims.split(","))


def _probe(text: str) -> tuple[tuple[str, int], ...]:
    pairs = [item.partition("=") for item in text.split(",") if item.strip()]
    if not pairs or any(not sep or not k.strip() for k, sep, _ in pairs):
        raise argparse.ArgumentTypeError(
            f"expected NAME=SIZE,NAME=SIZE (input dim names, integer sizes), got {text!r}")
    try:
        return tuple((k.strip(), count(v)) for k, _, v in pairs)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(
            f"expected NAME=SIZE,NAME=SIZE (input dim names, sizes >= 1), got {text!r}: {e}"
        ) from None


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def run_build(args: argparse.Namespace) -> int:
    from ..triton import (
        AscendOptions,
        CpuOptions,
        RepositoryOptions,
        TritonConfigWarning,
        plan_repository,
        write_repository,
    )

    ops = None
    if args.operators is not None:
        ops = tuple(os.path.abspath(d) for d in args.operators)
        for given, path in zip(args.operators, ops):
            if not os.path.isdir(path):
                raise OpsdkError(f"--operators {given}: no such folder; pass a folder "
                                 "of operator folders (e.g. operators/)")
    opts = RepositoryOptions(
        name=args.name,
        target=args.target,
        max_batch_size=args.max_batch_size,
        dynamic_batching=not args.no_dynamic_batching,
        preferred_batch_sizes=args.preferred_batch_size,
        max_queue_delay_us=args.max_queue_delay_us,
        instances=args.instances,
        warmup=args.warmup,
        operators_path=ops,
        extra_parameters=tuple(args.parameter),
        ascend=AscendOptions(device_ids=args.device_ids, static_model=args.static_model,
                             **_ascend_options(args)),
        cpu=CpuOptions(threads=args.threads),
    )
    from ._io import check_output_dir

    check_output_dir(args.output, "-o")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TritonConfigWarning)
        try:
            def note(line: str) -> None:
                print(f"note: {line}", file=sys.stderr)

            plan = plan_repository(args.model, opts, report=note)
            folder = write_repository(plan, args.output, force=args.force, report=note)
        except OpsdkError as e:
            raise type(e)(f"{e} -- while building the Triton model '{args.name}'") from e
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    print(f"wrote {folder} (target {args.target}, max_batch_size {plan.max_batch_size})")
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        print(f"  {f.relative_to(folder.parent)}")
    if args.target == "cpu":
        print(f"serve it: opsdk serve {args.output}")
    elif plan.cann is not None:
        print(f"GE parser rules of CANN {plan.cann.version} ({plan.cann.reason})")
    return 0


def run_check(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from ..triton import check_npu_ge_folder, is_ensemble

    if is_ensemble(args.folder):
        from .cmd_triton_pipeline import run_ensemble_check

        return run_ensemble_check(args)
    try:
        dims = {k: int(v) for k, v in args.dim}
    except ValueError as e:
        raise OpsdkError(f"--dim takes NAME=SIZE with an integer size: {e}") from e
    report = check_npu_ge_folder(args.folder, cann=args.cann, dims=dims,
                                 op_projects=tuple(args.op_project),
                                 values=dict(args.probe_values))
    if args.json:
        print(json.dumps({**asdict(report), "ok": report.ok}, indent=2))
        return 0 if report.ok else 1
    print(f"{args.folder}: CANN {report.cann} parser rules, ONNX Runtime "
          f"{report.onnxruntime or '(did not run)'}")
    for name, err in report.max_abs_error.items():
        print(f"  output '{name}': max abs error vs opsdk {err:.3g}")
    for note in report.notes:
        print(f"  note: {note}")
    for problem in report.problems:
        print(f"  problem: {problem}")
    print("ok" if report.ok else f"{len(report.problems)} problem(s)")
    return 0 if report.ok else 1


def _ascend_options(args: argparse.Namespace) -> dict[str, Any]:
    session = list(args.session_option)
    if args.precision_mode_v2 is not None:  # an empty mode is refused, not ignored
        from ..ascend import precision_modes_v2

        if args.precision_mode_v2 not in precision_modes_v2():
            raise OpsdkError(f"--precision-mode-v2 {args.precision_mode_v2!r} is not a GE mode; "
                             f"use one of {', '.join(precision_modes_v2())}")
        session.append(("ge.exec.precision_mode_v2", args.precision_mode_v2))
    return {
        "cann": args.cann,
        "device_exec_blocks": args.device_exec_blocks,
        "instance_exec_blocks": args.instance_exec_blocks,
        "session_options": tuple(session),
        "shape_gears": args.shape_gears,
        "dump_graph": args.dump_graph,
        "profiling": args.profiling,
        "dump_data": args.dump_data,
        "op_projects": tuple(os.path.abspath(d) for d in args.op_project),
        "output_dims": tuple(args.output_dims),
        "probe_dims": tuple(args.probe_dims),
        "probe_values": tuple(args.probe_values),
        "buffer_optimize": args.buffer_optimize,
        "static_memory_policy": args.static_memory_policy,
    }
