"""``opsdk cann MyOp [OtherOp ...] -o build/cann/pkg``: write one CANN project, one package."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..ascend._op import DEFAULT_SOCS

HELP = """\
examples:
  opsdk cann MyOp -o build/cann/my_op                      # AI CPU, CANN of this host or 8.x
  opsdk cann Gelu Softmax GridSample -o build/cann/pkg --vendor acme   # one package, 3 ops
  opsdk cann --all -o build/cann/all --vendor acme         # every operator opsdk finds
  opsdk cann MyOp -o build/cann/my_op --cann 9 --engine both --soc Ascend910B3
  opsdk cann ThresholdedRelu -o build/cann/trelu --op-type ThresholdedReluCustom
  opsdk cann MyOp -o build/cann/my_op --onnx-model model.onnx --force

One project is one package: one vendor, one build.sh, one .run with every operator's AI CPU
kernel, AI Core kernel (where it has one), op proto and ONNX plugin; it installs into
$ASCEND_OPP_PATH/vendors/<vendor>/. Packages of different vendors coexist on a host; two
operators of one type (in one package, or in another vendor already installed) are refused.
--engine aicpu runs each operator's own kernel.cpp on the NPU's AI CPU through a generated
adapter; aicore builds the AI Core (Ascend C) kernel; both builds the two. The default is
aicpu until the operator has an AI Core kernel, then both. An operator without an AI Core
kernel is refused for aicore/both (--aicore-skeleton writes the TODO skeleton instead).
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
    p.add_argument("names", nargs="*", metavar="name",
                   help="operators: MyOp, my_op, domain::MyOp or a folder with spec.py")
    p.add_argument("--all", action="store_true", help="every operator opsdk finds, one package")
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
    p.add_argument("--op-type", action="append", default=[], metavar="[OP=]TYPE",
                   help="an operator's CANN type name (default: the spec's name); with several "
                   "operators, Op=Type, repeatable")
    p.add_argument("--aicore-skeleton", action="store_true",
                   help="for an operator without an AI Core kernel, write the TODO(author) "
                   "skeleton instead of refusing --engine aicore/both")
    p.add_argument("--allow-todo-infershape", action="store_true",
                   help="generate an operator without a C++ shape function (operators/<op>/"
                   "shape.h) anyway: its InferShape is then the TODO(author) skeleton, which "
                   "returns GRAPH_FAILED, and ATC refuses models using it")
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


def _operators(args: argparse.Namespace) -> list[Any]:
    from ..ascend import CannArgError
    from ..registry import find_operator, find_operators

    if args.all and args.names:
        raise CannArgError("opsdk cann: give operator names or --all, not both")
    if args.all:
        found = sorted(find_operators(), key=lambda i: i.spec.name)
        if not found:
            raise CannArgError("opsdk cann --all: no operators found (see `opsdk list`)")
        return found
    if not args.names:
        raise CannArgError("opsdk cann: name at least one operator (or --all)")
    return [find_operator(n) for n in args.names]


def _op_types(args: argparse.Namespace, infos: list[Any]) -> dict[str, str]:
    """``{spec name: CANN type}`` from --op-type (``TYPE`` for one operator, ``Op=TYPE``)."""
    from ..ascend import CannArgError

    names = {i.spec.name for i in infos}
    out: dict[str, str] = {}
    for value in args.op_type:
        op, sep, typ = value.rpartition("=")
        if not sep:
            if len(infos) != 1:
                raise CannArgError(f"--op-type {value}: with several operators write Op=Type, "
                                   f"e.g. --op-type {infos[0].spec.name}={value}")
            op = infos[0].spec.name
        if op not in names:
            raise CannArgError(f"--op-type {value}: {op} is not one of the operators "
                               f"({', '.join(sorted(names))})")
        out[op] = typ
    return out


def _entries(args: argparse.Namespace, infos: list[Any],
             socs: list[str]) -> list[tuple[Any, str, str]]:
    """(PackageOp, engine reason, warning or "") of each operator."""
    from ..ascend import CannArgError, PackageOp, builtin_clash, default_engine

    if len(infos) > 1 and args.origin_op_type:
        raise CannArgError("--origin-op-type names one operator's keys; with several operators "
                           "use --onnx-model or generate the operator alone")
    types = _op_types(args, infos)
    out = []
    for info in infos:
        spec = info.spec
        _check_infershape(spec, info.folder, args.allow_todo_infershape)
        engine, why = ((args.engine, "--engine") if args.engine
                       else default_engine(spec, info.folder, socs))
        op_type = types.get(spec.name)
        entry = PackageOp(spec, engine, op_type, _keys(args, spec), info.folder)
        out.append((entry, why, builtin_clash(op_type or spec.name, spec=spec) or ""))
    return out


