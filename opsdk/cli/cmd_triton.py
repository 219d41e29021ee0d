"""``opsdk triton build model.onnx -o repo/ --name NAME --target cpu|ascend``."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import OpsdkError


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
    b.add_argument("--max-batch-size", type=int, default=None,
                   help="0 disables batching; default 32 if every input/output has a "
                   "variable leading dim, else 0")
    b.add_argument("--preferred-batch-size", type=_int_list, default=(),
                   help="comma-separated, e.g. 4,8,16")
    b.add_argument("--max-queue-delay-us", type=int, default=100)
    b.add_argument("--no-dynamic-batching", action="store_true",
                   help="keep max_batch_size but let Triton run requests one by one")
    b.add_argument("--instances", type=int, default=1, help="model instances (instance_group)")
    b.add_argument("--threads", type=int, default=1,
                   help="cpu: threads per model instance for the graph executor (default 1: "
                   "instances and dynamic batching give the parallelism)")
    b.add_argument("--warmup", action="store_true", help="add a zero-data model_warmup request")
    b.add_argument("--operators", action="append", default=None, metavar="DIR",
                   help="folder holding operator folders, stored as OPSDK_OPERATORS_PATH "
                   "(repeatable; default: where opsdk finds the model's custom ops)")
    b.add_argument("--device-ids", default="0", help="ascend: NPU ids, e.g. 0 or 2,3")
    b.add_argument("--static-model", action="store_true",
                   help="ascend: npu_ge static graph (fixed shapes, no max_batch_size)")
    b.add_argument("--force", action="store_true",
                   help="replace an existing model folder written by opsdk")
    b.set_defaults(func=run_build)
    p.set_defaults(func=lambda args: _usage(p))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from e


def run_build(args: argparse.Namespace) -> int:
    from ..triton import RepositoryOptions, build_repository

    ops = None
    if args.operators is not None:
        ops = tuple(os.path.abspath(d) for d in args.operators)
    opts = RepositoryOptions(
        name=args.name,
        target=args.target,
        max_batch_size=args.max_batch_size,
        dynamic_batching=not args.no_dynamic_batching,
        preferred_batch_sizes=args.preferred_batch_size,
        max_queue_delay_us=args.max_queue_delay_us,
        instances=args.instances,
        threads=args.threads,
        warmup=args.warmup,
        operators_path=ops,
        device_ids=args.device_ids,
        static_model=args.static_model,
    )
    from ._io import check_output_dir

    check_output_dir(args.output, "-o")
    try:
        folder = build_repository(args.model, args.output, opts, force=args.force)
    except OpsdkError as e:
        raise type(e)(f"{e} -- while building the Triton model '{args.name}'") from e
    config = (folder / "config.pbtxt").read_text()
    batch = next((ln.split(":")[1].strip() for ln in config.splitlines()
                  if ln.startswith("max_batch_size")), "none (static)")
    print(f"wrote {folder} (target {args.target}, max_batch_size {batch})")
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        print(f"  {f.relative_to(folder.parent)}")
    if args.target == "cpu":
        print(f"serve it: opsdk serve {args.output}")
    return 0
