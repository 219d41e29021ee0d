"""``opsdk package OP [OP ...] -o dist/``: build an installable wheel of operators."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..ascend import DEFAULT_SOCS
from ._grammar import add_soc_option
from ._numbers import opset

HELP = """\
examples:
  opsdk package operators/my_op -o dist/
  opsdk package operators/my_op operators/other -o dist/ --name acme-ops --version 1.2.0
  opsdk package operators/my_op --platform manylinux2014_x86_64 \\
      --platform manylinux2014_aarch64 --python 3.10,3.11,3.12
  pip install dist/acme_ops-1.2.0-*.whl && opsdk list

One wheel per --platform and --python version. manylinux2014 wheels (glibc >= 2.17:
CentOS 7, Ubuntu 18.04, openEuler 20.03 and newer) are compiled here with zig c++ (the
ziglang package), for x86_64 or aarch64 from any Linux host; native uses this host's
compiler and glibc. Each wheel holds prebuilt kernels compiled for a portable CPU
baseline (default x86-64-v2 on x86_64, armv8-a on aarch64) and, on x86_64, again for
x86-64-v3 (AVX2, FMA, F16C) and x86-64-v4 (AVX-512), of which opsdk loads the best the CPU
has (OPSDK_ISA=baseline or a level forces one), the specs, references, tests,
ONNX schemas and CANN projects, and a manifest that opsdk checks before loading a kernel.
Installed, opsdk finds the operators by name and never compiles them.
  opsdk package --cmake-dir     print the folder of OpsdkOperator.cmake and exit
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "package", help="build a wheel of operators with prebuilt kernels", epilog=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("ops", nargs="*", metavar="OP", help="operator folders (or names; default: "
                   "every operator of the operator project here)")
    p.add_argument("-o", "--out", default="dist", help="output folder (default ./dist)")
    p.add_argument("--name", help="package name (required for several operators; default in "
                   "an operator project: its pyproject.toml's)")
    p.add_argument("--version", help="package version (default: the operator project's, else "
                   "0.1.0)")
    p.add_argument("--platform", action="append", metavar="PLATFORM",
                   help="wheel platform, repeatable: manylinux2014_x86_64, "
                        "manylinux2014_aarch64, native (default: manylinux2014 of this "
                        "machine)")
    p.add_argument("--python", metavar="VERSIONS",
                   help="CPython versions, one wheel each, e.g. 3.10,3.11,3.12 (default: "
                        "this interpreter's)")
    add_soc_option(p, " (the CANN target; a compute unit, e.g. ascend910b, is taken too)",
                   repeatable=True)
    p.add_argument("--cpu-baseline", metavar="ARCH",
                   help="-march of the kernels: x86-64, x86-64-v2 (default), x86-64-v3, "
                        "x86-64-v4, armv8-a; '' for the compiler default")
    p.add_argument("--isa-variants", metavar="LEVELS",
                   help="wider CPU levels compiled besides the baseline, the best one the "
                        "CPU has is loaded: comma-separated, or none (default on x86_64: "
                        "x86-64-v3,x86-64-v4)")
    p.add_argument("--no-onnx", action="store_true", help="leave out the ONNX artefacts")
    p.add_argument("--no-cann", action="store_true", help="leave out the CANN projects")
    p.add_argument("--opset", type=opset, metavar="N",
                   help="ai.onnx opset of the fallback functions (default: the lowest they "
                        "need, 15 or more)")
    p.add_argument("--exclude-sources", action="store_true",
                   help="do not ship the C++ kernel sources in the wheel")
    p.add_argument("--keep-project", metavar="DIR",
                   help="also write the generated build project to DIR (for a look)")
    p.add_argument("--force", action="store_true",
                   help="replace a different wheel of the same name in the output folder")
    p.add_argument("--cmake-dir", action="store_true",
                   help="print the folder of OpsdkOperator.cmake and exit")
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=run)


def _isa_levels(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [] if text.strip() == "none" else [t.strip() for t in text.split(",") if t.strip()]


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.0f} kB"


def _project_defaults(args: argparse.Namespace) -> tuple[list[str], str | None, str]:
    """The operators, name and version to package: as given, else the operator project's
    (the one the current directory is in, as ``opsdk new`` starts it)."""
    from pathlib import Path

    from .._workspace import find_project, project_operators_dir, project_table

    project = find_project(Path.cwd())
    meta = (project_table(project) or {}).get("project", {}) if project else {}
    ops = list(args.ops)
    if not ops and project is not None:
        folder = project_operators_dir(project)
        ops = [str(f) for f in sorted(folder.iterdir()) if (f / "spec.py").is_file()] \
            if folder.is_dir() else []
    return ops, args.name or meta.get("name"), args.version or meta.get("version") or "0.1.0"


def run(args: argparse.Namespace) -> int:
    from ..package import cmake_dir, package_operators

    if args.cmake_dir:
        print(cmake_dir())
        return 0

    from ._io import check_output_dir

    check_output_dir(args.out, "-o")  # before compiling anything

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    ops, name, version = _project_defaults(args)
    res = package_operators(
        ops, args.out, name=name, version=version,
        platforms=args.platform, python=args.python, socs=args.soc or DEFAULT_SOCS,
        cpu_baseline=args.cpu_baseline, isa=_isa_levels(args.isa_variants),
        onnx=not args.no_onnx, cann=not args.no_cann, exclude_sources=args.exclude_sources,
        keep_project=args.keep_project, force=args.force, progress=progress, opset=args.opset,
    )
    for b in res.builds:
        state = "unchanged (identical wheel already there)" if b.unchanged else "built"
        print(f"{state}: {b.wheel} ({_size(b.wheel.stat().st_size)}) in {b.seconds:.1f} s")
    for op, files in res.artefacts.items():
        kinds = sorted({f.split("/")[0] for f in files})
        print(f"  {op}: kernel, spec, reference" + (f", {', '.join(kinds)}" if kinds else ""))
    for kind, why in res.skipped.items():
        print(f"  no {kind} artefacts: {why}")
    for b in res.builds:
        if b.project is not None:
            print(f"  build project kept in {b.project}")
    if len(res.builds) == 1:
        print(f"install: pip install {res.wheel}")
    else:
        print(f"install: pip install --find-links {res.wheel.parent} {res.name}=={res.version}"
              " (pip picks the wheel of the host)")
    return 0