def _check_infershape(spec: Any, folder: Any, allowed: bool) -> None:
    """Refuse an operator whose generated InferShape would be the scaffold's TODO."""
    from pathlib import Path

    from ..ascend import CannArgError

    if spec.elementwise or folder is None or (Path(folder) / "shape.h").is_file():
        return
    if not allowed:
        raise CannArgError(
            f"{spec.name}: no C++ shape function: write {Path(folder) / 'shape.h'} (the port "
            "of spec.py's shape function, see opsdk/shape_fn.h; opsdk test and opsdk check "
            "then hold it to spec.py). Without it the project's InferShape is the TODO "
            "skeleton that returns GRAPH_FAILED and ATC refuses every model using "
            f"{spec.name}; --allow-todo-infershape generates it anyway")
    print(f"opsdk cann: warning: {spec.name}: InferShape is the TODO skeleton (no "
          f"{Path(folder) / 'shape.h'}); ATC refuses models using it until that file is "
          "written and the project regenerated", file=sys.stderr)


def _check_host(vendor: str, entries: list[Any]) -> None:
    """Refuse a vendor or op type that clashes with a package installed on this host."""
    import os
    from pathlib import Path

    from ..ascend import installed_vendors
    from ..ascend.project._package import check_installed
    from ..ascend.versions import toolkit_root

    root = toolkit_root()
    opp = os.environ.get("ASCEND_OPP_PATH") or (str(root / "opp") if root else "")
    if opp and Path(opp).is_dir():
        types = [e.op_type or e.spec.name for e in entries]
        check_installed(vendor, types, installed_vendors(Path(opp)), Path(opp))


def run(args: argparse.Namespace) -> int:
    from ..ascend import compute_unit, resolve_cann, write_package
    from ..naming import check_vendor_name

    infos = _operators(args)
    socs = list(dict.fromkeys(compute_unit(s) for s in (args.soc or DEFAULT_SOCS)))
    vendor = check_vendor_name(args.vendor)
    target = resolve_cann(args.cann)
    planned = _entries(args, infos, socs)
    warnings = [w for _, _, w in planned if w]
    for w in warnings:
        print(f"opsdk cann: warning: {w}", file=sys.stderr)
    entries = [e for e, _, _ in planned]
    _check_host(vendor, entries)
    report = write_package(entries, args.output, socs=socs, vendor=vendor, force=args.force,
                           cann=target.version, aicore_skeleton=args.aicore_skeleton)
    layout = target.version.project_layout
    ops = [{"op": e.spec.name, "op_type": e.op_type or e.spec.name, "engine": e.engine,
            "engine_reason": why} for e, why, _ in planned]
    if args.json:
        data = report.as_dict()
        data.update(cann=str(target.version), cann_reason=target.reason, layout=layout,
                    vendor=vendor, ops=ops, warnings=warnings)
        if len(ops) == 1:
            data.update({k: ops[0][k] for k in ("engine", "engine_reason", "op_type")})
        print(json.dumps(data, indent=2))
        return 0
    _print_report(report, target, layout, vendor, planned, infos)
    return 0


def _print_report(report: Any, target: Any, layout: str, vendor: str, planned: list[Any],
                  infos: list[Any]) -> None:
    names = ", ".join(e.spec.name for e, _, _ in planned)
    print(f"{names}: CANN project in {report.folder} (one package, vendor {vendor})")
    print(f"  CANN {target.version} ({target.reason})")
    for (e, why, _), info in zip(planned, infos, strict=True):
        op_type = e.op_type or e.spec.name
        print(f"  {e.spec.name}: engine {e.engine} ({why}); CANN operator type {op_type}; "
              f"AI Core layout {layout if e.engine != 'aicpu' else '-'}")
        if op_type != e.spec.name:
            print(f"  NPU tests: pytest --opsdk-device=npu {info.folder} "
                  f"--opsdk-cann-project {report.folder}")
    print(f"  written {len(report.written)}, unchanged {len(report.unchanged)}")
    for rel in report.kept_edited:
        print(f"  kept {rel} (edited since generation; delete it to regenerate)")
    print(f"  next: on an NPU host run {report.folder}/build.sh; it builds one .run that "
          f"installs into $ASCEND_OPP_PATH/vendors/{vendor}/ (see docs/npu_host_guide.md)")
