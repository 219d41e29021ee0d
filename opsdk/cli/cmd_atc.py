"""``opsdk atc model.onnx --soc Ascend910B3 --output out``: checked ATC conversion.

The doctor and the parser-key check apply the rules of the host's CANN release (``--cann``;
default: the installed toolkit's, else 8.1.RC1), and the full host procedure is printed:
the toolkit environment, each custom operator package to build, install and source, then
the ``atc`` line.

Exit codes: 0 conversion done (or --dry-run printed the plan); 1 invalid arguments, blocking
findings or a failed conversion; 3 ``atc`` is not installed here: the exact command and
environment are printed so they can be run on an NPU host.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._grammar import add_shape_option, add_soc_option, atc_shapes
from ._numbers import memory_policy

EXIT_NO_ATC = 3

HELP = """\
example:
  opsdk atc model.onnx --soc Ascend910B3 --output out \\
      --precision-mode allow_fp32_to_fp16 --op-select-implmode high_performance \\
      --shape x=1,3,224,224 --custom-opp ~/opp/vendors/opsdk --op-project build/cann/my_op
  opsdk atc model.onnx --soc Ascend310P3 --output out --shape image=1,3,224,224 \\
      --aipp preprocess.toml --buffer-optimize l2_optimize

exit codes: 0 converted (or --dry-run), 1 invalid arguments / blocking findings / ATC failed,
3 atc not on PATH (the exact command and environment are printed for an NPU host).
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "atc",
        help="validate and run CANN's ATC conversion of an ONNX model",
        epilog=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="the ONNX model")
    add_soc_option(p, " (ATC's --soc_version)")
    p.add_argument("--output", required=True, help="output path without .om")
    add_shape_option(p, "a dim is an integer, -1 (dynamic) or lo~hi (a range)")
    p.add_argument("--precision-mode",
                   help="a --precision_mode or --precision_mode_v2 value, e.g. "
                   "allow_fp32_to_fp16, mixed_float16 (opsdk test --precision-mode emulates it)")
    p.add_argument("--keep-dtype", metavar="FILE",
                   help="ATC --keep_dtype file: OpType::Name lines whose dtype is kept")
    p.add_argument("--modify-mixlist", metavar="FILE",
                   help="ATC --modify_mixlist JSON (black-list/white-list to-add/to-remove)")
    p.add_argument("--op-select-implmode", help="high_performance or high_precision")
    p.add_argument(
        "--custom-opp",
        action="append",
        default=[],
        metavar="DIR",
        help="installed vendors/<name> package, added to ASCEND_CUSTOM_OPP_PATH",
    )
    p.add_argument(
        "--op-project",
        action="append",
        default=[],
        metavar="DIR",
        help="opsdk cann project whose plugin keys are checked against the model",
    )
    p.add_argument("--cann", default="auto", metavar="VERSION",
                   help="the host's CANN release, e.g. 8.1.RC1 (default auto: the installed "
                   "toolkit's, else 8.1.RC1): the parser rules the doctor applies")
    p.add_argument("--dynamic-dims", metavar="GEARS",
                   help="ATC shape gears, one value per -1 dim of --input-shape each, e.g. "
                   '"1,224;8,448" (written as --dynamic_dims with --input_format=ND)')
    p.add_argument("--buffer-optimize", choices=("l2_optimize", "l1_optimize", "off_optimize"),
                   help="ATC --buffer_optimize: l2_optimize (default) keeps reused data in L2; "
                   "off_optimize turns it off (to find a precision problem); l1_optimize does "
                   "nothing in current releases (see docs/npu_host_guide.md)")
    p.add_argument("--static-memory-policy", type=memory_policy, metavar="N",
                   help="GE's static-memory policy (0 by size, 2 static shapes, 3 dynamic "
                   "shapes, 4 both): not an ATC flag, exported as GE_USE_STATIC_MEMORY for the "
                   "application that runs the .om; the doctor warns where it conflicts")
    p.add_argument("--aipp", metavar="FILE",
                   help="a preprocessing declaration (TOML, see docs/npu_host_guide.md): its "
                   "AIPP config is written to OUTPUT.insert_op.cfg and passed as "
                   "--insert_op_conf, after the model fed by the AIPP emulator is checked "
                   "against the model fed by the CPU preprocessing")
    p.add_argument("--soc-as-written", action="store_true",
                   help="take an ambiguous --soc (Ascend910B: a first-generation 910 "
                   "in CANN's platform config) as written")
    p.add_argument("--force", action="store_true",
                   help="overwrite the domain-normalised copy of the model (MODEL.atc.onnx) "
                   "and the AIPP config (OUTPUT.insert_op.cfg)")
    p.add_argument("--skip-doctor", action="store_true", help="do not run the doctor check")
    p.add_argument("--dry-run", action="store_true", help="print the plan, do not run atc")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.set_defaults(func=run)


def _emit(args: argparse.Namespace, report: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for note in report["notes"]:
        print(f"note: {note}")
    for f in report["findings"]:
        print(f"doctor [{f['severity']}]: {f['message']}")
    for b in report["blocking"]:
        print(f"opsdk atc: error: {b}", file=sys.stderr)
    if report.get("status") == "no-atc":
        print("atc is not on PATH here; on an NPU host, run:")
    elif report.get("status") == "dry-run":
        print(f"on an NPU host with CANN {report['cann']}, run:")
    if report.get("status") in ("no-atc", "dry-run"):
        for k, v in report["env"].items():
            print(f"  export {k}={v}")
        for line in report["procedure"]:
            print(f"  {line}")
    if report.get("stdout"):
        print(report["stdout"])
    if report.get("stderr"):
        print(report["stderr"], file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from ..ascend import atc_executable, plan_atc, run_atc, write_aipp_config, write_model_copy

    plan = plan_atc(
        args.model,
        soc_version=args.soc,
        output=args.output,
        input_shape=atc_shapes(args.shape),
        precision_mode=args.precision_mode,
        op_select_implmode=args.op_select_implmode,
        keep_dtype=args.keep_dtype,
        modify_mixlist=args.modify_mixlist,
        custom_opp=args.custom_opp,
        op_projects=args.op_project,
        skip_doctor=args.skip_doctor,
        cann=args.cann,
        dynamic_dims=args.dynamic_dims,
        soc_as_written=args.soc_as_written,
        buffer_optimize=args.buffer_optimize,
        static_memory_policy=args.static_memory_policy,
        aipp=args.aipp,
    )
    report = plan.as_dict()
    if plan.blocking:
        report["status"] = "blocked"
        _emit(args, report)
        return 1
    write_model_copy(plan, force=args.force)
    write_aipp_config(plan, force=args.force)
    exe = atc_executable()
    if args.dry_run or exe is None:
        report["status"] = "dry-run" if args.dry_run else "no-atc"
        _emit(args, report)
        return 0 if args.dry_run else EXIT_NO_ATC
    proc = run_atc(plan, exe)
    report.update(
        status="ok" if proc.returncode == 0 else "failed",
        returncode=proc.returncode,
        stdout=proc.stdout[-4000:],
        stderr=proc.stderr[-4000:],
    )
    _emit(args, report)
    return 0 if proc.returncode == 0 else 1
