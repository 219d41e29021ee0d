"""Input generation: distributions, ranges, dtypes, edge values, layouts, determinism."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from opsdk.spec import Attr, Case, Input, OpSpec, Output
from opsdk.testing import (
    DISTRIBUTIONS,
    build_cases,
    edge_values,
    generate,
    inject_edges,
    make_inputs,
    non_contiguous,
)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_distributions_respect_dtype_shape_and_range(dist: str, dtype: str) -> None:
    x = generate(rng(), (64, 16), dtype, dist, (-3.0, 2.0))
    assert x.shape == (64, 16) and x.dtype.name == dtype
    v = x.astype(np.float64)
    assert np.isfinite(v).all()
    if dist in ("sigmoid", "softmax"):
        assert (v >= 0).all() and (v <= 1).all()
    elif dist == "tanh":
        assert (v >= -1).all() and (v <= 1).all()
    else:
        assert v.min() >= -3.0 - 1e-2 and v.max() <= 2.0 + 1e-2
    if dist == "relu":
        assert (v >= 0).all() and (v == 0).mean() > 0.3
    if dist == "softmax":
        np.testing.assert_allclose(v.sum(axis=-1), 1.0, rtol=2e-2)


def test_distributions_differ_in_shape() -> None:
    u = generate(rng(), (20000,), "float64", "uniform", (-1, 1))
    n = generate(rng(), (20000,), "float64", "normal", (-1, 1))
    lap = generate(rng(), (20000,), "float64", "laplace", (-1, 1))
    tri = generate(rng(), (20000,), "float64", "triangular", (-1, 1))
    assert abs(u.std() - 2 / np.sqrt(12)) < 0.01  # uniform on [-1, 1]
    assert n.std() < u.std() and tri.std() < u.std()
    assert lap.std() < n.std()  # scale (hi-lo)/10 is narrower than std (hi-lo)/6


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_generation_is_in_range(dtype: str) -> None:
    x = generate(rng(), (1000,), dtype, "uniform", (-20, 20))
    assert x.dtype.name == dtype
    assert x.min() >= (0 if dtype == "uint8" else -20) and x.max() <= 20
    assert len(np.unique(x)) > 10
    assert generate(rng(), (10,), "bool").dtype == np.bool_


def test_scalars_and_empty_shapes() -> None:
    assert generate(rng(), (), "float32").shape == ()
    assert generate(rng(), (2, 0, 3), "float16").shape == (2, 0, 3)
    assert generate(rng(), (0,), "float32", "softmax").shape == (0,)


def test_unknown_distribution_is_named() -> None:
    with pytest.raises(ValueError, match=r"unknown distribution 'gauss'.*normal"):
        generate(rng(), (2,), "float32", "gauss")


def test_generation_is_deterministic_per_seed() -> None:
    a = generate(rng(7), (100,), "float32", "normal")
    b = generate(rng(7), (100,), "float32", "normal")
    c = generate(rng(8), (100,), "float32", "normal")
    assert a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes()


def test_edge_values_of_float16() -> None:
    v = edge_values("float16").astype(np.float64)
    assert np.isnan(v).any() and np.isposinf(v).any() and np.isneginf(v).any()
    assert any(x == 0 and np.signbit(x) for x in v)  # -0.0
    assert 2.0**-24 in v  # smallest subnormal
    assert 65504.0 in v and -65504.0 in v
    assert 2.0**-14 in v  # smallest normal


def test_edge_values_of_wider_floats_hold_float16_overflow_boundaries() -> None:
    v = edge_values("float32").astype(np.float64)
    assert {65504.0, 65520.0}.issubset(set(v.tolist()))
    f32max = float(np.finfo(np.float32).max)
    assert f32max in v and float(np.finfo(np.float32).smallest_subnormal) in v
    with np.errstate(over="ignore"):
        assert np.float16(65520.0) == np.inf and np.float16(65519.99) == 65504
    bf = edge_values("bfloat16")
    assert bf.dtype == np.dtype(ml_dtypes.bfloat16) and np.isnan(bf.astype(np.float32)).any()


def test_edge_values_of_integers() -> None:
    v = edge_values("int8")
    assert {-128, 127, 0, 1, -1}.issubset(set(v.tolist()))
    assert set(edge_values("bool").tolist()) == {False, True}


def test_inject_edges_puts_every_edge_value_in() -> None:
    base = np.zeros(64, np.float16)
    out = inject_edges(rng(), base, "float16")
    assert not base.any()  # the input is not modified
    vals = out.astype(np.float64)
    assert np.isnan(vals).any() and np.isinf(vals).any() and (vals == 65504).any()


@pytest.mark.parametrize("mode", ["strided", "transposed"])
def test_non_contiguous_views_keep_values(mode: str) -> None:
    a = generate(rng(), (4, 5, 6), "float32")
    v = non_contiguous(a, mode)
    assert not v.flags.c_contiguous
    assert np.array_equal(v, a)


def _spec(**kw: object) -> OpSpec:
    args: dict[str, object] = dict(
        inputs=[Input("a"), Input("b")], outputs=[Output("y")], types={"T": ("float32",)}
    )
    args.update(kw)
    return OpSpec("AddLike", domain="com.test", **args)  # type: ignore[arg-type]


def test_cases_cover_shapes_layouts_edges_distributions_and_broadcasting() -> None:
    ids = [c.id for c in build_cases(_spec())]
    for want in ("float32-scalar", "float32-empty", "float32-large", "float32-broadcast",
                 "float32-broadcast_scalar", "float32-strided", "float32-transposed",
                 "float32-edge", "float32-laplace", "float32-softmax"):
        assert want in ids
    assert len(ids) == len(set(ids))
    bc = next(c for c in build_cases(_spec()) if c.id == "float32-broadcast")
    assert bc.shapes == ((2, 3, 4), (3, 1))


def test_cases_multiply_by_attribute_sets_and_use_spec_ranges() -> None:
    spec = _spec(
        attrs=[Attr("alpha", "float", 1.0)],
        cases=[Case(shapes={"a": (3,), "b": (3,)}, attrs={"alpha": 2.0},
                    ranges={"a": (10.0, 11.0)}, name="mine")],
    )
    cases = build_cases(spec)
    ids = [c.id for c in cases]
    assert "float32-mine" in ids
    assert "float32-small-defaults" in ids and "float32-small-alpha=2.0" in ids
    mine = next(c for c in cases if c.id == "float32-mine")
    a, b = make_inputs(spec, mine, seed=0)
    assert a is not None and b is not None
    assert (a >= 10).all() and (a <= 11).all() and b.min() < 10


def test_make_inputs_depends_only_on_seed_and_case() -> None:
    spec = _spec()
    case = build_cases(spec)[5]
    a = make_inputs(spec, case, 1)
    b = make_inputs(spec, case, 1)
    c = make_inputs(spec, case, 2)
    assert all(x is not None and y is not None and x.tobytes() == y.tobytes()
               for x, y in zip(a, b, strict=True))
    assert a[0] is not None and c[0] is not None and a[0].tobytes() != c[0].tobytes()


def test_spec_with_shape_function_and_no_cases_names_the_fix() -> None:
    from opsdk.errors import SpecError
    from opsdk.spec import TensorType

    spec = _spec()

    @spec.register_shape
    def _shape(a: TensorType, b: TensorType) -> TensorType:
        return a

    with pytest.raises(SpecError, match=r"AddLike: .*add cases=\[Case"):
        build_cases(spec)


def test_required_attribute_without_case_names_the_fix() -> None:
    from opsdk.errors import SpecError

    spec = _spec(attrs=[Attr("k", "int")])
    with pytest.raises(SpecError, match=r"required attribute\(s\) \['k'\].*cases="):
        build_cases(spec)


def test_optional_inputs_are_also_left_out() -> None:
    spec = _spec(inputs=[Input("a"), Input("b", optional=True)])
    case = next(c for c in build_cases(spec) if c.id == "float32-small-no_optional")
    assert case.shapes == ((2, 3, 4), None) and case.dtypes == ("float32", None)
    assert [x is None for x in make_inputs(spec, case, 0)] == [False]
