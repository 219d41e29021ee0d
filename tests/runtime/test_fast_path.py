"""The C++ fast call path for operators with a shape function (Softmax, LayerNormalization).

``op(x)`` takes output shapes from a plan cached per (input dtypes, input shapes,
attribute values); a cache miss asks the checked path's inference, so results and errors
are those of ``op.run``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import opsdk
from opsdk.errors import SpecError
from opsdk.runtime.cpu import Operator


@pytest.fixture(scope="module")
def softmax() -> Any:
    return opsdk.load("Softmax")


@pytest.fixture(scope="module")
def layer_norm() -> Any:
    return opsdk.load("LayerNormalization")


def _counting(monkeypatch: pytest.MonkeyPatch, op: Any) -> tuple[Any, dict[str, int]]:
    """A fresh operator over op's module whose planner and checked path count their calls."""
    calls = {"plan": 0, "checked": 0}
    plan, slow = Operator._fast_plan, Operator._slow_call

    def counted_plan(self: Operator, *a: Any, **k: Any) -> Any:
        calls["plan"] += 1
        return plan(self, *a, **k)

    def counted_slow(self: Operator, *a: Any, **k: Any) -> Any:
        calls["checked"] += 1
        return slow(self, *a, **k)

    monkeypatch.setattr(Operator, "_fast_plan", counted_plan)
    monkeypatch.setattr(Operator, "_slow_call", counted_slow)
    return Operator(op.spec, op.module, op.folder), calls


def _rng_array(shape: tuple[int, ...], dtype: Any = np.float32, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def test_repeated_calls_are_planned_once_and_skip_the_checked_path(monkeypatch, softmax):
    op, calls = _counting(monkeypatch, softmax)
    x = _rng_array((64, 256))
    want = softmax.run([x], {"axis": -1})[0]
    for _ in range(3):
        np.testing.assert_array_equal(op(x), want)
    assert calls == {"plan": 1, "checked": 0}
    np.testing.assert_array_equal(op(x, axis=0), softmax.run([x], {"axis": 0})[0])
    op(x.T.copy())  # another shape: another plan
    assert calls == {"plan": 3, "checked": 0}
    op(x[:, ::2])  # non-contiguous: the checked path
    op(x, axis=np.int64(1))  # a NumPy scalar attribute: the checked path
    assert calls == {"plan": 3, "checked": 2}


def test_plans_beyond_the_cache_size_stay_correct(monkeypatch, softmax):
    op, calls = _counting(monkeypatch, softmax)
    for rows in range(1, 41):  # more signatures than the 16 plans kept
        x = _rng_array((rows, 5), seed=rows)
        y = op(x)
        assert y.shape == (rows, 5)
        np.testing.assert_array_equal(y, softmax.run([x], {})[0])
    assert calls == {"plan": 40, "checked": 0}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(
    "xs,ss,bs,axis",
    [
        ((4, 33), (33,), (33,), -1),
        ((2, 3, 40), (40,), None, -1),
        ((2, 3, 4, 5), (4, 5), (4, 5), 2),
        ((3, 4, 5), (3, 4, 5), (5,), 0),
        ((2, 6, 7), (1, 7), (6, 1), -2),
        ((2, 2, 2), (2, 2, 2), (2, 1, 2), -1),
    ],
)
def test_layer_norm_fast_path_matches_the_checked_path(monkeypatch, layer_norm, dtype, xs, ss,
                                                       bs, axis):
    op, calls = _counting(monkeypatch, layer_norm)
    args = [_rng_array(s, dtype, seed=i) for i, s in enumerate((xs, ss, bs)) if s is not None]
    got = op(*args, axis=axis)
    want = layer_norm.run(args, {"axis": axis})
    assert calls == {"plan": 1, "checked": 0}
    assert len(got) == 3
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert len({a.ctypes.data for a in got}) == 3  # three distinct buffers


def test_left_out_and_none_optional_input_agree(layer_norm):
    x, s = _rng_array((5, 16)), _rng_array((16,), seed=1)
    left_out = layer_norm(x, s)  # the fast path, B absent
    given_none = layer_norm(x, s, None)  # the checked path
    for a, b in zip(left_out, given_none):
        np.testing.assert_array_equal(a, b)


def _message(fn: Any) -> str:
    with pytest.raises(SpecError) as info:
        fn()
    return str(info.value)


X = _rng_array((8, 16))
S = _rng_array((16,), seed=1)

BAD_CALLS = {
    "softmax axis out of range": ("Softmax", (X,), {"axis": 2}, "attribute 'axis' is 2"),
    "softmax wrong dtype": ("Softmax", (X.astype(np.float64),), {}, "has dtype float64"),
    "softmax scalar": ("Softmax", (np.ones((), np.float32),), {}, "a scalar has no axis"),
    "softmax missing input": ("Softmax", (), {}, "expected 1 inputs"),
    "softmax unknown attribute": ("Softmax", (X,), {"axes": 1}, "unknown attribute 'axes'"),
    "layer norm missing Scale": ("LayerNormalization", (X,), {}, "expected 2 to 3 inputs"),
    "layer norm Scale shape": ("LayerNormalization", (X, S[:5]), {}, "does not broadcast"),
    "layer norm mixed dtypes": ("LayerNormalization", (X, S.astype(np.float16)), {}, "T"),
    "layer norm axis": ("LayerNormalization", (X, S), {"axis": -3}, "attribute 'axis' is -3"),
    "layer norm scalar X": ("LayerNormalization", (np.ones((), np.float32), S), {}, "scalar"),
    "layer norm stash_type": ("LayerNormalization", (X, S), {"stash_type": 0}, "stash_type"),
    "layer norm list input": ("LayerNormalization", (X, [1.0] * 16), {}, "dtype float64"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_errors_are_those_of_the_checked_path(case):
    name, args, attrs, fragment = BAD_CALLS[case]
    op = opsdk.load(name)
    fast = _message(lambda: op(*args, **attrs))
    checked = _message(lambda: op.run(list(args), attrs))
    assert fast == checked
    assert fast.startswith(name + ":") and fragment in fast
