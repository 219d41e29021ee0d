"""Test functions generated from an operator's spec, for its ``test_<op>.py``.

An operator's test file is two lines::

    from opsdk.testing import op_tests
    globals().update(op_tests(__file__))

:func:`op_tests` reads ``spec.py`` beside the file and returns pytest test functions
parametrized over the spec's matrix (dtypes x shapes x attributes, plus edge values,
distributions and non-contiguous layouts), ONNX's own node tests when ``spec.onnx_op``
is set, ONNX Runtime's own operator test vectors (:mod:`._ort_vectors`) where they are on
the machine, the C++ shape function CANN's InferShape runs (``shape.h``, or broadcasting)
against spec.py on every case and against the kernel's outputs (:mod:`._shape_cpp`), and
``opsdk.check``. The options ``--opsdk-device``, ``--opsdk-seed``,
``--opsdk-standard``, ``--opsdk-precision-mode`` and ``--opsdk-report`` come from the
pytest plugin (:mod:`opsdk.testing.plugin`); without it the defaults apply.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ..ascend.precision import PrecisionMode
from ..errors import DeviceUnavailable, SpecError
from ..spec import OpSpec
from ._cann_type import CannTypes, cann_types
from ._cases import OpCase, build_cases, coverage_notes
from ._check import check
from ._conformance import OnnxNodeCase, applicability, onnx_node_cases, run_onnx_case
from ._devices import open_device
from ._ort_vectors import VectorCase, find_vectors, ort_vector_cases, run_vector_case
from ._report import Report
from ._runner import CaseResult, run_case
from ._shape_cpp import ShapeCheck, shape_cases

__all__ = ["op_tests", "session_of", "TestSession"]

#: Names (spec.py) of the operators whose tests this process collected.
COLLECTED_OPS: set[str] = set()
#: What the generator could not do for each collected operator, and why
#: (:func:`opsdk.testing._cases.coverage_notes`); the plugin prints it after the run.
COVERAGE_NOTES: dict[str, list[str]] = {}

OPTIONS = (
    "device", "seed", "standard", "reference_device", "standard_only", "precision_mode",
    "keep_dtype", "modify_mixlist", "report", "triton_url", "triton_model", "isolate",
    "timeout", "sanitize", "cann_op_type", "cann_project",
)
_DEFAULTS: dict[str, Any] = {"device": "cpu", "seed": 0}


class TestSession:
    """Per-pytest-session state: options, opened devices and the collected report."""

    __test__ = False  # not a test class

    def __init__(self, config: pytest.Config) -> None:
        self.options: dict[str, Any] = {
            k: config.getoption(f"opsdk_{k}", default=_DEFAULTS.get(k)) for k in OPTIONS
        }
        self.options["seed"] = int(self.options["seed"] or 0)
        self.report = Report()
        self._devices: dict[tuple[str, str], Any] = {}
        self._shapes: dict[str, ShapeCheck] = {}

    @property
    def device(self) -> str:
        return str(self.options["device"])

    @property
    def precision_mode(self) -> PrecisionMode | None:
        """The ATC precision setting to emulate (mode, --keep_dtype, --modify_mixlist)."""
        o = self.options
        if not o.get("precision_mode"):
            if o.get("keep_dtype") or o.get("modify_mixlist"):
                raise pytest.UsageError(
                    "--opsdk-keep-dtype and --opsdk-modify-mixlist apply to a precision mode; "
                    "add --opsdk-precision-mode (e.g. allow_mix_precision)")
            return None
        try:
            return PrecisionMode.from_atc(o["precision_mode"], o.get("keep_dtype"),
                                          o.get("modify_mixlist"))
        except SpecError as e:
            raise pytest.UsageError(str(e)) from None

    @property
    def cann_types(self) -> CannTypes:
        """The CANN operator types ``npu`` runs operators as (``--opsdk-cann-*``)."""
        o = self.options
        try:
            types = cann_types(o.get("cann_op_type") or [], o.get("cann_project") or [])
        except SpecError as e:
            raise pytest.UsageError(str(e)) from None
        if types and self.device != "npu":
            raise pytest.UsageError(
                "--opsdk-cann-op-type and --opsdk-cann-project name the CANN operator the npu "
                f"device runs; add --opsdk-device=npu (the {self.device} device runs kernel.cpp)")
        return types

    @property
    def keep_arrays(self) -> bool:
        rep = self.options.get("report")
        return bool(rep) and str(rep).lower().endswith((".html", ".htm"))

    def executor(self, folder: Path, spec: OpSpec) -> Any:
        """The executor on the session's device; pytest.skip with the reason if absent."""
        return self._opened(self.device, folder, spec, "")

    def reference(self, folder: Path, spec: OpSpec) -> Any:
        """The trusted device of ``cross-device`` (``--opsdk-reference-device``, default
        cpu), or None when no standard of the operator reads one; pytest.skip with the
        reason when that device is absent."""
        from ._standards import reads_reference

        if not reads_reference(spec.standard, self.options.get("standard")):
            return None
        device = str(self.options.get("reference_device") or "cpu")
        if device == self.device:  # the same executor: every ratio is 1 by construction
            return self.executor(folder, spec)
        return self._opened(device, folder, spec,
                            f"reference device {device} (--opsdk-reference-device): ")

    def _opened(self, device: str, folder: Path, spec: OpSpec, why: str) -> Any:
        """``device``'s executor of the operator in ``folder``, opened once per session."""
        key = (device, str(folder))
        if key not in self._devices:
            try:
                self._devices[key] = open_device(device, folder, spec, self.options)
            except DeviceUnavailable as e:
                self._devices[key] = e
        ex = self._devices[key]
        if isinstance(ex, DeviceUnavailable):
            pytest.skip(f"{why}{ex}")
        return ex

    def shape_check(self, folder: Path, spec: OpSpec, cases: list[OpCase]) -> ShapeCheck:
        """The operator's C++ shape function run on every generated case, once a session."""
        key = str(folder)
        if key not in self._shapes:
            self._shapes[key] = ShapeCheck.of(folder, spec, shape_cases(spec, cases))
        return self._shapes[key]

    def repro(self, node: pytest.Item) -> str:
        """A one-line command that re-runs exactly ``node`` with this session's options."""
        parts = ["pytest", f"{node.path}::{node.name}", f"--opsdk-seed={self.options['seed']}"]
        for k in ("device", "standard", "reference_device", "precision_mode", "keep_dtype",
                  "modify_mixlist", "timeout", "sanitize"):
            v = self.options.get(k)
            if v and (k, v) != ("device", "cpu"):
                parts.append(f"--opsdk-{k.replace('_', '-')}={v}")
        for k in ("cann_op_type", "cann_project"):
            parts += [f"--opsdk-{k.replace('_', '-')}={v}" for v in self.options.get(k) or []]
        for flag in ("standard_only", "isolate"):
            if self.options.get(flag):
                parts.append(f"--opsdk-{flag.replace('_', '-')}")
        return " ".join(shlex.quote(p) for p in parts)

    def record(self, result: CaseResult) -> None:
        self.report.add(result)
        if not result.passed:
            pytest.fail(result.summary(), pytrace=False)


