"""ONNX conformance: ONNX's own backend node tests through every shipped operator that
mirrors a standard ONNX op (spec.onnx_op), compared with ONNX's expected outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import opsdk
from opsdk.registry import find_operators
from opsdk.spec import Input, OpSpec, Output
from opsdk.testing import onnx_node_cases, run_onnx_case
from opsdk.testing._conformance import applicability

ROOT = Path(__file__).resolve().parents[2] / "operators"
MIRRORS = sorted(
    (o for o in find_operators() if o.spec.onnx_op and ROOT in o.folder.parents),
    key=lambda o: o.name,
)
PARAMS = [
    pytest.param(o.folder, c, id=f"{o.name}-{c.name}")
    for o in MIRRORS
    for c in onnx_node_cases(o.spec.onnx_op or "")
    if applicability(o.spec, c) is None
]


def test_thresholded_relu_is_covered() -> None:
    names = {p.id for p in PARAMS}
    assert {"ThresholdedRelu-test_thresholdedrelu", "ThresholdedRelu-test_thresholdedrelu_default",
            "ThresholdedRelu-test_thresholdedrelu_example"} <= names


@pytest.mark.parametrize("folder, case", PARAMS)
def test_onnx_node_case(folder: Path, case: object) -> None:
    op = opsdk.load(str(folder))
    result = run_onnx_case(op.spec, op, case)  # type: ignore[arg-type]
    assert result.passed, result.summary()


def test_collection_leaves_onnx_own_list_alone_and_is_cached() -> None:
    import onnx.backend.test.case.node as node

    before = len(node._NodeTestCases)
    first = onnx_node_cases("ThresholdedRelu")
    assert onnx_node_cases("ThresholdedRelu")[0] is first[0]
    assert len(node._NodeTestCases) == before
    assert all(not c.name.endswith("_expanded") for c in first)
    assert onnx_node_cases("NoSuchOpType") == []


def test_a_wrong_kernel_fails_conformance() -> None:
    from opsdk.spec import Attr

    spec = OpSpec("TRelu", domain="com.test", inputs=[Input("x")], outputs=[Output("y")],
                  attrs=[Attr("alpha", "float", 1.0)], types={"T": ("float32",)})

    class Biased:  # y = x + 0.01 above the threshold: beyond ONNX's rtol of 1e-3
        def run(self, inputs: list[np.ndarray], attrs: dict[str, float]) -> list[np.ndarray]:
            a = attrs.get("alpha", 1.0)
            return [np.where(inputs[0] > a, inputs[0] + 1e-2, 0).astype(np.float32)]

    case = next(c for c in onnx_node_cases("ThresholdedRelu") if c.name == "test_thresholdedrelu")
    r = run_onnx_case(spec, Biased(), case)
    assert not r.passed and r.comparisons[0].n_failed > 0


def test_inapplicable_cases_say_why() -> None:
    spec = OpSpec("TRelu", domain="com.test", inputs=[Input("x")], outputs=[Output("y")],
                  types={"T": ("float16",)})
    case = onnx_node_cases("ThresholdedRelu")[0]
    assert "alpha" in (applicability(spec, case) or "")


# ------------------------------------------------- ONNX Runtime's test vectors
def _vectors(tmp_path: Path, cases: list[dict]) -> Path:
    import json

    (tmp_path / "ort_vectors.json").write_text(json.dumps({"cases": cases}))
    return tmp_path


def _vector(name: str, x: list[float], y: list[float], expect: str = "success",
            dtype: str = "float32") -> dict:
    return {"op_type": "Softmax", "opset": 13, "attrs": {"axis": -1}, "name": name,
            "inputs": [{"name": "X", "dtype": dtype, "shape": [len(x)], "data": x}],
            "outputs": [{"name": "Y", "dtype": dtype, "shape": [len(y)], "data": y}],
            "expect": expect, "tier": "spec", "tier_reason": "",
            "tolerance": {"abs": 1e-5, "rel": 1e-4}}


def test_vectors_are_found_through_the_environment(tmp_path: Path, monkeypatch) -> None:
    from opsdk.testing import find_vectors, ort_vector_cases

    monkeypatch.setenv("OPSDK_CONFORMANCE_DIR", str(tmp_path))
    assert find_vectors() is None and ort_vector_cases("Softmax") == []
    _vectors(tmp_path, [_vector("a", [1e6, 0.0], [1.0, 0.0], dtype="float16")])
    (case,) = ort_vector_cases("Softmax", find_vectors())
    assert case.inputs[0].dtype == np.float16 and np.isinf(case.inputs[0][0])  # as ORT reads it
    assert (case.rtol, case.atol, case.expect) == (1e-4, 1e-5, "success")


def test_vector_cases_pass_fail_and_expect_errors(tmp_path: Path) -> None:
    from opsdk.testing import ort_vector_cases, run_vector_case

    path = _vectors(tmp_path, [
        _vector("right", [0.0, 0.0], [0.5, 0.5]),
        _vector("wrong", [0.0, 0.0], [0.25, 0.75]),
        _vector("refused", [], [], expect="error"),
    ]) / "ort_vectors.json"
    cases = {c.name: c for c in ort_vector_cases("Softmax", path)}
    op = opsdk.load("Softmax")

    class Refuses:
        def run(self, inputs, attrs=None):
            raise opsdk.SpecError("refused")

    assert run_vector_case(op.spec, op, cases["right"]).passed
    assert not run_vector_case(op.spec, op, cases["wrong"]).passed
    assert run_vector_case(op.spec, Refuses(), cases["refused"]).passed
    res = run_vector_case(op.spec, op, cases["refused"])  # an empty row: softmax returns
    assert not res.passed and "expected an error" in res.problems[0]


def test_not_followed_must_name_real_cases(tmp_path: Path, monkeypatch) -> None:
    from opsdk.testing import op_tests

    monkeypatch.setenv("OPSDK_CONFORMANCE_DIR", str(_vectors(tmp_path, [_vector("a", [0.0], [1.0])])))
    folder = Path(opsdk.__file__).resolve().parents[1] / "operators" / "softmax"
    with pytest.raises(opsdk.SpecError, match=r"not_followed names unknown .*\['nope'\]"):
        op_tests(folder / "test_softmax.py", not_followed={"nope": "why"})
