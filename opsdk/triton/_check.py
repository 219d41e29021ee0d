"""`opsdk triton check REPO/NAME`: what an npu_ge model folder meets before a host loads it.

Five checks, each what the backend or GE does with the folder: the folder holds one model
file; config.pbtxt agrees with it (names, data types, dims, max_batch_size); GE's ONNX
parser rules of the target CANN accept it, with the plugin keys `opsdk cann` registers;
ONNX Runtime 1.23.2 with no custom ops opens and runs it, and its outputs (the fallback
functions) match opsdk's graph executor (the operators' own kernels); the output dims
npu_ge computes from their symbolic names are the ones that run gives.

Whatever opens the model in ONNX Runtime or runs the operators' kernels runs in one child
process (``python -m opsdk.triton._check_child``), which runs ONNX Runtime 1.23.2 in its own
child: a crash in either is a finding naming the model, the ONNX Runtime version, the
signal and, where :mod:`._crash` isolates it, the node. When a change of that node's
outputs alone avoids the crash, the rest of the check judges the changed copy and a note
says so.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..ascend import default_origin_op_type, project_plugin_keys
from ..ascend.atc.rules import model_problems
from ..ascend.versions import CannVersion, parse_cann_version, resolve_cann
from ..onnx import iter_all_nodes, probe_feeds
from ..runtime import dies_with_us
from . import _npu_ge as ge
from ._ascend_dims import check_output_names, runnable_sizes
from ._ascend_model import custom_specs
from ._config_check import config_problems, parse_config
from ._errors import TritonConfigError
from ._onnx_io import GraphIO, read_graph_io
from ._ort_check import OrtCrash, run_like_npu_ge
from ._repository import recorded_cann
from ._target_ascend import MODEL_FILE, check_folder

__all__ = ["NpuGeCheck", "check_npu_ge_folder"]

_TOLERANCE = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-5}


@dataclass
class NpuGeCheck:
    """The outcome: ``problems`` is empty when every check passed."""

    folder: str
    cann: str
    problems: list[str] = field(default_factory=list)
    max_abs_error: dict[str, float] = field(default_factory=dict)
    onnxruntime: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_npu_ge_folder(
    folder: str | Path,
    cann: str = "auto",
    dims: Mapping[str, int] | None = None,
    python: str | Path | None = None,
    seed: int = 0,
    op_projects: tuple[str, ...] = (),
    values: Mapping[str, float] | None = None,
) -> NpuGeCheck:
    """Check one model folder written by ``opsdk triton build --target ascend``.

    ``cann``: the release whose GE parser rules apply; ``auto`` reads the one the build
    recorded in the folder (not worked out again, so a check on another host judges the
    file by the rules it was built for). ``dims`` sizes the symbolic input dims for the test
    run (default: the first of the default probe sizings of the dim check that ONNX Runtime
    runs); every variable output dim's name must evaluate, as npu_ge evaluates it, to the
    size ONNX Runtime computes;
    ``op_projects``: ``opsdk cann`` projects whose plugin keys apply (default: the specs');
    ``values``: ``{input: value}`` for value inputs (default: the constant the graph
    compares the input with, as the build probes it, else random).

    Raises:
        DeviceUnavailable: no ONNX Runtime 1.23.2 venv (``opsdk.triton.ensure_ort_env``).

    Example:
        >>> report = check_npu_ge_folder("repo/net")  # doctest: +SKIP
        >>> report.ok, report.onnxruntime
        (True, '1.23.2')
    """
    folder = Path(folder)
    version = _release(folder, cann)
    report = NpuGeCheck(str(folder), str(version))
    config = folder / "config.pbtxt"
    text = config.read_text(errors="replace") if config.is_file() else ""  # may be binary
    if f'backend: "{ge.BACKEND}"' not in text:
        raise TritonConfigError(
            f"{folder} is not an npu_ge model folder (no config.pbtxt with backend "
            f'"{ge.BACKEND}"); pass REPO/NAME as written by opsdk triton build --target ascend'
        )
    try:
        check_folder(folder)
    except TritonConfigError as e:
        report.problems.append(str(e))
    path = folder / MODEL_FILE
    if not path.is_file():
        report.problems.append(f"{path} is missing; rebuild the folder with opsdk triton build")
        return report
    try:
        model = onnx.load(str(path))
    except Exception as e:  # a truncated or corrupt file: DecodeError and friends
        report.problems.append(f"{path} is not a readable ONNX model ({type(e).__name__}: "
                               f"{e}); rebuild the folder with opsdk triton build")
        return report
    _check_run_names(path, model, dims or {}, values or {})
    try:
        report.problems += _config_problems(folder, parse_config(config), read_graph_io(model))
    except TritonConfigError as e:
        report.problems.append(str(e))
    registered = project_plugin_keys(op_projects)
    specs = custom_specs(model, folder.name)
    keys = {s.name: registered.get(s.name) or [default_origin_op_type(s)] for s in specs}
    report.problems += [f"GE parser: {p}" for p in model_problems(model, version, keys, specs)]
    _judge_in_child(report, path, dims, values, seed, python, batched=not re.search(
        r"^max_batch_size: 0$", config.read_text(), re.M))
    return report


def _check_run_names(path: Path, model: onnx.ModelProto, dims: Mapping[str, int],
                     values: Mapping[str, float]) -> None:
    """Refuse a ``--dim`` naming no symbolic input dim of the model and a ``--probe-values``
    naming no input: either would be ignored, and the model run on other inputs."""
    inits = {t.name for t in model.graph.initializer}
    inputs = [v for v in model.graph.input if v.name not in inits]
    params = sorted({d.dim_param for v in inputs for d in v.type.tensor_type.shape.dim
                     if d.dim_param})
    for name in dims:
        if name not in params:
            raise TritonConfigError(
                f"{path}: --dim {name}={dims[name]} names no symbolic input dim of the model; "
                f"its dim names are {', '.join(params) or 'none (every input dim is fixed)'}")
    for name in values:
        if name not in {v.name for v in inputs}:
            raise TritonConfigError(
                f"{path}: --probe-values {name}={values[name]} names no input of the model; "
                f"its inputs are {', '.join(v.name for v in inputs) or 'none'}")


def _release(folder: Path, cann: str) -> CannVersion:
    """``cann``, or for ``auto`` the release the build of ``folder`` recorded (a folder
    written before builds recorded it: the installed toolkit's, else the default)."""
    recorded = recorded_cann(folder) if cann == "auto" else None
    return parse_cann_version(recorded) if recorded else resolve_cann(cann).version


def _config_problems(folder: Path, config: Any, io: GraphIO) -> list[str]:
    """The config against the model as a request feeds it: an AIPP input (GE's
    ``ge.insertOpFile``) takes the image AIPP reads, uint8 at the declaration's source size."""
    from ._aipp_fold import folder_aipp, served_io

    params = {k: v.string_value for k, v in config.parameters.items()}
    aipp, problems = folder_aipp(folder, params, io)
    return problems + config_problems(config, served_io(io, aipp))


def _judge_in_child(report: NpuGeCheck, path: Path, dims: Mapping[str, int] | None,
                    values: Mapping[str, float] | None, seed: int,
                    python: str | Path | None, batched: bool) -> None:
    """Run :func:`_judge` in a child process; a crash there is a finding."""
    with tempfile.TemporaryDirectory(prefix="opsdk-check-") as tmp:
        result, feeds_file = Path(tmp) / "result.json", Path(tmp) / "feeds.npz"
        job = {"path": str(path), "dims": dict(dims) if dims else None,
               "values": dict(values) if values else None, "seed": seed,
               "python": str(python) if python else None, "batched": batched,
               "result": str(result), "feeds": str(feeds_file)}
        (Path(tmp) / "job.json").write_text(json.dumps(job))
        code, said = run_check_child("opsdk.triton._check_child", str(Path(tmp) / "job.json"))
        sys.stderr.write(said)
        if code == 0 and result.is_file():
            _take(report, json.loads(result.read_text()))
            return
        feeds = dict(np.load(feeds_file)) if feeds_file.is_file() else None
    report.problems.append(_child_crash(path, code, said, feeds))


def run_check_child(module: str, job_file: str) -> tuple[int, str]:
    """Run ``python -m MODULE JOB`` (:func:`judge_job` in ``opsdk.triton._check_child``):
    its exit code (negative: the signal) and output. A fresh interpreter, not a fork:
    numpy's BLAS threads are running by then, and forking a threaded process can deadlock
    the child."""
    here = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (here, os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.run([sys.executable, "-m", module, job_file],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env, **dies_with_us())
    return proc.returncode, proc.stdout.decode(errors="replace")


def _take(report: NpuGeCheck, result: Mapping[str, Any]) -> None:
    if "error" in result:
        from .. import errors

        name, message = result["error"]
        cls = getattr(errors, name, None)
        raise (cls if isinstance(cls, type) and issubclass(cls, Exception)
               else TritonConfigError)(message)
    report.problems += result["problems"]
    report.notes += result["notes"]
    report.max_abs_error.update(result["max_abs_error"])
    report.onnxruntime = result["onnxruntime"]


def child_died(path: Path, code: int, said: str, stage: str = "") -> str:
    """The finding of a check child that died (``stage``: what it was doing, if known):
    the kernel that did it, or the exit and a traceback's last line; "" ends a crash
    without either (the caller may isolate the node)."""
    from importlib.metadata import version

    from ..runtime import kernel_last_words, signal_name

    how = (f"crashed with {signal_name(-code)} (signal {-code})" if code < 0
           else f"ended with exit status {code}")
    head = (f"the check's own run of {path} (opsdk's kernels, ONNX Runtime "
            f"{version('onnxruntime')}) {how}" + (f" {stage}" if stage else ""))
    words = kernel_last_words(said)
    if words is not None:
        op, what = words
        return (f"{head}: the kernel of {op} {what}; run the operator's tests (opsdk test "
                f"{op}) to find the input that does it")
    if code >= 0:  # an exit, not a crash: a traceback's last line says why, if it left one
        lines = [ln for ln in said.strip().splitlines() if ln.strip()]
        traced = "Traceback (most recent call last):" in said and lines
        return head + (f": {lines[-1][:300]}" if traced else
                       " before it wrote its result (an exit from code outside opsdk?)")
    return head


def _child_crash(path: Path, code: int, said: str, feeds: Mapping[str, np.ndarray] | None,
                 ) -> str:
    """The finding of a check child that died: the kernel that did it, else the node."""
    from ..runtime import kernel_last_words

    head = child_died(path, code, said)
    if code >= 0 or kernel_last_words(said) is not None:
        return head
    if feeds is None:
        return f"{head} before it had its probe inputs; run it alone to see where"
    from ._crash import isolate_crash

    found = isolate_crash(onnx.load(str(path)), feeds, sys.executable)
    return head + (f"; the crash is node {found.node}: {found.why}" if found else "")


def _judge(path: Path, dims: Mapping[str, int] | None, values: Mapping[str, float] | None,
           seed: int, python: str | None, batched: bool, feeds_file: Path) -> dict[str, Any]:
    """In the child: the probe inputs, ONNX Runtime 1.23.2's run, the output dims, and the
    comparison with opsdk's kernels."""
    model = onnx.load(str(path))
    report = NpuGeCheck(str(path.parent.parent), "")
    plain = _plain(model)
    feeds = probe_feeds(plain, dims or runnable_sizes(plain, values), values, random=True,
                        seed=seed)
    np.savez(feeds_file, **dict(feeds))  # type: ignore[arg-type]  # for the parent's bisection
    try:
        run = run_like_npu_ge(path, feeds, python)
    except OrtCrash as e:
        fixed = _work_around(report, path, model, feeds, python, e)
        if fixed is None:
            return _result(report)
        model = fixed
        with tempfile.TemporaryDirectory(prefix="opsdk-check-") as tmp:
            onnx.save(model, str(Path(tmp) / "model.onnx"))
            run = run_like_npu_ge(Path(tmp) / "model.onnx", feeds, python)
    except TritonConfigError as e:
        report.problems.append(str(e))
        return _result(report)
    report.onnxruntime = run.version
    shapes = {**{k: list(v.shape) for k, v in feeds.items()},
              **{k: list(np.shape(v)) for k, v in run.results.items()}}
    report.problems += check_output_names([(n, d) for n, _, d in run.inputs],
                                          [(n, d) for n, _, d in run.outputs], shapes, batched)
    _compare(report, run.results, _run_opsdk(model, feeds))
    return _result(report)


def _work_around(report: NpuGeCheck, path: Path, model: onnx.ModelProto,
                 feeds: Mapping[str, np.ndarray], python: str | None,
                 crash: OrtCrash) -> onnx.ModelProto | None:
    """The crash as a problem; the copy to judge on when a change of one node avoids it."""
    from ..runtime import signal_name
    from ._crash import isolate_crash
    from ._ort_check import ort_python

    head = (f"ONNX Runtime {crash.version} (as inside npu_ge) crashed with "
            f"{signal_name(crash.signal)} (signal {crash.signal}) {crash.stage} {path}: "
            "npu_ge would crash loading it too")
    found = isolate_crash(model, feeds, python or ort_python() or sys.executable)
    if found is None:
        report.problems.append(f"{head} ({crash.last_words}); no one node could be blamed")
        return None
    fix = f"; fix: {found.fix}" if found.fix else ""
    report.problems.append(f"{head}; the crash is node {found.node}: {found.why}{fix} "
                           f"(ONNX Runtime's last words: {crash.last_words})")
    if found.fixed is None:
        return None
    rel = path.relative_to(path.parent.parent).as_posix()
    report.notes.append(f"judged a copy of {rel} whose node {found.node} {found.change}: the "
                        f"file itself crashes ONNX Runtime {crash.version}")
    return found.fixed


def judge_job(job_file: str) -> None:
    """The child's work: read the job, judge, write the result (an opsdk error as its
    class name and text)."""
    from ..errors import OpsdkError

    job = json.loads(Path(job_file).read_text())
    try:
        result = _judge(Path(job["path"]), job["dims"], job["values"], job["seed"],
                        job["python"], job["batched"], Path(job["feeds"]))
    except OpsdkError as e:
        result = {"error": [type(e).__name__, str(e)]}
    Path(job["result"]).write_text(json.dumps(result))


def _result(report: NpuGeCheck) -> dict[str, Any]:
    out = asdict(report)
    return {k: out[k] for k in ("problems", "notes", "max_abs_error", "onnxruntime")}


def _plain(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its standard nodes back in the default domain."""
    plain = copy.deepcopy(model)
    for node in iter_all_nodes(plain.graph):
        if node.domain == "ai.onnx":
            node.domain = ""
    kept = [o for o in plain.opset_import if o.domain != "ai.onnx"]
    del plain.opset_import[:]
    plain.opset_import.extend(kept)
    return plain


def _run_opsdk(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The graph in opsdk's executor."""
    from ..onnx import Session

    plain = _plain(model)
    outs = Session(plain).run(None, dict(feeds))
    return {o.name: r for o, r in zip(plain.graph.output, outs, strict=True)}


def _compare(report: NpuGeCheck, got: Mapping[str, Any], want: Mapping[str, Any]) -> None:
    for name, expected in want.items():
        actual = np.asarray(got[name])
        expected = np.asarray(expected)
        if actual.shape != expected.shape:
            report.problems.append(f"output '{name}': ONNX Runtime {ge.ORT_VERSION} gives "
                                   f"shape {actual.shape}, opsdk {expected.shape}")
            continue
        diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
        err = float(np.nanmax(diff)) if diff.size else 0.0
        report.max_abs_error[name] = err
        tol = _TOLERANCE.get(expected.dtype, 0.0) * max(1.0, float(np.nanmax(np.abs(
            expected.astype(np.float64)))) if expected.size else 1.0)
        if err > tol:
            report.problems.append(
                f"output '{name}': the fallback functions (ONNX Runtime {ge.ORT_VERSION}) and "
                f"opsdk's kernels differ by {err:.3g} (tolerance {tol:.3g}); check the "
                "operator's decomposition in spec.py against its reference"
            )