_KEY = pytest.StashKey[TestSession]()


def session_of(config: pytest.Config) -> TestSession:
    """The :class:`TestSession` of a pytest run (created on first use)."""
    sess = config.stash.get(_KEY, None)
    if sess is None:
        sess = TestSession(config)
        config.stash[_KEY] = sess
    return sess


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    return fn


def _numerics(folder: Path, spec: OpSpec) -> Callable[..., Any]:
    try:
        cases = build_cases(spec)
    except SpecError as e:
        msg = str(e)

        def test_cases() -> None:
            pytest.fail(msg, pytrace=False)

        return test_cases

    @pytest.mark.parametrize("opsdk_case", cases, ids=[c.id for c in cases])
    def test_numerics(opsdk_case: OpCase, request: pytest.FixtureRequest) -> None:
        sess = session_of(request.config)
        ex = sess.executor(folder, spec)
        try:
            result = run_case(
                spec, ex, opsdk_case, seed=sess.options["seed"], device=sess.device,
                standard=sess.options["standard"], precision_mode=sess.precision_mode,
                repro=lambda _c: sess.repro(request.node), keep_arrays=sess.keep_arrays,
                strict=not sess.options["standard_only"],
                reference=sess.reference(folder, spec),
            )
        except DeviceUnavailable as e:
            pytest.skip(str(e))
        if len(result.outputs) == len(spec.outputs):
            shapes = sess.shape_check(folder, spec, cases)
            result.problems += shapes.kernel_report(opsdk_case.id, result.outputs,
                                                    check_dtypes=sess.precision_mode is None)
        sess.record(result)

    return test_numerics


def _shape_function(folder: Path, spec: OpSpec) -> Callable[..., Any]:
    """The test of the C++ shape function (shape.h) against spec.py on every case."""
    try:
        cases = build_cases(spec)
    except SpecError:
        cases = []  # test_cases names the problem

    def test_shape_function(request: pytest.FixtureRequest) -> None:
        check = session_of(request.config).shape_check(folder, spec, cases)
        if check.error:
            pytest.fail(check.error, pytrace=False)
        if check.fn is None:
            pytest.skip(check.reason)
        problems = check.spec_report()
        if problems:
            head = (f"{spec.name}: the C++ shape function CANN's InferShape runs disagrees "
                    f"with spec.py on {len(problems)} output(s) of {len(cases)} cases")
            pytest.fail("\n".join([head, *problems[:20]]), pytrace=False)

    return test_shape_function


