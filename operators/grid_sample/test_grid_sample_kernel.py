"""GridSample beyond the spec-generated and ONNX conformance tests: every mode, padding
and align_corners against ONNX Runtime (and ONNX's reference implementation where ONNX
Runtime departs from it), mode aliases, NaN handling, threads, and shape errors."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import opsdk
from opsdk.errors import SpecError

FOLDER = Path(__file__).resolve().parent
MODES = ("linear", "nearest", "cubic")
PADDINGS = ("zeros", "border", "reflection")


@pytest.fixture(scope="module")
def op() -> Any:
    return opsdk.load(str(FOLDER))


def _model(mode: str, padding_mode: str, align_corners: int) -> Any:
    from onnx import TensorProto, helper

    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode,
                            padding_mode=padding_mode, align_corners=align_corners)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                      for n in ("x", "grid")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def _onnxruntime(x: np.ndarray, grid: np.ndarray, **attrs: Any) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(_model(**attrs).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x, "grid": grid})[0])


def _onnx_reference(x: np.ndarray, grid: np.ndarray, **attrs: Any) -> np.ndarray:
    from onnx.reference import ReferenceEvaluator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its reflection divides by zero on 1-pixel axes
        outs: Any = ReferenceEvaluator(_model(**attrs)).run(None, {"x": x, "grid": grid})
    return np.asarray(outs[0])


def _data(seed: int, xs: tuple[int, ...], gs: tuple[int, ...], lim: float
          ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-3, 3, xs).astype(np.float32),
            rng.uniform(-lim, lim, gs).astype(np.float32))


CASES_2D = list(itertools.product(MODES, PADDINGS, (0, 1)))


@pytest.mark.parametrize("mode, padding_mode, align_corners", CASES_2D)
def test_2d_matches_onnxruntime_or_onnx_reference(
    op: Any, mode: str, padding_mode: str, align_corners: int
) -> None:
    x, grid = _data(len(mode) * 7 + len(padding_mode) + align_corners, (2, 3, 9, 11),
                    (2, 7, 6, 2), 1.6)
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    got = op(x, grid, **attrs)
    np.testing.assert_allclose(got, _onnxruntime(x, grid, **attrs), rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
def test_cubic_clamps_taps_not_the_coordinate(op: Any, padding_mode: str) -> None:
    """ONNX's reference folds the cubic coordinate first; ONNX Runtime and PyTorch clamp or
    reflect each of the 4x4 taps. The operator follows ONNX Runtime and PyTorch."""
    x, grid = _data(17, (1, 2, 6, 7), (1, 9, 9, 2), 1.4)
    attrs = {"mode": "cubic", "padding_mode": padding_mode, "align_corners": 0}
    got = op(x, grid, **attrs)
    np.testing.assert_allclose(got, _onnxruntime(x, grid, **attrs), rtol=1e-5, atol=2e-5)
    differs = np.abs(got - _onnx_reference(x, grid, **attrs)).max() > 1e-2
    # border: the folded coordinate loses the taps' overshoot; reflection: the kernel is
    # symmetric, so reflecting the coordinate and then the taps lands on the same taps
    assert differs == (padding_mode == "border")


@pytest.mark.parametrize("mode, align_corners", list(itertools.product(("linear", "nearest"), (0, 1))))
@pytest.mark.parametrize("padding_mode", PADDINGS)
def test_3d_matches_onnxruntime(op: Any, mode: str, padding_mode: str,
                                align_corners: int) -> None:
    x, grid = _data(5, (1, 2, 5, 6, 7), (1, 3, 4, 5, 3), 1.4)
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    np.testing.assert_allclose(op(x, grid, **attrs), _onnxruntime(x, grid, **attrs),
                               rtol=1e-5, atol=2e-5)


def test_3d_cubic_matches_the_onnx_reference(op: Any) -> None:
    x, grid = _data(9, (1, 1, 4, 5, 6), (1, 2, 3, 2, 3), 1.2)
    attrs = {"mode": "cubic", "padding_mode": "reflection", "align_corners": 0}
    want = _onnx_reference(x, grid, **attrs)
    np.testing.assert_allclose(op(x, grid, **attrs), want.reshape(1, 1, 2, 3, 2), rtol=1e-5,
                               atol=2e-5)


@pytest.mark.parametrize("alias, name", [("bilinear", "linear"), ("bicubic", "cubic")])
def test_opset16_mode_names_are_aliases(op: Any, alias: str, name: str) -> None:
    x, grid = _data(2, (1, 2, 6, 6), (1, 4, 4, 2), 1.2)
    np.testing.assert_array_equal(op(x, grid, mode=alias), op(x, grid, mode=name))


def test_nearest_rounds_half_to_even_on_float32_coordinates(op: Any) -> None:
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 1, 8)
    # align_corners=0, W=8: grid g -> ((g + 1) * 8 - 1) / 2; these hit 0.5, 1.5, 2.5, 3.5
    g = (np.array([0.5, 1.5, 2.5, 3.5], np.float32) * 2 + 1) / 8 - 1
    grid = np.stack([g, np.zeros_like(g)], -1).reshape(1, 1, 4, 2).astype(np.float32)
    y = op(x, grid, mode="nearest")
    np.testing.assert_array_equal(y.ravel(), [0, 2, 2, 4])
    np.testing.assert_array_equal(y, _onnxruntime(x, grid, mode="nearest", padding_mode="zeros",
                                                  align_corners=0))


def test_zero_padding_reads_no_value_outside(op: Any) -> None:
    x = np.ones((1, 1, 4, 4), np.float32)
    x[0, 0, 0, 0] = np.nan
    grid = np.array([[[[-3.0, -3.0], [-1.0, -1.0], [0.0, 0.0]]]], np.float32)  # far out, corner, centre
    y = op(x, grid)
    assert y[0, 0, 0, 0] == 0.0  # every tap outside: exactly 0, no NaN borrowed from inside
    assert np.isnan(y[0, 0, 0, 1])  # the corner's taps include the NaN pixel
    assert y[0, 0, 0, 2] == 1.0


def test_non_finite_grid_values_as_pytorch(op: Any) -> None:
    """PyTorch's 4-D kernel: NaN/Inf coordinates make linear (zero padding) and cubic
    weights NaN; nearest reads zero padding; border clamps NaN to 0 and Inf to the edge."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    grid = np.array([[[[np.nan, 0.0], [np.inf, 0.0], [-np.inf, 0.0]]]], np.float32)
    assert np.isnan(op(x, grid)).all() and np.isnan(op(x, grid, mode="cubic")).all()
    np.testing.assert_array_equal(op(x, grid, mode="nearest"), np.zeros((1, 1, 1, 3)))
    np.testing.assert_array_equal(op(x, grid, padding_mode="border"), [[[[6.0, 9.0, 6.0]]]])
    vol = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2)
    g5 = np.array([[[[[np.nan, 0.0, 0.0], [np.inf, 0.0, 0.0]]]]], np.float32)
    # PyTorch's 5-D kernel sends non-finite coordinates far outside: zero padding reads 0
    np.testing.assert_array_equal(op(vol, g5), np.zeros((1, 1, 1, 1, 2)))


