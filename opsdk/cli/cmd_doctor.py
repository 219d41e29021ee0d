"""``opsdk doctor model.onnx [--cann 8.1.RC1]``: what ATC will reject or mis-handle.

The rules are those of one CANN release (its ONNX parser's opsets and operators, E16005):
``--cann`` names it; without it the installed toolkit's release, else 8.1.RC1.
``--target ascend`` (CANN 5-7) or ``ascend-cann8`` picks a generation instead.

ONNX Runtime opens every model, only in a child process, and runs it once (on inputs of
its shapes, or on example shapes of dynamic inputs; with --ort-python's ONNX Runtime if
given): its crash is a finding that names the model, the ONNX Runtime version and the node
that crashes it, where one can be isolated.

Exit status: 0 no findings, 1 findings (a crash of ONNX Runtime among them), 2 the model
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._grammar import add_shape_option


def register(sub: Any) -> None:
    from ..ascend.atc.doctor import TARGETS

    p = sub.add_parser(
        "doctor",
        help="list what ATC's ONNX parser will reject or mis-handle in a model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--target", default=None, choices=sorted(TARGETS),
                   help="ascend: ATC of CANN 5-7; ascend-cann8: CANN 8 (default: the rules "
                   "of --cann)")
    add_shape_option(p, "a shape you will give ATC for a dynamic input")
    p.add_argument("--cann", metavar="VERSION",
                   help="the CANN release of the host's ATC, e.g. 8.1.RC1, 9.2 (default: the "
                   "target's, else the installed toolkit's, else 8.1.RC1): its opset range, "
                   "operators and E16005 rule")
    p.add_argument("--ort-python", metavar="PYTHON",
                   help="the interpreter whose ONNX Runtime opens the model and runs it once, "
                   "in a child process, whatever its shapes (default: this one), e.g. the "
                   "ONNX Runtime 1.23.2 venv npu_ge pins (opsdk triton check makes it): a "
                   "crash of it is a finding naming the node")
    p.add_argument("--json", action="store_true", help="print findings as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..ascend.atc.doctor import diagnose, format_findings, rules_for
    from ..onnx import ModelError
    from .cmd_export import parse_shapes

    shapes = parse_shapes(args.shape, "--input-shape")
    profile, version = rules_for(args.target, args.cann)
    label = f"{profile.name} (CANN {version})"
    try:
        findings = diagnose(
            args.model, target=profile.name, input_shapes=shapes, cann=str(version),  # type: ignore[arg-type]
            python=args.ort_python)
    except ModelError as e:
        if args.json:
            print(json.dumps({"model": args.model, "error": str(e)}))
        print(f"opsdk doctor: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({
            "model": args.model,
            "target": profile.name,
            "cann": str(version),
            "findings": [f.to_dict() for f in findings],
        }, indent=2))
    else:
        print(format_findings(findings, label))
    return 1 if findings else 0
