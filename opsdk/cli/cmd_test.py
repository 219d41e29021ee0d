"""``opsdk test OP [options] [pytest args]``: run an operator's generated tests with pytest.

Example:
    $ opsdk test ThresholdedRelu --precision-mode force_fp16 --report out.html -k float32
    $ opsdk test ThresholdedRelu --device npu --cann-op-type ThresholdedReluCustom
    $ opsdk test ThresholdedRelu --export-cases thresholded_relu.csv  # ops-test-kit's format
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from ..ascend.precision import MODE_CHOICES
from ..errors import OpsdkError
from ..runtime import dies_with_us
from ..testing import DEVICES, PARAMETRISED, STANDARDS, standard_name
from . import _case_file_cmd as case_files
from ._io import OneLineParser
from ._numbers import seconds, seed
from .errors import IsolationArgError

_OPTIONS = ("device", "seed", "standard", "reference_device", "precision_mode", "keep_dtype",
            "modify_mixlist", "report", "timeout", "sanitize")
_LISTS = ("cann_op_type", "cann_project")
DEFAULT_TIMEOUT_S = 120.0
#: The standards' names as the help of ``--standard`` lists them.
STANDARD_HELP = ", ".join(f"{n}[:PARAM]" if n in PARAMETRISED else n for n in STANDARDS) + (
    " (docs/validation.md)")


def _add_options(p: argparse.ArgumentParser, default: Any) -> None:
    p.add_argument("--device", choices=DEVICES, default=default,
                   help=f"where the kernel runs: {', '.join(DEVICES)} (default cpu; see "
                   "docs/validation.md)")
    p.add_argument("--seed", type=seed, default=default, help="base seed of generated inputs")
    p.add_argument("--standard", "--opsdk-standard", dest="standard", type=standard_name,
                   default=default, metavar="NAME[:PARAM]",
                   help="precision standard for every output (default: spec.py, then dtype): "
                   f"{STANDARD_HELP}")
    p.add_argument("--reference-device", "--opsdk-reference-device", dest="reference_device",
                   choices=DEVICES, default=default,
                   help="the trusted device the cross-device standard divides by (default "
                   "cpu); it runs the same kernel inputs")
    p.add_argument("--standard-only", "--opsdk-standard-only", dest="standard_only",
                   action="store_true", default=default,
                   help="judge by the standard alone, as its CANN tool would (no nonfinite / "
                   "finite-share checks)")
    p.add_argument("--precision-mode", choices=MODE_CHOICES, default=default,
                   help="emulate ATC's --precision_mode / --precision_mode_v2 on float cases")
    p.add_argument("--keep-dtype", metavar="FILE", default=default,
                   help="ATC --keep_dtype file for the emulation (OpType::Name lines)")
    p.add_argument("--modify-mixlist", metavar="FILE", default=default,
                   help="ATC --modify_mixlist JSON file for the emulation")
    p.add_argument("--report", metavar="PATH", default=default,
                   help="write a report of every case (.html with plots, or .json)")
    p.add_argument("--timeout", type=seconds, metavar="SECONDS", default=default,
                   help="cpu, ascendc-model and the other host devices: a case running "
                   f"longer fails and its worker is stopped (default {DEFAULT_TIMEOUT_S:g}; none "
                   "with --no-isolate)")
    p.add_argument("--sanitize", metavar="address,undefined", default=default,
                   help="cpu: build the kernel with these sanitizers (a separate cache entry) "
                   "and report an out-of-bounds access with its file:line")
    p.add_argument("--cann-op-type", action="append", metavar="TYPE", default=default,
                   help="npu: the operator's CANN type when `opsdk cann --op-type` renamed it "
                   "(e.g. ThresholdedReluCustom)")
    p.add_argument("--cann-project", action="append", metavar="DIR", default=default,
                   help="npu: read the CANN type from this `opsdk cann` project's manifest")
    p.add_argument("--no-isolate", action="store_true", default=default,
                   help="run kernels in the pytest process instead of a worker process "
                   "(a crashing kernel then ends the run; --timeout and --sanitize need the "
                   "worker and are refused with it)")
    case_files.add_options(p, default)


def check_isolation(no_isolate: bool, sanitize: Any, timeout: Any) -> None:
    """Refuse ``--sanitize`` and ``--timeout`` with ``--no-isolate``: both need the worker.

    A sanitizer build runs only in a worker (it needs its runtime preloaded), and a time
    limit can only stop a kernel by stopping the process it runs in.

    Example:
        >>> check_isolation(True, "address", None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        opsdk.cli.errors.IsolationArgError: --sanitize address needs ... drop --no-isolate ...
    """
    if not no_isolate:
        return
    if sanitize:
        raise IsolationArgError(
            f"--sanitize {sanitize} needs a worker process (the sanitizer build runs with "
            "its runtime preloaded there), but --no-isolate runs the kernel in this process; "
            "drop --no-isolate, or drop --sanitize")
    if timeout is not None:
        raise IsolationArgError(
            f"--timeout {timeout:g} needs a worker process (only a worker can be stopped "
            "when a kernel runs too long), but --no-isolate runs the kernel in this process; "
            "drop --no-isolate, or drop --timeout")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "test",
        help="run an operator's tests (kernel vs reference, ONNX conformance, opsdk.check)",
        description="Run the tests generated from the operator's spec with pytest. "
        "Arguments after the operator that opsdk does not know go to pytest (e.g. -k, -x).",
    )
    p.add_argument("op", help="operator: MyOp, my_op, domain::MyOp or a folder")
    _add_options(p, None)
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed on to pytest")
    p.set_defaults(func=run)


def _plugin_registered() -> bool:
    eps = metadata.entry_points(group="pytest11")
    return any(ep.value == "opsdk.testing.plugin" for ep in eps)


def _option(args: argparse.Namespace, name: str) -> Any:
    """An option given before the operator or among the arguments after it."""
    own, _ = _late_options(args)
    v = getattr(own, name)
    return v if v is not None else getattr(args, name, None)


def _late_options(args: argparse.Namespace) -> tuple[argparse.Namespace, list[str]]:
    """opsdk's own options among the arguments after the operator, and the rest."""
    late = OneLineParser(prog="opsdk test", add_help=False)
    _add_options(late, None)
    return late.parse_known_args(args.pytest_args or [])


def _listed(args: argparse.Namespace, name: str) -> list[str]:
    """A repeatable option, given before the operator and among the arguments after it."""
    own, _ = _late_options(args)
    return [*(getattr(args, name, None) or []), *(getattr(own, name) or [])]


def _check_projects(spec: Any, projects: list[str]) -> None:
    """Each --cann-project must be a project of the operator under test."""
    from ..ascend import CannArgError, project_op_types

    for folder in projects:
        types = project_op_types(folder)
        if (spec.domain, spec.name) not in types:
            have = ", ".join(f"{d}::{n}" for d, n in types)
            raise CannArgError(f"--cann-project {folder} is the CANN project of {have}, "
                               f"not of {spec.domain}::{spec.name}; pass that operator's project")


def _check_precision(args: argparse.Namespace) -> None:
    """The emulated ATC precision settings, read here (files included) so that a mistake is
    this command's one-line error, not the pytest child's usage error."""
    from ..ascend.precision import PrecisionMode

    mode, keep, mix = (_option(args, k) for k in ("precision_mode", "keep_dtype",
                                                   "modify_mixlist"))
    if not mode:
        if keep or mix:
            raise OpsdkError("--keep-dtype and --modify-mixlist apply to a precision mode; "
                             "add --precision-mode (e.g. allow_mix_precision)")
        return
    PrecisionMode.from_atc(mode, keep, mix)


def pytest_argv(args: argparse.Namespace, target: Path) -> list[str]:
    """The pytest command line for ``args`` (options may follow the operator name)."""
    own, rest = _late_options(args)
    argv = [str(target)]
    no_isolate = bool(own.no_isolate or getattr(args, "no_isolate", None))
    check_isolation(no_isolate, _option(args, "sanitize"), _option(args, "timeout"))
    for k in _OPTIONS:
        v = getattr(own, k) if getattr(own, k) is not None else getattr(args, k, None)
        if k == "timeout" and v is None and not no_isolate:
            v = DEFAULT_TIMEOUT_S  # the plugin's --opsdk-timeout implies a worker
        if v is not None:
            argv.append(f"--opsdk-{k.replace('_', '-')}={v}")
    for k in _LISTS:
        argv += [f"--opsdk-{k.replace('_', '-')}={v}" for v in _listed(args, k)]
    if own.standard_only or getattr(args, "standard_only", None):
        argv.append("--opsdk-standard-only")
    if not no_isolate:
        argv.append("--opsdk-isolate")
    if not _plugin_registered():
        argv[:0] = ["-p", "opsdk.testing.plugin"]
    return argv + list(rest)


def _target(info: Any, tmp: Path) -> Path:
    test_file = info.folder / f"test_{info.spec.snake_name}.py"
    if test_file.is_file():
        return Path(info.folder)
    # An operator without a test file (e.g. from a wheel): generate the standard one.
    gen = tmp / f"test_{info.spec.snake_name}.py"
    gen.write_text(
        "# generated by opsdk test; do not edit\n"
        "from opsdk.testing import op_tests\n\n"
        f"globals().update(op_tests(__file__, folder={str(info.folder)!r}))\n"
    )
    return gen


def run(args: argparse.Namespace) -> int:
    from ..registry import find_operator
    from ..testing import Report
    from .errors import OutputPathError

    report = _option(args, "report")
    if report:
        try:
            Report.check_path(report)
        except ValueError as e:
            raise OutputPathError(str(e)) from None
    case_files.refuse_others(lambda n: _option(args, n), (*_OPTIONS, *_LISTS))
    done = case_files.run(lambda n: _option(args, n), args.op, _late_options(args)[1])
    if done is not None:
        return done
    info = find_operator(args.op)
    _check_projects(info.spec, _listed(args, "cann_project"))
    _check_precision(args)
    with tempfile.TemporaryDirectory(prefix="opsdk-test-") as tmp:
        argv = pytest_argv(args, _target(info, Path(tmp)))
        print("pytest " + shlex.join(argv), flush=True)
        # A fresh interpreter: pytest must import (and assert-rewrite) opsdk itself. It dies
        # with us (kill -9 included), and its workers with it (their lifelines).
        return subprocess.call([sys.executable, "-m", "pytest", *argv], **dies_with_us())
