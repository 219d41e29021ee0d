"""``opsdk check OP``: the one-call check of an operator (see :func:`opsdk.check`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..testing._standards import STANDARDS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="check an operator: inference, reference, determinism, inputs kept, batch",
    )
    p.add_argument("op", help="operator: MyOp, my_op, domain::MyOp or a folder")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated samples")
    p.add_argument("--standard", choices=sorted(STANDARDS), default=None,
                   help="precision standard for every output (default: spec.py, then dtype)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import opsdk

    from ..errors import ValidationError
    from ..testing import check

    op = opsdk.load(args.op)
    try:
        report = check(op, seed=args.seed, standard=args.standard)
    except ValidationError as e:
        print(str(e), file=sys.stderr)
        return 1
    print(report)
    return 0
