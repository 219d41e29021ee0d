"""``opsdk rewrite in.onnx -o out.onnx``: fuse chains or swap standard ops for opsdk ones.

Examples::

  opsdk rewrite resnet.onnx -o resnet_fused.onnx --fuse conv-bn-relu
  opsdk rewrite flow.onnx -o flow_npu.onnx --replace GridSample
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
    p.add_argument("-o", "--output", required=True, help="the .onnx file to write")
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
    replace = [op for item in args.replace for op in item.split(",") if op]
    check_output_file(args.output, "-o")
    source = load_model(args.model)
    result = rewrite(source, fuse=args.fuse, replace=replace)
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
    for r in result.records:
        print(f"{r.action:9} {r.node}: {r.detail}")
    print(f"wrote {path}: {result.changed} rewrite(s)")
    return 0