@pytest.mark.parametrize("shape", [(1, 1, 0, 4), (1, 2, 3, 0), (1, 1, 2, 0, 2)])
def test_empty_spatial_input_is_refused(op: Any, shape: tuple[int, ...]) -> None:
    grid = np.zeros((1,) + (2,) * (len(shape) - 2) + (len(shape) - 2,), np.float32)
    with pytest.raises(opsdk.SpecError, match="input 'x' has an empty spatial dim"):
        op(np.zeros(shape, np.float32), grid)


def test_float16_input_and_grid(op: Any) -> None:
    x, grid = _data(4, (1, 3, 16, 16), (1, 8, 8, 2), 1.1)
    want = op.reference(x.astype(np.float64), grid.astype(np.float16).astype(np.float64))
    for xd in (np.float16, np.float32):
        got = op(x.astype(xd), grid.astype(np.float16))
        assert got.dtype == xd
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=4e-3)


def test_threads_do_not_change_the_result(op: Any) -> None:
    x, grid = _data(6, (2, 8, 40, 40), (2, 50, 60, 2), 1.1)
    previous = op.module.get_num_threads()
    try:
        op.set_num_threads(1)
        one = op(x, grid, mode="cubic")
        op.set_num_threads(2)
        two = op(x, grid, mode="cubic")
    finally:
        op.set_num_threads(previous)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("xs, gs, attrs, match", [
    ((1, 2, 4, 4), (1, 3, 3, 2), {"mode": "area"}, r"'mode' is 'area', expected one of"),
    ((1, 2, 4, 4), (1, 3, 3, 2), {"padding_mode": "wrap"}, r"'padding_mode' is 'wrap'"),
    ((1, 2, 4, 4), (1, 3, 3, 2), {"align_corners": 2}, r"'align_corners' must be 0 or 1"),
    ((1, 2, 4, 4), (1, 3, 3, 3), {}, r"input 'grid' has shape \(1, 3, 3, 3\).*last axis of 2"),
    ((1, 2, 4, 4), (1, 3, 2), {}, r"input 'grid' has shape \(1, 3, 2\), expected rank 4"),
    ((2, 2, 4, 4), (3, 3, 3, 2), {}, r"input 'grid' has batch 3, expected 2"),
    ((2, 4, 4), (2, 3, 2), {}, r"input 'x' has rank 3, expected 4 \(N, C, H, W\) or 5"),
])
def test_shape_errors_name_the_input_and_the_fix(
    op: Any, xs: tuple[int, ...], gs: tuple[int, ...], attrs: dict[str, Any], match: str
) -> None:
    with pytest.raises(SpecError, match=match):
        op(np.zeros(xs, np.float32), np.zeros(gs, np.float32), **attrs)
