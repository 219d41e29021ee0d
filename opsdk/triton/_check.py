"""`opsdk triton check REPO/NAME`: what an npu_ge model folder meets before a host loads it.

Five checks, each what the backend or GE does with the folder: the folder holds one model
file; config.pbtxt agrees with it (names, data types, dims, max_batch_size); GE's ONNX
parser rules of the target CANN accept it, with the plugin keys `opsdk cann` registers;
ONNX Runtime 1.23.2 with no custom ops opens and runs it, and its outputs (the fallback
functions) match opsdk's graph executor (the operators' own kernels); the output dims
npu_ge computes from their symbolic names are the ones that run gives.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..ascend._op import default_origin_op_type
from ..ascend.atc._atc import project_plugin_keys
from ..ascend.atc.rules import model_problems
from ..ascend.versions import resolve_cann
from ..onnx._model import iter_all_nodes
from ..onnx._probe import probe_feeds
from . import _npu_ge as ge
from ._ascend_dims import check_output_names, runnable_sizes
from ._ascend_model import custom_specs
from ._config_check import config_problems, parse_config
from ._errors import TritonConfigError
from ._onnx_io import read_graph_io
from ._ort_check import run_like_npu_ge
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

    ``dims`` sizes the symbolic input dims for the test run (default: the first of the
    default probe sizings of the dim check that ONNX Runtime runs); every variable output
    dim's name must evaluate, as npu_ge evaluates it, to the size ONNX Runtime computes;
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
    version = resolve_cann(cann).version
    report = NpuGeCheck(str(folder), str(version))
    config = folder / "config.pbtxt"
    if not config.is_file() or f'backend: "{ge.BACKEND}"' not in config.read_text():
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
    try:
        report.problems += config_problems(parse_config(config), read_graph_io(model))
    except TritonConfigError as e:
        report.problems.append(str(e))
    registered = project_plugin_keys(op_projects)
    specs = custom_specs(model, folder.name)
    keys = {s.name: registered.get(s.name) or [default_origin_op_type(s)] for s in specs}
    report.problems += [f"GE parser: {p}" for p in model_problems(model, version, keys, specs)]
    plain = _plain(model)
    feeds = probe_feeds(plain, dims or runnable_sizes(plain, values), values, random=True,
                        seed=seed)
    try:
        run = run_like_npu_ge(path, feeds, python)
    except TritonConfigError as e:
        report.problems.append(str(e))
        return report
    report.onnxruntime = run.version
    shapes = {**{k: list(v.shape) for k, v in feeds.items()},
              **{k: list(np.shape(v)) for k, v in run.results.items()}}
    batched = not re.search(r"^max_batch_size: 0$", config.read_text(), re.M)
    report.problems += check_output_names([(n, d) for n, _, d in run.inputs],
                                          [(n, d) for n, _, d in run.outputs], shapes, batched)
    _compare(report, run.results, _run_opsdk(model, feeds))
    return report


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

