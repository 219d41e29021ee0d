"""``opsdk rewrite in.onnx -o out.onnx``: fuse chains or swap standard ops for opsdk ones.

Examples::

  opsdk rewrite resnet.onnx -o resnet_fused.onnx --fuse conv-bn-relu
  opsdk rewrite resnet.onnx --fuse conv-bn-relu --report          # decisions only, no file
  opsdk rewrite vit.onnx -o vit_npu.onnx --replace Gelu --target ascend
  opsdk rewrite flow.onnx -o flow_npu.onnx --replace GridSample

A rewrite happens only where it pays: for --target ascend, Conv+BatchNormalization+Relu stays
as it is (ATC fuses it on the AI Core); for --target cpu (default) a chain is fused only in
the shape classes where FusedConvBnRelu was measured faster than ONNX Runtime. --report lists
every candidate with the decision and the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: Any) -> None:
    from ..onnx import FUSIONS

    p = sub.add_parser(
        "rewrite",
        help="fuse Conv-BN-Relu chains or replace standard ops by opsdk operators",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="the input .onnx file")
    p.add_argument("-o", "--output", help="the .onnx file to write (optional with --report)")
    p.add_argument("--target", choices=("cpu", "ascend"), default="cpu",
                   help="where the model runs: decides which rewrites pay (default cpu)")
    p.add_argument("--report", action="store_true",
                   help="list each candidate, the decision and the reason")
    p.add_argument("--force-fuse", action="store_true",
                   help="fuse on the CPU even in the shape classes measured slower")
    p.add_argument("--fuse", action="append", default=[], choices=FUSIONS,
                   help="a fusion to apply (repeatable)")
    p.add_argument("--replace", action="append", default=[], metavar="OP",
                   help="standard op to replace by the opsdk operator whose spec.onnx_op is OP")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import SpecError
    from ..onnx import ModelError, check_model, load_model, rewrite, save_model
    from ._io import check_output_file

    if not args.fuse and not args.replace:
        raise SpecError("nothing to do: pass --fuse conv-bn-relu and/or --replace OP")
    if not args.output and not args.report:
        raise SpecError("pass -o OUT.onnx to write the rewritten model, or --report alone")
    replace = [op for item in args.replace for op in item.split(",") if op]
    if args.output:
        check_output_file(args.output, "-o")
    source = load_model(args.model)
    result = rewrite(source, fuse=args.fuse, replace=replace, native=_native(args.target),
                     force=args.force_fuse)
    if args.report and not args.json:
        _print_report(result.records, args.target)
    if not args.output:  # --report alone: nothing written
        if args.json:
            print(json.dumps({"output": None, "target": args.target,
                              "records": [r.__dict__ for r in result.records]}, indent=2))
        return 0
    try:
        check_model(result.model)
    except ModelError as e:  # write anyway only if ONNX rejected the input already
        try:
            check_model(source)
        except ModelError:
            print(f"note: ONNX's checks reject the input model too: {e}", file=sys.stderr)
        else:
            raise ModelError(f"the rewritten model fails ONNX's checks: {e}") from None
    path = save_model(result.model, args.output, force=args.force)
    if args.json:
        print(json.dumps({
            "output": str(path),
            "changed": result.changed,
            "records": [r.__dict__ for r in result.records],
        }, indent=2))
        return 0
    if not args.report:
        for r in result.records:
            print(f"{r.action:9} {r.node}: {r.detail}")
    print(f"wrote {path}: {result.changed} rewrite(s)")
    return 0


def _native(target: str) -> dict[str, str]:
    """Fusions the target's compiler does itself (kept, not rewritten)."""
    if target != "ascend":
        return {}
    from ..ascend.parser import ATC_NATIVE_FUSIONS

    return dict(ATC_NATIVE_FUSIONS)


def _print_report(records: list[Any], target: str) -> None:
    """Each candidate, the decision and the reason; then the count per decision."""
    print(f"rewrite report for target {target}:")
    for r in records:
        decision = {"fused": "rewrite", "replaced": "rewrite", "refused": "keep (refused)",
                    "skipped": "keep (no match)"}.get(r.action, r.action)
        print(f"  {r.node}\n      decision: {decision}\n      reason:   {r.detail}")
    counts: dict[str, int] = {}
    for r in records:
        counts[r.action] = counts.get(r.action, 0) + 1
    print("  " + ", ".join(f"{n} {a}" for a, n in sorted(counts.items())) if counts
          else "  no candidates")
    if target == "cpu" and counts.get("fused"):
        print("  note: the classes decide per convolution; each fused node also splits ONNX "
              "Runtime's part of the graph under opsdk's Session, which on small tensors can "
              "cost more than the kernel saves (docs/onnx.md, Rewrites): time the model "
              "before and after")
