"""``opsdk check OP``: the one-call check of an operator (see :func:`opsdk.check`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..testing import DEVICES, standard_name
from ._numbers import seconds, seed
from .cmd_test import DEFAULT_TIMEOUT_S, STANDARD_HELP, check_isolation


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="check an operator: inference, reference, determinism, inputs kept, batch",
    )
    p.add_argument("op", help="operator: MyOp, my_op, domain::MyOp or a folder")
    p.add_argument("--seed", type=seed, default=0, help="seed of the generated samples")
    p.add_argument("--standard", type=standard_name, default=None, metavar="NAME[:PARAM]",
                   help="precision standard for every output (default: spec.py, then dtype): "
                   f"{STANDARD_HELP}")
    p.add_argument("--reference-device", choices=DEVICES, default=None,
                   help="the trusted device the cross-device standard divides by (default "
                   "cpu, opened only when a standard reads it)")
    p.add_argument("--timeout", type=seconds, metavar="SECONDS", default=None,
                   help="a kernel call running longer fails and its worker is stopped "
                   f"(default {DEFAULT_TIMEOUT_S:g}; refused with --no-isolate)")
    p.add_argument("--sanitize", metavar="address,undefined", default=None,
                   help="build the kernel with these sanitizers (a separate cache entry) and "
                   "report an out-of-bounds access with its file:line")
    p.add_argument("--no-isolate", action="store_true",
                   help="run the kernel in this process instead of a worker process (a "
                   "crashing kernel then ends the command; --timeout and --sanitize need the "
                   "worker and are refused with it)")
    p.add_argument("--no-torch", action="store_true",
                   help="skip torch.library.opcheck and gradcheck (run when torch is installed)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import ValidationError
    from ..runtime import load
    from ..testing import check, open_device, reads_reference

    check_isolation(args.no_isolate, args.sanitize, args.timeout)
    op = load(args.op)
    options: dict[str, Any] = {}
    if not args.no_isolate:
        timeout = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
        options = {"isolate": True, "timeout": timeout, "sanitize": args.sanitize}
    folder, spec = op.folder, op.spec
    if options:
        op = open_device("cpu", folder, spec, options)
    reference = None
    if reads_reference(spec.standard, args.standard):
        device = args.reference_device or "cpu"
        reference = op if device == "cpu" else open_device(device, folder, spec, options)
    try:
        report = check(op, seed=args.seed, standard=args.standard, reference=reference)
    except ValidationError as e:
        print(str(e), file=sys.stderr)
        return 1
    print(report)
    return 0 if args.no_torch else _torch_checks(args.op)


def _torch_checks(name: str) -> int:
    """torch.library.opcheck and gradcheck of the operator through opsdk.torch, when torch
    is installed (one line saying so otherwise)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        print("torch is not installed: torch.library.opcheck and gradcheck not run")
        return 0
    from ..torch import gradcheck, opcheck

    report = opcheck(name)
    grad = gradcheck(name)
    print(report)
    print(grad)
    return 0 if report.ok and grad.passed is not False else 1
