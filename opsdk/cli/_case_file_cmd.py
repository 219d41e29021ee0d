"""``opsdk test OP --export-cases FILE`` and ``opsdk test OP --cases FILE``.

The hand-off to Huawei's ops-test-kit: write an operator's cases as its kernel-mode case
file, or run such a file's cases here with opsdk (docs/validation.md, "Case files").

Example:
    $ opsdk test ThresholdedRelu --export-cases thresholded_relu.csv
    $ opsdk test ThresholdedRelu --cases thresholded_relu.csv --report out.html
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .errors import CaseFileArgError

#: Options ``--cases`` runs with; the rest of ``opsdk test``'s need pytest and are refused.
_WITH_CASES = ("device", "seed", "standard", "precision_mode", "report")


def add_options(p: argparse.ArgumentParser, default: Any) -> None:
    """Add ``--export-cases``, ``--cases`` and ``--force`` to ``opsdk test``'s parser."""
    p.add_argument("--export-cases", metavar="FILE", default=default,
                   help="write the operator's cases as an ops-test-kit case file (CSV) and "
                   "stop (docs/validation.md, Case files)")
    p.add_argument("--cases", metavar="FILE", default=default,
                   help="run the cases of an ops-test-kit case file with opsdk instead of "
                   "the generated tests")
    p.add_argument("--force", action="store_true", default=default,
                   help="--export-cases: replace an existing file")


def run(option: Callable[[str], Any], op: str, rest: list[str]) -> int | None:
    """Handle ``--export-cases`` / ``--cases``; None when neither was given.

    ``option(name)`` reads one of ``opsdk test``'s options; ``rest`` are the arguments
    that would go to pytest (refused here: no pytest runs).
    """
    export, cases = option("export_cases"), option("cases")
    if not export and not cases:
        return None
    if export and cases:
        raise CaseFileArgError("--export-cases and --cases both given; pass one: "
                               "--export-cases writes a file, --cases runs one")
    if rest:
        raise CaseFileArgError(f"{' '.join(rest)}: pytest arguments do not apply to "
                               f"--{'export-cases' if export else 'cases'} (no pytest runs)")
    if export:
        return _export(op, export, option("standard"), bool(option("force")))
    return _run(op, cases, option)


def _export(op: str, path: str, standard: str | None, force: bool) -> int:
    from ..registry import find_operator
    from ..testing import export_cases

    info = find_operator(op)
    out = export_cases(info.spec, path, standard=standard, force=force)
    n = sum(1 for _ in out.read_text().splitlines()) - 1
    print(f"wrote {n} cases of {info.spec.name} to {out} (ops-test-kit kernel mode: "
          f"python3 -m ttk kernel -i {out.name})")
    return 0


def _run(op: str, path: str, option: Callable[[str], Any]) -> int:
    from ..testing import Report, run_case_file

    results = run_case_file(op, path, device=option("device") or "cpu",
                            seed=option("seed") or 0, standard=option("standard"),
                            precision_mode=option("precision_mode"))
    for r in results:
        print(r.summary() if not r.passed else f"passed {r.case}")
    failed = [r for r in results if not r.passed]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed ({path})")
    if option("report"):
        report = Report()
        report.extend(results)
        print(f"report: {report.write(option('report'))}")
    return 1 if failed or not results else 0


def refuse_others(option: Callable[[str], Any], names: tuple[str, ...]) -> None:
    """With ``--cases``, refuse the options of ``names`` it does not run with."""
    if not option("cases"):
        return
    given = [n for n in names if n not in _WITH_CASES and option(n)]
    if given:
        flags = ", ".join("--" + n.replace("_", "-") for n in given)
        raise CaseFileArgError(f"{flags} cannot go with --cases (it runs the file's cases "
                               f"without pytest, with {', '.join(_WITH_CASES)}); drop them")
