"""ONNX Runtime's own operator unit-test vectors, run through an opsdk kernel.

``ort_vectors.json`` holds inputs, attributes and expected outputs taken from ONNX
Runtime's C++ operator tests (GridSample, LayerNormalization, Softmax, Gelu), each with the
tolerance that test uses, whether ONNX defines the expectation (tier ``spec``) or it is
ONNX Runtime's own choice (``ort_specific``), and whether the case expects an error. The
file is read-only shared data, found through ``$OPSDK_CONFORMANCE_DIR`` or a
``shared/conformance`` folder beside an ancestor of the working directory or of opsdk;
where it is absent the suite skips with that reason.

An operator lists the cases it deliberately does not follow (with the reason) in its test
file: ``op_tests(__file__, not_followed={"case name": "reason"})``; those run as strict
xfails, so a case that starts to pass is noticed.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import to_numpy
from ..errors import OpsdkError, SpecError
from ..spec import OpSpec
from ._conformance import OnnxNodeCase, applicability, run_onnx_case
from ._runner import CaseResult, Executor

__all__ = ["VectorCase", "find_vectors", "ort_vector_cases", "run_vector_case"]

FILE_NAME = "ort_vectors.json"
_LOCK = threading.Lock()
_CACHE: dict[Path, list[VectorCase]] = {}


@dataclass(repr=False)
class VectorCase(OnnxNodeCase):
    """One ONNX Runtime test vector (see :class:`OnnxNodeCase`) and what it expects."""

    opset: int | None = None
    tier: str = "spec"  # "spec" (ONNX defines it) or "ort_specific"
    tier_reason: str = ""
    expect: str = "success"  # or "error": the kernel must refuse the inputs


def find_vectors() -> Path | None:
    """``ort_vectors.json``: ``$OPSDK_CONFORMANCE_DIR``, else ``shared/conformance`` beside an
    ancestor of the working directory or of the opsdk package; None when absent.

    Example:
        >>> find_vectors()  # doctest: +SKIP
        PosixPath('/work/shared/conformance/ort_vectors.json')
    """
    env = os.environ.get("OPSDK_CONFORMANCE_DIR")
    if env:
        path = Path(env).expanduser() / FILE_NAME
        return path if path.is_file() else None
    starts = [Path.cwd().resolve(), Path(__file__).resolve().parent]
    for start in starts:
        for folder in (start, *start.parents):
            path = folder / "shared" / "conformance" / FILE_NAME
            if path.is_file():
                return path
    return None


def _array(t: dict[str, Any]) -> np.ndarray:
    data = np.asarray(t["data"], dtype=np.float64)
    with np.errstate(over="ignore"):  # huge coordinates become Inf in float16, as in ORT
        return data.astype(to_numpy(t["dtype"])).reshape(t["shape"])


def _case(c: dict[str, Any]) -> VectorCase:
    tol = c.get("tolerance") or {}
    return VectorCase(
        c["name"], c["op_type"], [_array(t) for t in c["inputs"]],
        [_array(t) for t in c.get("outputs", [])], dict(c.get("attrs", {})),
        rtol=float(tol.get("rel", 1e-4)), atol=float(tol.get("abs", 1e-5)),
        opset=c.get("opset"), tier=c.get("tier", "spec"),
        tier_reason=c.get("tier_reason", ""), expect=c.get("expect", "success"),
    )


def ort_vector_cases(op_type: str, path: Path | None = None) -> list[VectorCase]:
    """The vectors of ``op_type`` (cached per file); empty when the file is absent.

    Example:
        >>> len(ort_vector_cases("Gelu"))  # doctest: +SKIP
        5
    """
    path = path or find_vectors()
    if path is None:
        return []
    with _LOCK:
        if path not in _CACHE:
            raw = json.loads(path.read_text(encoding="utf-8"))
            _CACHE[path] = [_case(c) for c in raw["cases"]]
        return [c for c in _CACHE[path] if c.op_type == op_type]


def run_vector_case(
    spec: OpSpec, executor: Executor, case: VectorCase, *, device: str = "cpu", repro: str = ""
) -> CaseResult:
    """Run one vector: outputs compared with ``|a - e| <= abs + rel * |e|`` as ONNX
    Runtime's checker does; an ``error`` case passes when the kernel refuses its inputs."""
    if case.expect == "success":
        return run_onnx_case(spec, executor, case, device=device, repro=repro)
    res = CaseResult(spec.name, case.name, device, 0, dict(case.attrs),
                     [f"{a.dtype}{list(a.shape)}" for a in case.inputs], repro=repro)
    why = applicability(spec, case)
    if why is not None:
        res.problems.append(why)
        return res
    try:
        executor.run(list(case.inputs), dict(case.attrs))
    except (SpecError, RuntimeError, OpsdkError):
        return res
    res.problems.append(f"{case.name}: expected an error (ONNX Runtime refuses these inputs), "
                        "the kernel returned a result")
    return res
