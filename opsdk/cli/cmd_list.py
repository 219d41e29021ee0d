"""``opsdk list``: every operator opsdk can find, with domain, version, dtypes, origin."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("list", help="list operators (source folders and installed wheels)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..registry import BrokenOperator, find_operators

    broken: list[BrokenOperator] = []
    ops = find_operators(broken)
    if args.json:
        found = [o.describe() for o in ops]
        found += [{"name": b.folder.name, "folder": str(b.folder), "error": b.error}
                  for b in broken]
        print(json.dumps(found, indent=2))
        return 1 if broken else 0
    rows = [("OPERATOR", "DOMAIN", "VER", "DTYPES", "ORIGIN")]
    for o in ops:
        dts = sorted({d for i in o.spec.inputs for d in o.spec.allowed_dtypes(i.type)})
        origin = o.origin + (f" ({o.package})" if o.package else f" {o.folder}")
        if o.shadows:
            origin += f"; shadows {', '.join(s.origin for s in o.shadows)}"
        rows.append((o.name, o.domain, str(o.version), ",".join(dts), origin))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[4])
    for b in broken:
        print(f"{b.folder.name}: BROKEN, left out: {b.error}", file=sys.stderr)
    return 1 if broken else 0
