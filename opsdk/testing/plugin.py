"""The opsdk pytest plugin (registered through the ``pytest11`` entry point ``opsdk``).

Options:

* ``--opsdk-device cpu|onnxruntime|triton|npu|ascendc-model|ascendc-cpu|ascendc-sim``: where
  the kernel runs (default cpu); a device this host lacks is skipped with its reason, never
  emulated. ``ascendc-model`` runs the AI Core kernel on opsdk's CPU model of Ascend C.
* ``--opsdk-seed N``: base seed of every generated input (default 0).
* ``--opsdk-standard NAME``: judge every output with this precision standard instead of
  the spec's or the dtype's default.
* ``--opsdk-precision-mode MODE``: emulate ATC's precision mode on float32 cases.
* ``--opsdk-report out.html|out.json``: write a report of every case run.
* ``--opsdk-triton-url``, ``--opsdk-triton-model``: the server and model for ``triton``.

The tests themselves come from :func:`opsdk.testing.op_tests` in each operator's
``test_<op>.py``.
"""

from __future__ import annotations

import pytest

from ._devices import DEVICES
from ._optests import session_of
from ._precision import PRECISION_MODES
from ._standards import STANDARDS


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("opsdk", "opsdk operator validation")
    g.addoption("--opsdk-device", dest="opsdk_device", default="cpu", choices=DEVICES,
                help="device the operator kernels run on (default: cpu)")
    g.addoption("--opsdk-seed", dest="opsdk_seed", type=int, default=0,
                help="base seed of the generated inputs (default: 0)")
    g.addoption("--opsdk-standard", dest="opsdk_standard", default=None,
                choices=sorted(STANDARDS), help="precision standard for every output")
    g.addoption("--opsdk-precision-mode", dest="opsdk_precision_mode", default=None,
                choices=PRECISION_MODES, help="emulate ATC's precision_mode on float32 cases")
    g.addoption("--opsdk-report", dest="opsdk_report", default=None, metavar="PATH",
                help="write a report of every case: PATH ending in .html or .json")
    g.addoption("--opsdk-triton-url", dest="opsdk_triton_url", default=None,
                help="Triton server for --opsdk-device=triton (or $OPSDK_TRITON_URL)")
    g.addoption("--opsdk-triton-model", dest="opsdk_triton_model", default=None,
                help="served model name (default: the operator's snake_name)")


def pytest_report_header(config: pytest.Config) -> str:
    o = session_of(config).options
    extra = "".join(
        f", {k}={o[k]}" for k in ("standard", "precision_mode", "report") if o.get(k)
    )
    return f"opsdk: device={o['device']}, seed={o['seed']}{extra}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    sess = session_of(session.config)
    path = sess.options.get("report")
    if path and sess.report.cases:
        sess.report.write(path)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    sess = session_of(terminalreporter.config)
    path = sess.options.get("report")
    rep = sess.report
    if rep.cases:
        terminalreporter.write_line(
            f"opsdk: {len(rep.cases)} cases compared, {len(rep.failed)} failed"
            + (f"; report written to {path}" if path else "")
        )
