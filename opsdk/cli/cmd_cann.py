"""``opsdk cann MyOp -o build/cann/my_op``: write the operator's CANN project."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..ascend._op import DEFAULT_SOCS

HELP = """\
examples:
  opsdk cann MyOp -o build/cann/my_op                      # AI CPU, CANN of this host or 8.x
  opsdk cann MyOp -o build/cann/my_op --cann 9 --engine both --soc Ascend910B3
  opsdk cann ThresholdedRelu -o build/cann/trelu --op-type ThresholdedReluCustom
  opsdk cann MyOp -o build/cann/my_op --onnx-model model.onnx --force

--engine aicpu runs the operator's own kernel.cpp on the NPU's AI CPU through a generated
adapter; aicore builds the AI Core (Ascend C) kernel; both builds the two packages. The
default is aicpu until the operator has an AI Core kernel, then both.
--cann auto reads the installed toolkit's version (ASCEND_HOME_PATH, the default install
prefix) and falls back to CANN 8.x: 8.x projects build through the host's msopgen, 9.x
AI Core projects with the toolkit's ASC CMake modules.

The plugin registers the OriginOpType keys the GE ONNX parser builds for the op's nodes:
by default <domain>::<version>::<Name> from spec.py; with --onnx-model, the keys that model
needs; with --origin-op-type, exactly the keys given. --force regenerates opsdk's own files
and keeps files you edited; files opsdk did not write are never touched.
"""


def register(sub: Any) -> None:
    from ..ascend import ENGINES

    p = sub.add_parser(
        "cann",
        help="generate the CANN projects (AI CPU and AI Core kernels, ONNX plugin, op proto)",
        epilog=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", help="operator: MyOp, my_op, domain::MyOp or a folder with spec.py")
    p.add_argument("-o", "--output", required=True, help="project folder to write")
    p.add_argument(
        "--soc",
        action="append",
        default=[],
        metavar="SOC",
        help=f"compute unit or SoC version, repeatable (default {DEFAULT_SOCS[0]})",
    )
    p.add_argument("--onnx-model", metavar="MODEL", help="register the keys this ONNX model needs")
    p.add_argument(
        "--origin-op-type",
        action="append",
        default=[],
        metavar="KEY",
        help="register exactly this key (domain::opset::OpType), repeatable",
    )
    p.add_argument("--vendor", default="opsdk", help="vendor_name of the operator package")
    p.add_argument("--cann", default="auto", metavar="VERSION",
                   help="auto (the installed toolkit, else 8.x), a major (8, 9) or a release")
    p.add_argument("--engine", choices=ENGINES,
                   help="kernels to build: AI CPU (the operator's kernel.cpp), AI Core, both "
                   "(default: both when the operator has an AI Core kernel, else aicpu)")
    p.add_argument("--op-type", metavar="TYPE",
                   help="the operator's CANN type name (default: the spec's name)")
    p.add_argument("--force", action="store_true", help="regenerate into a non-empty folder")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    p.set_defaults(func=run)


def _keys(args: argparse.Namespace, spec: Any) -> list[str] | None:
    from ..ascend import CannArgError, origin_op_types

    keys = list(args.origin_op_type)
    for key in keys:
        parts = key.split("::")
        if len(parts) != 3 or not parts[1].isdigit() or parts[2] != spec.name:
            raise CannArgError(
                f"--origin-op-type {key!r} must be <domain>::<opset>::{spec.name}, "
                f"e.g. {spec.domain}::{spec.version}::{spec.name}"
            )
    if args.onnx_model:
        found = origin_op_types(args.onnx_model).get(spec.name)
        if not found:
            raise CannArgError(
                f"{args.onnx_model} has no {spec.name} node the GE parser can resolve; "
                "check the node's op_type and domain (see `opsdk atc` findings)"
            )
        keys.extend(k for k in found if k not in keys)
    return keys or None


def run(args: argparse.Namespace) -> int:
    from ..ascend import builtin_clash, compute_unit, default_engine, resolve_cann, write_project
    from ..registry import find_operator

    info = find_operator(args.name)
    spec = info.spec
    socs = list(dict.fromkeys(compute_unit(s) for s in (args.soc or DEFAULT_SOCS)))
    from ..naming import check_vendor_name

    target = resolve_cann(args.cann)
    engine, why = (args.engine, "--engine") if args.engine else default_engine(spec, info.folder)
    op_type = args.op_type or spec.name
    clash = builtin_clash(op_type)
    if clash:
        print(f"opsdk cann: warning: {clash}", file=sys.stderr)
    report = write_project(
        spec,
        args.output,
        socs=socs,
        origin_op_types=_keys(args, spec),
        vendor=check_vendor_name(args.vendor),
        force=args.force,
        engine=engine,
        cann=target.version,
        op_type=args.op_type,
        kernel_folder=info.folder,
    )
    layout = target.version.project_layout
    if args.json:
        data = report.as_dict()
        data.update(cann=str(target.version), cann_reason=target.reason, layout=layout,
                    engine=engine, engine_reason=why, op_type=op_type,
                    warnings=[clash] if clash else [])
        print(json.dumps(data, indent=2))
        return 0
    print(f"{spec.name}: CANN project in {report.folder}")
    print(f"  CANN {target.version} ({target.reason})")
    print(f"  engine {engine} ({why}); CANN operator type {op_type}; "
          f"AI Core layout {layout if engine != 'aicpu' else '-'}")
    print(f"  written {len(report.written)}, unchanged {len(report.unchanged)}")
    for rel in report.kept_edited:
        print(f"  kept {rel} (edited since generation; delete it to regenerate)")
    print(f"  next: on an NPU host run {report.folder}/build.sh (see docs/npu_host_guide.md)")
    if op_type != spec.name:
        print(f"  NPU tests: pytest --opsdk-device=npu {info.folder} "
              f"--opsdk-cann-project {report.folder}")
    return 0
