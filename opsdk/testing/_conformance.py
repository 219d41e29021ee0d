"""ONNX conformance: ONNX's own backend node test cases, run through an opsdk kernel.

ONNX ships, in ``onnx.backend.test.case.node``, one module per operator whose ``export*``
functions build a node, inputs and expected outputs and hand them to ``expect(...)``.
:func:`onnx_node_cases` re-runs the module of one op type with ``expect`` replaced by a
collector, so it needs neither ONNX's whole (slow) collection nor its on-disk data, and
leaves ONNX's own list untouched. Expanded (function-body) variants are not collected:
only nodes of the op type itself.
"""

from __future__ import annotations

import importlib
import sys
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import dtype_name
from ..errors import DeviceUnavailable, SpecError
from ..spec import OpSpec
from ._compare import compare
from ._runner import CaseResult, Executor
from ._standards import AllClose

__all__ = ["OnnxNodeCase", "onnx_node_cases", "run_onnx_case", "applicability"]

_LOCK = threading.Lock()
_CACHE: dict[str, list[OnnxNodeCase]] = {}


@dataclass
class OnnxNodeCase:
    """One ONNX backend node test: inputs, expected outputs and the node's attributes."""

    name: str
    op_type: str
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    rtol: float = 1e-3
    atol: float = 1e-7

    def __repr__(self) -> str:
        return f"OnnxNodeCase({self.name})"


def _module_names(op_type: str) -> list[str]:
    low = op_type.lower()
    snake = "".join("_" + c.lower() if c.isupper() else c for c in op_type).lstrip("_")
    return list(dict.fromkeys([low, snake]))


def _to_array(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    from onnx import numpy_helper

    return np.asarray(numpy_helper.to_array(x))


def onnx_node_cases(op_type: str) -> list[OnnxNodeCase]:
    """ONNX's backend node test cases of ``op_type`` (cached per process).

    Example:
        >>> [c.name for c in onnx_node_cases("ThresholdedRelu")][:2]  # doctest: +SKIP
        ['test_thresholdedrelu_example', 'test_thresholdedrelu']
    """
    with _LOCK:
        if op_type not in _CACHE:
            _CACHE[op_type] = _collect(op_type)
        return list(_CACHE[op_type])


def _collect(op_type: str) -> list[OnnxNodeCase]:
    from onnx.helper import get_attribute_value

    node_pkg: Any = importlib.import_module("onnx.backend.test.case.node")
    found: list[OnnxNodeCase] = []

    def collector(node: Any, inputs: Sequence[Any], outputs: Sequence[Any], name: str,
                  **kwargs: Any) -> None:
        if node.op_type != op_type or node.domain not in ("", "ai.onnx"):
            return
        attrs = {a.name: get_attribute_value(a) for a in node.attribute}
        attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
        found.append(OnnxNodeCase(name, op_type, [_to_array(x) for x in inputs],
                                  [_to_array(y) for y in outputs], attrs))

    real = node_pkg.expect
    state = np.random.get_state()
    try:
        node_pkg.expect = collector
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for mod in _module_names(op_type):
                full = f"{node_pkg.__name__}.{mod}"
                try:
                    if full in sys.modules:
                        importlib.reload(sys.modules[full])
                    else:
                        importlib.import_module(full)
                except ModuleNotFoundError:
                    continue
    finally:
        node_pkg.expect = real
        np.random.set_state(state)
    return found


def applicability(spec: OpSpec, case: OnnxNodeCase) -> str | None:
    """Why ``case`` cannot run on ``spec``'s kernel (None when it can)."""
    if len(case.inputs) > len(spec.inputs):
        return f"{case.name} has {len(case.inputs)} inputs, {spec.name} declares {len(spec.inputs)}"
    unknown = sorted(set(case.attrs) - set(spec.attr_map))
    if unknown:
        return f"{case.name} sets attribute(s) {unknown} that {spec.name} does not declare"
    try:
        spec.bind_types([dtype_name(a.dtype) for a in case.inputs])
    except (SpecError, ValueError) as e:
        return f"{case.name}: {e}"
    return None


def run_onnx_case(
    spec: OpSpec, executor: Executor, case: OnnxNodeCase, *, device: str = "cpu", repro: str = ""
) -> CaseResult:
    """Run one ONNX node case through ``executor``; compare as ONNX's backend test does
    (``assert_allclose`` with the case's rtol/atol, NaN/Inf positions equal)."""
    res = CaseResult(spec.name, case.name, device, 0, dict(case.attrs),
                     [f"{a.dtype}{list(a.shape)}" for a in case.inputs], repro=repro)
    why = applicability(spec, case)
    if why is not None:
        res.problems.append(why)
        return res
    try:
        actual = executor.run(list(case.inputs), dict(case.attrs))
    except DeviceUnavailable:
        raise  # the device cannot run this case: a skip, not a failure
    except (SpecError, RuntimeError) as e:
        res.problems.append(f"{type(e).__name__}: {e}")
        return res
    std = AllClose(rtol=case.rtol, atol=case.atol)
    named = [(i.name, a) for i, a in zip(spec.inputs, case.inputs, strict=False)]
    for out, act, exp in zip(spec.outputs, actual, case.outputs, strict=False):
        if act.shape != exp.shape or act.dtype != exp.dtype:
            res.problems.append(
                f"output {out.name!r}: kernel gave {act.dtype}{list(act.shape)}, ONNX expects "
                f"{exp.dtype}{list(exp.shape)}"
            )
            continue
        res.comparisons.append(compare(act, exp, std, output=out.name, inputs=named))
    return res
