"""``opsdk build [OP ...]``: compile operator kernels into the cache."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("build", help="compile operator kernels (cached, incremental)")
    p.add_argument("ops", nargs="*", help="operators (default: every source operator found)")
    p.add_argument("--force", action="store_true", help="rebuild even if the cache is current")
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..build import build_operator
    from ..errors import BuildError
    from ..registry import BrokenOperator, find_operator, find_operators
    from ..runtime.cpu import Operator, load_module

    broken: list[BrokenOperator] = []
    infos = [find_operator(n) for n in args.ops] or [
        o for o in find_operators(broken) if o.prebuilt is None
    ]
    for b in broken:
        print(f"{b.folder.name}: FAILED (spec.py cannot be loaded, skipped)\n{b.error}",
              file=sys.stderr)

    def progress(msg: str) -> None:
        if not args.quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    failed: list[str] = []
    for info in infos:
        if info.prebuilt is not None:
            print(f"{info.name}: prebuilt ({info.package}), nothing to build")
            continue
        t0 = time.perf_counter()
        try:
            res = build_operator(
                info.folder, name=info.spec.snake_name, force=args.force, progress=progress
            )
            Operator(info.spec, load_module(res.module), info.folder)  # checks spec vs C++
        except BuildError as e:
            failed.append(info.name)
            print(f"{info.name}: FAILED\n{e}", file=sys.stderr)
            continue
        state = "built" if res.compiled else "up to date"
        print(f"{info.name}: {state} in {time.perf_counter() - t0:.2f} s -> {res.module}")
    names = failed + [b.folder.name for b in broken]
    if names:  # the details above; one closing line names the command and what failed
        print(f"opsdk build: error: {len(names)} operator(s) failed: {', '.join(names)}; fix "
              "the errors above and run opsdk build again", file=sys.stderr)
        return 1
    return 0
