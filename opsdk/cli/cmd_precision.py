"""``opsdk precision model.onnx --precision-mode force_fp16``: what ATC's precision mode does
to a whole model's outputs, which nodes cause the loss, and (``--fix``) which nodes to keep
in float32, written as ATC's ``--keep_dtype`` and ``--modify_mixlist`` files.

Exit codes: 0 every output passes (with ``--fix``: passes after the fix, re-checked);
1 an output fails, invalid arguments, or an error (ONNX Runtime refusing the model, or
crashing on it: the analysis runs in a child process, so the error names the model, the
ONNX Runtime version, what ran and the node).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..ascend.precision import MODE_CHOICES
from ..errors import SpecError
from ._grammar import add_shape_option, add_soc_option, atc_shapes
from ._numbers import count

HELP = """\
example:
  opsdk precision det.onnx --soc Ascend310P3 --precision-mode force_fp16 \\
      --shape x=1,3,64,96 --fix -o precision-out
  opsdk atc det.onnx --soc Ascend310P3 --output det --precision-mode force_fp16 \\
      --keep-dtype precision-out/keep_dtype.cfg

inputs are generated (seed 0: images in [-1, 1), token ids within their table) unless given
with --input name=file.npy. The report (precision_report.json, and as a page with the
per-node error bar chart, precision_report.html), keep_dtype.cfg and modify_mixlist.json go
into -o DIR; an existing file with other content needs --force.
"""


def register(sub: Any) -> None:
    from ..testing import standard_name

    p = sub.add_parser(
        "precision", help="emulate ATC's precision mode on a whole ONNX model (and fix it)",
        epilog=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="the ONNX model (float32)")
    p.add_argument("--precision-mode", required=True, choices=MODE_CHOICES, metavar="MODE",
                   help="a --precision_mode or --precision_mode_v2 value, e.g. force_fp16, "
                   "allow_fp32_to_fp16, allow_mix_precision")
    add_soc_option(p, "; its built-in lists apply (recorded: ascend310p, ascend910b)")
    p.add_argument("--overflow", choices=("inf-nan", "saturation"),
                   help="how a float16 overflow ends (default: the SoC's: saturation on "
                   "ascend310p, inf-nan on ascend910b)")
    p.add_argument("--no-fusion", action="store_true",
                   help="do not fold Conv+BatchNormalization first (ATC folds them)")
    p.add_argument("--keep-dtype", metavar="FILE", help="ATC --keep_dtype file to apply")
    p.add_argument("--modify-mixlist", metavar="FILE", help="ATC --modify_mixlist JSON to apply")
    add_shape_option(p, "fixed integer dims")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input's values (.npy); repeatable")
    p.add_argument("--standard", type=standard_name, default="cosine", metavar="NAME[:PARAM]",
                   help="comparison method judging each output against the float32 model "
                   "(default cosine: 1 - cos <= 0.01)")
    p.add_argument("--fix", action="store_true",
                   help="find what to keep in float32 so every output passes; write the files")
    p.add_argument("--fix-by", choices=("node", "op-type"), default="node",
                   help="keep single nodes (default) or whole CANN op types")
    p.add_argument("--no-attribution", action="store_true",
                   help="skip the per-node attribution (not with --fix)")
    p.add_argument("--top", type=count, default=10, help="attribution lines shown (default 10)")
    p.add_argument("-o", "--output", metavar="DIR", help="folder for the report and files")
    p.add_argument("--force", action="store_true", help="replace files there with other content")
    p.add_argument("--json", action="store_true", help="print the JSON report")
    p.set_defaults(func=run)


def _files(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise SpecError(f"--input {pair!r}: expected NAME=FILE.npy")
        out[name] = path
    return out


def run(args: argparse.Namespace) -> int:
    from ..ascend.model_precision import analyze_model_in_child, parse_input_shape, stderr_progress
    from ._io import check_output_dir

    if args.fix and args.no_attribution:
        raise SpecError("--fix searches over the attribution; drop --no-attribution")
    if args.fix and not args.output:
        raise SpecError("--fix writes keep_dtype.cfg and modify_mixlist.json: add -o DIR")
    if not Path(args.model).is_file():
        raise SpecError(f"{args.model}: no such model file; pass the path of an .onnx file")
    out = check_output_dir(args.output, "-o") if args.output else None
    shapes: dict[str, tuple[int, ...]] = {}
    shapes.update(parse_input_shape(atc_shapes(args.shape)))
    report = analyze_model_in_child(  # a crash of ONNX Runtime is an error, not our end
        args.model, args.precision_mode, keep_dtype=args.keep_dtype,
        modify_mixlist=args.modify_mixlist, soc=args.soc, input_shape=shapes,
        input_files=_files(args.input), standard=args.standard,
        fix=args.fix_by if args.fix else None, output_dir=out, force=args.force,
        attribute=not args.no_attribution, overflow=args.overflow, fuse=not args.no_fusion,
        progress=stderr_progress)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(report.text(args.top))
    if report.fix is not None:
        return 0 if not report.fix.failing_after else 1
    return 0 if not report.failing else 1