def _conformance(folder: Path, spec: OpSpec) -> Callable[..., Any] | None:
    if not spec.onnx_op:
        return None
    cases = onnx_node_cases(spec.onnx_op)
    if not cases:
        op = spec.onnx_op

        def test_no_onnx_cases() -> None:
            pytest.skip(f"ONNX ships no backend node tests for op type {op!r}")

        return test_no_onnx_cases

    @pytest.mark.parametrize("onnx_case", cases, ids=[c.name for c in cases])
    def test_onnx_conformance(onnx_case: OnnxNodeCase, request: pytest.FixtureRequest) -> None:
        why = applicability(spec, onnx_case)
        if why is not None:
            pytest.skip(f"not applicable: {why}")
        sess = session_of(request.config)
        ex = sess.executor(folder, spec)
        try:
            result = run_onnx_case(spec, ex, onnx_case, device=sess.device,
                                   repro=sess.repro(request.node))
        except DeviceUnavailable as e:
            pytest.skip(str(e))
        sess.record(result)

    return test_onnx_conformance


def _ort_vectors(
    folder: Path, spec: OpSpec, not_followed: Mapping[str, str]
) -> Callable[..., Any] | None:
    if not spec.onnx_op:
        return None
    cases = ort_vector_cases(spec.onnx_op)
    if not cases:
        path = find_vectors()
        why = (f"{path} has no cases for {spec.onnx_op}" if path else
               "ONNX Runtime's test vectors (shared/conformance/ort_vectors.json) are not on "
               "this machine; set OPSDK_CONFORMANCE_DIR to their folder")

        def test_no_ort_vectors() -> None:
            pytest.skip(why)

        return test_no_ort_vectors
    unknown = sorted(set(not_followed) - {c.name for c in cases})
    if unknown:
        raise SpecError(f"{spec.name}: not_followed names unknown ONNX Runtime cases {unknown}")
    params = [
        pytest.param(c, id=c.name, marks=[pytest.mark.xfail(reason=not_followed[c.name],
                                                            strict=True)])
        if c.name in not_followed else pytest.param(c, id=c.name)
        for c in cases
    ]

    @pytest.mark.parametrize("ort_case", params)
    def test_ort_vectors(ort_case: VectorCase, request: pytest.FixtureRequest) -> None:
        sess = session_of(request.config)
        ex = sess.executor(folder, spec)
        try:
            result = run_vector_case(spec, ex, ort_case, device=sess.device,
                                     repro=sess.repro(request.node))
        except DeviceUnavailable as e:
            pytest.skip(str(e))
        result.expected_failure = not_followed.get(ort_case.name, "")
        sess.record(result)

    return test_ort_vectors


def _check(folder: Path, spec: OpSpec) -> Callable[..., Any]:
    def test_check(request: pytest.FixtureRequest) -> None:
        sess = session_of(request.config)
        ex = sess.executor(folder, spec)
        try:
            check(ex, seed=sess.options["seed"], standard=sess.options["standard"],
                  reference=sess.reference(folder, spec))
        except DeviceUnavailable as e:
            pytest.skip(str(e))

    return test_check


def op_tests(
    test_file: str | Path,
    *,
    folder: str | Path | None = None,
    not_followed: Mapping[str, str] | None = None,
) -> dict[str, Callable[..., Any]]:
    """The test functions of the operator whose folder holds ``test_file`` (or ``folder``).

    Returns ``{"test_<op>": ..., "test_<op>_onnx_conformance": ...,
    "test_<op>_ort_vectors": ..., "test_<op>_shape_function": ...,
    "test_<op>_check": ...}``; put them in the test module's
    globals so pytest collects them. ``not_followed`` maps ONNX Runtime vector names the
    operator deliberately does not follow to the reason (they run as strict xfails).

    Example:
        >>> from opsdk.testing import op_tests
        >>> globals().update(op_tests(__file__))  # doctest: +SKIP
    """
    from ..registry import load_spec

    folder = Path(folder).resolve() if folder is not None else Path(test_file).resolve().parent
    spec = load_spec(folder)
    COLLECTED_OPS.add(spec.name)
    COVERAGE_NOTES[spec.name] = coverage_notes(spec)
    snake = spec.snake_name
    tests: dict[str, Callable[..., Any]] = {f"test_{snake}": _numerics(folder, spec)}
    conf = _conformance(folder, spec)
    if conf is not None:
        tests[f"test_{snake}_onnx_conformance"] = conf
    vectors = _ort_vectors(folder, spec, not_followed or {})
    if vectors is not None:
        tests[f"test_{snake}_ort_vectors"] = vectors
    tests[f"test_{snake}_shape_function"] = _shape_function(folder, spec)
    tests[f"test_{snake}_check"] = _check(folder, spec)
    return {name: _named(fn, name) for name, fn in tests.items()}
