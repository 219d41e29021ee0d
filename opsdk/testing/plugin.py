"""The opsdk pytest plugin (registered through the ``pytest11`` entry point ``opsdk``).

Options:

* ``--opsdk-device cpu|onnxruntime|triton|npu|ascendc-model|ascendc-cpu|ascendc-sim|aarch64``:
  where the kernel runs (default cpu); a device this host lacks is skipped with its reason,
  never emulated. ``ascendc-model`` runs the AI Core kernel on opsdk's CPU model of Ascend C;
  ``aarch64`` runs kernel.cpp cross-built for the AI CPU's ISA under qemu, one process per case.
* ``--opsdk-seed N``: base seed of every generated input (default 0).
* ``--opsdk-standard NAME``: judge every output with this precision standard instead of
  the spec's or the dtype's default (``NAME:PARAM`` for the parametrised ones, e.g.
  ``ulp:4``, ``cross-device:L2``).
* ``--opsdk-reference-device DEVICE``: the trusted device a ``cross-device`` standard
  divides by (default cpu): it runs the same kernel inputs.
* ``--opsdk-standard-only``: judge by the standard alone, without opsdk's stricter
  ``nonfinite`` and ``finite-share`` checks (the verdict the CANN tool would give).
* ``--opsdk-precision-mode MODE``: emulate ATC's ``--precision_mode`` or
  ``--precision_mode_v2`` on the float cases; ``--opsdk-keep-dtype FILE`` and
  ``--opsdk-modify-mixlist FILE`` take ATC's ``--keep_dtype`` / ``--modify_mixlist`` files.
* ``--opsdk-report out.html|out.json``: write a report of every case run.
* ``--opsdk-triton-url``, ``--opsdk-triton-model``: the server and model for ``triton``.
* ``--opsdk-cann-op-type [OP=]TYPE``, ``--opsdk-cann-project DIR``: the CANN operator type
  ``npu`` runs an operator as, given or read from the manifest of an ``opsdk cann`` project
  (for operators generated with ``--op-type``; :mod:`opsdk.testing._cann_type`).
* ``--opsdk-isolate``: run kernels in a worker process (cpu and the devices that run kernels
  on this host: ascendc-model, onnxruntime, ascendc-cpu, ascendc-sim, aarch64), so a crash,
  an abort or a write past an output fails its case and the run goes on (``opsdk test``
  turns this on).
* ``--opsdk-timeout SECONDS``: a case running longer fails and its worker is stopped
  (implies ``--opsdk-isolate``).
* ``--opsdk-sanitize address,undefined``: build the kernel with these sanitizers (its own
  cache entry) and run it isolated; an out-of-bounds access fails with the kernel's
  ``file:line``.

The tests themselves come from :func:`opsdk.testing.op_tests` in each operator's
``test_<op>.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..ascend.precision import MODE_CHOICES
from ._devices import DEVICES
from ._optests import COLLECTED_OPS, COVERAGE_NOTES, session_of
from ._report import Report
from ._standards import standard_name


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("opsdk", "opsdk operator validation")
    g.addoption("--opsdk-device", dest="opsdk_device", default="cpu", choices=DEVICES,
                help="device the operator kernels run on (default: cpu)")
    g.addoption("--opsdk-seed", dest="opsdk_seed", type=int, default=0,
                help="base seed of the generated inputs (default: 0)")
    g.addoption("--opsdk-standard", dest="opsdk_standard", default=None, type=standard_name,
                help="precision standard for every output (a name of "
                "opsdk.testing.STANDARDS, or NAME:PARAM such as ulp:4)")
    g.addoption("--opsdk-reference-device", dest="opsdk_reference_device", default=None,
                choices=DEVICES, help="trusted device of the cross-device standard "
                "(default: cpu)")
    g.addoption("--opsdk-standard-only", dest="opsdk_standard_only", action="store_true",
                help="judge by the standard alone (no nonfinite / finite-share checks)")
    g.addoption("--opsdk-precision-mode", dest="opsdk_precision_mode", default=None,
                choices=MODE_CHOICES,
                help="emulate ATC's --precision_mode or --precision_mode_v2 on float cases")
    g.addoption("--opsdk-keep-dtype", dest="opsdk_keep_dtype", default=None, metavar="FILE",
                help="ATC --keep_dtype file (OpType::Name lines) for the emulation")
    g.addoption("--opsdk-modify-mixlist", dest="opsdk_modify_mixlist", default=None,
                metavar="FILE", help="ATC --modify_mixlist JSON file for the emulation")
    g.addoption("--opsdk-report", dest="opsdk_report", default=None, metavar="PATH",
                help="write a report of every case: PATH ending in .html or .json")
    g.addoption("--opsdk-triton-url", dest="opsdk_triton_url", default=None,
                help="Triton server for --opsdk-device=triton (or $OPSDK_TRITON_URL)")
    g.addoption("--opsdk-isolate", dest="opsdk_isolate", action="store_true", default=False,
                help="run kernels in a worker process (cpu and the host devices): a crash "
                "fails only its case")
    g.addoption("--opsdk-timeout", dest="opsdk_timeout", type=float, default=None,
                metavar="SECONDS", help="per-case time limit of isolated kernels")
    g.addoption("--opsdk-sanitize", dest="opsdk_sanitize", default=None,
                metavar="address,undefined", help="run a sanitizer build of the kernel")
    g.addoption("--opsdk-triton-model", dest="opsdk_triton_model", default=None,
                help="served model name (default: the operator's snake_name)")
    g.addoption("--opsdk-cann-op-type", dest="opsdk_cann_op_type", action="append",
                default=None, metavar="[OP=]TYPE",
                help="npu: run the operator (OP as in spec.py; every one without OP=) as this "
                "CANN operator type, as `opsdk cann --op-type` named it (repeatable)")
    g.addoption("--opsdk-cann-project", dest="opsdk_cann_project", action="append",
                default=None, metavar="DIR",
                help="npu: take the CANN operator type from this `opsdk cann` project's "
                "manifest, for its operator (repeatable)")


def pytest_configure(config: pytest.Config) -> None:
    """Reject an unusable precision setting (e.g. a missing list file) or CANN type option
    before collection."""
    sess = session_of(config)
    _keep_last_words()
    sess.precision_mode  # noqa: B018 - raises pytest.UsageError
    sess.cann_types  # noqa: B018 - raises pytest.UsageError
    if sess.options.get("report"):
        if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
            raise pytest.UsageError(
                f"--opsdk-report {sess.options['report']}: the report collects every case in "
                "one process; run without -n (pytest-xdist) to write it")
        try:
            Report.check_path(sess.options["report"])
        except ValueError as e:  # before the suite runs, not after
            raise pytest.UsageError(str(e)) from None


def _keep_last_words() -> None:
    """A kernel that ends this process in-process (``--no-isolate``) names its operator on
    a copy of stderr made now, as pytest's faulthandler does: fd 2 is captured into a file
    while a test runs, and that file is lost with the process."""
    import os
    import sys

    from ..runtime.cpu import set_message_fd

    try:
        set_message_fd(os.dup(sys.__stderr__.fileno() if sys.__stderr__ else 2))
    except (OSError, ValueError):  # pragma: no cover - no usable stderr
        pass


def pytest_collection_finish(session: pytest.Session) -> None:
    """Refuse ``--opsdk-cann-op-type OP=TYPE`` whose OP is none of the collected operators
    (a misspelled name would otherwise run that operator under its spec name)."""
    given = session_of(session.config).cann_types.given
    unknown = sorted(op for op in given if op is not None and op not in COLLECTED_OPS)
    if unknown and COLLECTED_OPS:
        pytest.exit(
            f"--opsdk-cann-op-type names {', '.join(unknown)}, which no collected operator is "
            f"(collected: {', '.join(sorted(COLLECTED_OPS))}); write OP as spec.py names it",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


def pytest_report_header(config: pytest.Config) -> str:
    o = session_of(config).options
    extra = "".join(
        f", {k}={o[k]}"
        for k in ("standard", "reference_device", "standard_only", "precision_mode",
                  "keep_dtype", "modify_mixlist", "report", "isolate", "timeout", "sanitize",
                  "cann_op_type", "cann_project")
        if o.get(k)
    )
    return f"opsdk: device={o['device']}, seed={o['seed']}{extra}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    sess = session_of(session.config)
    path = sess.options.get("report")
    if path and sess.report.cases:
        sess.report.write(path)
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its counts go to the controller
        workeroutput[_COUNTS] = _counts(sess.report)


#: pytest-xdist's worker output key for a worker's case counts
_COUNTS = "opsdk_case_counts"
_SUMMED = pytest.StashKey[list[int]]()


def _counts(rep: Report) -> list[int]:
    return [len(rep.cases), len(rep.failed), len(rep.expected_failures)]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller: add up the cases each worker compared."""
    counts = getattr(node, "workeroutput", {}).get(_COUNTS)
    if counts:
        summed = node.config.stash.setdefault(_SUMMED, [0, 0, 0])
        summed[:] = [a + b for a, b in zip(summed, counts)]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    sess = session_of(config)
    path = sess.options.get("report")
    n, failed, expected = config.stash.get(_SUMMED, None) or _counts(sess.report)
    for note in (n for notes in COVERAGE_NOTES.values() for n in notes):
        terminalreporter.write_line(f"opsdk: note: {note}")
    if n:
        terminalreporter.write_line(
            f"opsdk: {n} cases compared, {failed} failed"
            + (f", {expected} failed as expected (not followed)" if expected else "")
            + (f"; report written to {path}" if path else "")
        )
