"""The hard cases every operator gets, declared input domains, and the full gradient check
(spec-level: no kernel is built here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType, Values
from opsdk.testing import build_cases, make_inputs, non_contiguous
from opsdk.testing._cases import coverage_notes
from opsdk.testing._generate import domain_edges


def _gather(values: Values | None = None) -> OpSpec:
    """y = x[idx] along axis 0: an operator with a shape function and an index input."""
    spec = OpSpec("PickRows", domain="com.test",
                  inputs=[Input("x", "T"), Input("idx", "int64", values=values)],
                  outputs=[Output("y", "T")], types={"T": ("float16", "float32")},
                  cases=[Case({"x": (6, 5), "idx": (4,)}, ranges={"idx": (0, 5)}, name="rows"),
                         Case({"x": (3, 2), "idx": (0,)}, name="none")])

    @spec.register_shape
    def _shape(x: TensorType, idx: TensorType) -> TensorType:
        return TensorType((*idx.shape, *x.shape[1:]), x.dtype)

    spec.register_reference(lambda x, idx: x[idx])
    return spec


def test_an_operator_with_a_shape_function_gets_the_hard_cases_besides_its_own() -> None:
    ids = [c.id for c in build_cases(_gather())]
    assert "float32-int64-rows" in ids and "float32-int64-none" in ids
    for suffix in ("strided", "transposed", "negative", "expanded", "edge", "normal", "tanh"):
        assert f"float32-int64-rows-{suffix}" in ids, suffix
    assert not any(i.startswith("float32-int64-none-") for i in ids)  # an empty input: no base


def test_layouts_hold_the_same_values_in_other_strides() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    neg = non_contiguous(a, "negative")
    assert neg.strides[-1] < 0 and np.array_equal(neg, a)
    exp = non_contiguous(a, "expanded")
    assert exp.strides[0] == 0 and np.array_equal(exp, np.broadcast_to(a[:1], a.shape))
    with pytest.raises(ValueError, match="unknown layout 'diagonal'"):
        non_contiguous(a, "diagonal")


def test_an_undeclared_integer_input_is_reported_and_left_alone() -> None:
    spec = _gather()
    notes = coverage_notes(spec)
    assert notes and "PickRows: input 'idx' holds integers" in notes[0]
    assert "values=Values(index_of='x', axis=0)" in notes[0]
    edge = next(c for c in build_cases(spec) if c.id == "float32-int64-rows-edge")
    x, idx = make_inputs(spec, edge, 0)
    assert np.isnan(x).any() and idx.min() >= 0 and idx.max() <= 5  # the case's range


def test_declared_indices_are_valid_for_every_case() -> None:
    spec = _gather(Values(index_of="x", axis=0))
    assert coverage_notes(spec) == []
    for case in build_cases(spec):
        x, idx = make_inputs(spec, case, 3)[:2]
        assert idx.size == 0 or (0 <= idx.min() and idx.max() < x.shape[0]), case.id
        spec.reference(x, idx)  # never an IndexError


def test_a_range_and_whole_numbers_bound_the_edges_and_draws() -> None:
    edges = domain_edges("float32", Values(range=(-2.0, 2.0)))
    finite = edges[np.isfinite(edges)]
    assert np.isnan(edges).any() and np.isinf(edges).any() and np.abs(finite).max() <= 2
    no_inf = domain_edges("float16", Values(integer=True, inf=False))
    assert not np.isinf(no_inf).any()
    assert np.all(no_inf[np.isfinite(no_inf)] % 1 == 0)
    assert domain_edges("int64", Values(index_of="x")).size == 0
    spec = OpSpec("Counts", domain="com.test", inputs=[Input("x", values=Values(integer=True))],
                  outputs=[Output("y")], types={"T": ("float32",)})
    for case in build_cases(spec):
        (x,) = make_inputs(spec, case, 0)
        f = x[np.isfinite(x)]
        assert np.all(f == np.round(f)), case.id


@pytest.mark.parametrize(("values", "message"), [
    (Values(range=(1.0, 0.0)), r"PickRows: input 'idx': values=Values\(range=\(1.0, 0.0\)\): "
     r"expected two finite numbers \(lo, hi\) with lo < hi"),
    (Values(index_of="y"), r"Values\(index_of='y'\) names no other input; expected one of x"),
    (Values(index_of="x", range=(0, 3)), "gives both index_of and range"),
    ("0..5", r"is not a Values\(...\)"),
])
def test_a_bad_domain_is_refused_naming_the_fix(values: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        _gather(values)


def test_an_index_input_needs_an_integer_type() -> None:
    with pytest.raises(SpecError, match="an index input needs an integer type, but 'T' allows "
                       "float32"):
        OpSpec("Bad", domain="com.test",
               inputs=[Input("x", "T"), Input("i", "T", values=Values(index_of="x"))],
               outputs=[Output("y")], types={"T": ("float32",)})


torch = pytest.importorskip("torch")


def _scaled(factor: float, with_b: bool = True) -> OpSpec:
    """y = x * b + sum(x) (a reduction term), with a backward scaling dx by ``factor``."""
    spec = OpSpec("Scaled", domain="com.test", inputs=[Input("x"), Input("b"),
                                                       Input("n", "int64")],
                  outputs=[Output("y")], types={"T": ("float32",)},
                  attrs=[Attr("k", "float", 1.0)],
                  cases=[Case({"x": (3, 4), "b": (4,), "n": (2,)}, name="rows")])

    @spec.register_shape
    def _shape(x: TensorType, b: TensorType, n: TensorType, *, k: float) -> TensorType:
        return x

    spec.register_reference(lambda x, b, n, k=1.0: x * b + k * x.sum(-1, keepdims=True))

    @spec.register_backward
    def _backward(inputs: Any, outputs: Any, grads: Any, *, k: float) -> Any:
        x, b, _ = inputs
        g = grads[0]
        dx = g * b + k * g.sum(-1, keepdim=True)
        return [dx * factor, (g * x).sum_to_size(b.shape) if with_b else None, None]

    return spec


def test_the_full_gradient_check_passes_a_right_backward_and_says_what_it_checked() -> None:
    from opsdk.torch._gradcheck import full_gradcheck

    result = full_gradcheck(_scaled(1.0))
    assert result.passed, result.problems
    assert result.checked == ["float32-int64-rows: d(y)/d(x), 12x12 entries",
                              "float32-int64-rows: d(y)/d(b), 12x4 entries"]
    assert result.no_gradient == ["'n' (int64: not differentiable)"]


def test_a_gradient_off_by_a_tenth_fails_naming_the_entry() -> None:
    from opsdk.torch._gradcheck import full_gradcheck

    result = full_gradcheck(_scaled(1.1))
    assert not result.passed
    assert "float32-int64-rows: d(y)/d(x) wrong: entry [output element" in result.problems[0]
    assert "by float64 finite differences of the reference" in result.problems[0]


def test_a_missing_gradient_is_stated_and_fails_when_the_reference_depends_on_it() -> None:
    from opsdk.torch._gradcheck import full_gradcheck

    result = full_gradcheck(_scaled(1.0, with_b=False))
    assert "'b' (the backward returns None)" in result.no_gradient
    assert any("input 'b': the backward gives no gradient, but the reference depends on it"
               in p for p in result.problems)
