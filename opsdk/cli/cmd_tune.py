"""``opsdk tune``: choose an AI Core kernel's tiling per shape bucket by the estimate.

    opsdk tune Gelu                                  buckets 4096, 65536, 1M on Ascend910B3
    opsdk tune ThresholdedRelu --soc Ascend910B1 --sizes 65536 16777216 --attr alpha=0.5
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._grammar import add_soc_option
from ._numbers import size

EPILOG = """\
Every candidate tiling (buffers per queue 2 or 1, tile cap fit/16384/8192/4096/2048/1024
elements, all cores or half) runs on opsdk's Ascend C model at each size; candidates whose
outputs fail the operator's standard or that the race checker refuses are dropped; the
lowest estimate wins each bucket (ties keep the earlier candidate, today's tiling first).
The table goes into <operator>/tuning.json (--force replaces another one), which the kernel
generator reads for the model and the CANN project's TilingFunc. Estimates, not NPU times;
cached, so a warm run compiles and runs nothing.
A hand-written kernel is searched over the parameters its op_kernel/tiling.py declares
(Tiling(..., search={"tileCap": [0, 4096, 1024]}), the first value the default, and
optionally constraint(params, shapes, soc) -> reason), every combination, defaults first.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "tune", help="choose an AI Core kernel's tiling per shape bucket (estimate)",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("op", help="operator (MyOp, my_op, domain::MyOp or a folder)")
    add_soc_option(p, " (the SoC of the estimate)")
    p.add_argument("--sizes", nargs="+", type=size, default=None, metavar="N",
                   help="bucket ends in elements of the first input (default 4096 65536 "
                   "1048576; the last bucket covers every larger call)")
    p.add_argument("--dtype", default="float32", help="dtype of the inputs (default float32)")
    p.add_argument("--attr", nargs="+", default=[], metavar="NAME=VALUE",
                   help="attributes, e.g. alpha=0.5")
    p.add_argument("--costs", metavar="FILE", default=None,
                   help="JSON of estimate costs replacing the table's")
    p.add_argument("--dry-run", action="store_true", help="search and report, write nothing")
    p.add_argument("--force", action="store_true", help="replace a different tuning.json")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..ascend.ascendc._tune import tune
    from .cmd_bench import _parse_attrs

    result = tune(
        args.op, soc=args.soc, dtype=args.dtype, sizes=args.sizes,
        attrs=_parse_attrs(args.op, args.attr), costs=args.costs, write=not args.dry_run,
        force=args.force, progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True),
    )
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
    else:
        print(result.format())
    return 0
