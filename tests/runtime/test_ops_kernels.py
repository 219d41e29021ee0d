"""Kernel properties of the shipped elementwise and normalisation operators beyond the
spec-generated tests: accuracy sweeps against float64, every float16 value, the
streaming-store path of large tensors, thread-count independence, stability and layout."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import opsdk

F32_TINY = float(np.finfo(np.float32).tiny)


@pytest.fixture(scope="module")
def gelu() -> Any:
    return opsdk.load("Gelu")


@pytest.fixture(scope="module")
def softmax() -> Any:
    return opsdk.load("Softmax")


@pytest.fixture(scope="module")
def layer_norm() -> Any:
    return opsdk.load("LayerNormalization")


def _rel_err(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    g, w = got.astype(np.float64), want.astype(np.float64)
    return np.abs(g - w) / np.maximum(np.abs(w), F32_TINY)


@pytest.mark.parametrize(
    ("approximate", "lo", "hi", "bound"),
    [
        ("none", -10.0, 10.0, 5e-7),   # documented: 4.4e-7
        ("none", -13.5, -10.0, 1.3e-6),  # documented: 1.1e-6 (deep tail)
        ("tanh", -2.0, 10.0, 1e-6),  # documented: 8e-7
        ("tanh", -10.0, -2.0, 1.6e-5),  # documented: grows as |m| 2^-22, 1.4e-5 at -10
    ],
)
def test_gelu_accuracy_vs_float64(gelu, approximate: str, lo: float, hi: float,
                                  bound: float) -> None:
    x = np.linspace(lo, hi, 400_001).astype(np.float32)
    got = gelu(x, approximate=approximate)
    want = gelu.reference(x.astype(np.float64), approximate=approximate)
    assert float(_rel_err(got, want).max()) < bound


def test_gelu_limits_follow_onnx_formula(gelu) -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, -200.0], np.float32)
    for approximate in ("none", "tanh"):
        y = gelu(x, approximate=approximate)
        assert np.isnan(y[0]) and y[1] == np.inf and np.isnan(y[2])
        assert y[3] == 0 and np.signbit(y[4]) and y[5] == np.float32(3e38)
        assert y[6] == 0 and np.signbit(y[6]) and y[7] == 0


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_every_float16_value(gelu, approximate: str) -> None:
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    got = gelu(x, approximate=approximate)
    want = gelu.reference(x.astype(np.float64), approximate=approximate).astype(np.float16)
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)])
    # float32 math rounded once to float16: at most one float16 ulp from the exact value
    exact = gelu.reference(x.astype(np.float64), approximate=approximate)[finite]
    ulp = np.maximum(np.ldexp(1.0, np.frexp(np.abs(exact))[1] - 11), 2.0**-24)
    err = np.abs(got[finite].astype(np.float64) - exact)
    assert float((err / ulp).max()) <= 1.0


def test_gelu_bfloat16_rounds_to_nearest(gelu) -> None:
    x = np.linspace(-6, 6, 4097).astype(ml_dtypes.bfloat16)
    got = gelu(x).astype(np.float64)
    want = gelu.reference(x.astype(np.float64))
    ulp = np.abs(want.astype(ml_dtypes.bfloat16).astype(np.float64)) * 2.0**-7
    assert float((np.abs(got - want) / np.maximum(ulp, 1e-30)).max()) <= 1.0


@pytest.mark.parametrize("name", ["Gelu", "ThresholdedRelu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("offset", [0, 3])
def test_streaming_store_path_matches_small_path(name: str, dtype: type, offset: int) -> None:
    op = opsdk.load(name)
    n = (17 << 20) // np.dtype(dtype).itemsize + 13  # > 16 MiB: streaming stores
    x = np.random.default_rng(1).uniform(-4, 4, n + offset).astype(dtype)[offset:]
    y = op(x)
    chunk = slice(n // 2 - 1000, n // 2 + 1000)
    np.testing.assert_array_equal(y[:4099], op(x[:4099]))
    np.testing.assert_array_equal(y[chunk], op(np.ascontiguousarray(x[chunk])))
    np.testing.assert_array_equal(y[-4099:], op(np.ascontiguousarray(x[-4099:])))


def test_thresholded_relu_every_float16_value() -> None:
    op = opsdk.load("ThresholdedRelu")
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    for alpha in (0.0, 1.0, -2.5, 0.1):
        got = op(x, alpha=alpha)
        want = op.reference(x, alpha=np.float16(alpha))
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), alpha


@pytest.mark.parametrize("name", ["Gelu", "Softmax", "LayerNormalization", "ThresholdedRelu"])
def test_results_do_not_depend_on_thread_count(name: str) -> None:
    op = opsdk.load(name)
    x = np.random.default_rng(2).uniform(-3, 3, (512, 1031)).astype(np.float32)
    inputs = [x] + ([np.ones(1031, np.float32)] if name == "LayerNormalization" else [])
    try:
        op.set_num_threads(1)
        one = op(*inputs)
        op.set_num_threads(2)
        two = op(*inputs)
    finally:
        op.set_num_threads(2)
    for a, b in zip(*(t if isinstance(t, tuple) else (t,) for t in (one, two))):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_softmax_axes_and_dtypes(softmax, axis: int, dtype: type) -> None:
    x = np.random.default_rng(3).uniform(-20, 20, (3, 37, 21)).astype(dtype)
    got = softmax(x, axis=axis).astype(np.float64)
    want = softmax.reference(x.astype(np.float64), axis=axis)
    tol = {np.float32: 2e-6, np.float16: 1e-3, ml_dtypes.bfloat16: 8e-3}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=1e-7)
    np.testing.assert_allclose(got.sum(axis=axis), 1.0, rtol=20 * tol)


def test_softmax_is_stable_for_huge_inputs(softmax) -> None:
    x = np.array([[1e30, 1e30 - 1e24, -1e30], [88.0, 89.0, 90.0]], np.float32)
    y = softmax(x)
    assert np.all(np.isfinite(y))
    np.testing.assert_allclose(y, softmax.reference(x.astype(np.float64)), rtol=1e-6)


def test_softmax_nan_or_inf_poisons_only_its_slice(softmax) -> None:
    x = np.zeros((4, 9), np.float32)
    x[1, 3], x[2, 0] = np.nan, np.inf
    x[3, :] = -np.inf
    y = softmax(x)
    assert np.allclose(y[0], 1 / 9)
    assert np.isnan(y[1:]).all()


def test_layer_norm_large_mean_does_not_cancel(layer_norm) -> None:
    rng = np.random.default_rng(4)
    x = (1e4 + rng.standard_normal((8, 4096))).astype(np.float32)
    scale = np.ones(4096, np.float32)
    y, mean, inv = layer_norm(x, scale)
    ry, rmean, rinv = layer_norm.reference(x.astype(np.float64), scale.astype(np.float64))
    np.testing.assert_allclose(mean, rmean, rtol=1e-7)
    np.testing.assert_allclose(inv, rinv, rtol=1e-5)
    np.testing.assert_allclose(y, ry, atol=2e-3)


def test_layer_norm_long_row_accumulates_accurately(layer_norm) -> None:
    x = np.random.default_rng(5).uniform(0, 1, (1, 1 << 22)).astype(np.float32)
    y, mean, inv = layer_norm(x, np.ones(1 << 22, np.float32), axis=1)
    ref_mean = x.astype(np.float64).mean()
    assert abs(float(mean.item()) - ref_mean) / ref_mean < 1e-6


def test_layer_norm_outputs_and_shapes(layer_norm) -> None:
    x = np.random.default_rng(6).standard_normal((2, 3, 4, 5)).astype(np.float32)
    y, mean, inv = layer_norm(x, np.full((4, 5), 2.0, np.float32), np.ones(5, np.float32),
                              axis=2)
    assert y.shape == x.shape and mean.shape == (2, 3, 1, 1) and inv.shape == (2, 3, 1, 1)
    assert mean.dtype == np.float32 and inv.dtype == np.float32
    z = (x - x.mean(axis=(2, 3), keepdims=True)) / np.sqrt(x.var(axis=(2, 3), keepdims=True)
                                                           + 1e-5)
    np.testing.assert_allclose(y, 2 * z + 1, rtol=1e-5, atol=1e-5)


def test_layer_norm_rejects_bad_axis_and_stash_type(layer_norm) -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(opsdk.SpecError, match="axis.*out of range.*rank 2"):
        layer_norm(x, np.ones(3, np.float32), axis=2)
    with pytest.raises(opsdk.SpecError, match="stash_type"):
        layer_norm(x, np.ones(3, np.float32), stash_type=16)
    with pytest.raises(opsdk.SpecError, match="'Scale' has shape \\(4,\\), which does not "
                       "broadcast to X's shape \\(2, 3\\)"):
        layer_norm(x, np.ones(4, np.float32))
    with pytest.raises(opsdk.SpecError, match="'B' has shape \\(1, 2, 3\\)"):
        layer_norm(x, np.ones(3, np.float32), np.ones((1, 2, 3), np.float32))


def _ort_native(op_type: str, inputs: dict[str, np.ndarray], opset: int, **attrs: Any
                ) -> np.ndarray:
    """ONNX Runtime's own implementation of the standard op (first output)."""
    import onnxruntime as ort
    from onnx import helper

    node = helper.make_node(op_type, list(inputs), ["Y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype),
                                                    a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("Y", helper.np_dtype_to_tensor_dtype(
            next(iter(inputs.values())).dtype), None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)[0]


def _ort_layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, axis: int) -> np.ndarray:
    return _ort_native("LayerNormalization", {"X": x, "Scale": scale, "B": bias}, 17,
                       axis=axis, epsilon=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("seed", range(4))
def test_softmax_and_gelu_equal_onnxruntime_on_random_shapes(softmax, gelu, seed: int,
                                                             dtype: type) -> None:
    """The ops' own ONNX Runtime-equality check: random ranks, shapes, axes and modes."""
    rng = np.random.default_rng(100 + seed)
    shape = tuple(int(d) for d in rng.integers(1, 9, int(rng.integers(1, 5))))
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    axis = int(rng.integers(-len(shape), len(shape)))
    tol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(softmax(x, axis=axis).astype(np.float64),
                               _ort_native("Softmax", {"X": x}, 13, axis=axis),
                               rtol=tol, atol=tol, err_msg=f"Softmax {shape} axis {axis}")
    for approximate in ("none", "tanh"):
        np.testing.assert_allclose(gelu(x, approximate=approximate).astype(np.float64),
                                   _ort_native("Gelu", {"X": x}, 20, approximate=approximate),
                                   rtol=tol, atol=tol, err_msg=f"Gelu {approximate} {shape}")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("seed", range(6))
def test_layer_norm_scale_bias_broadcast_over_outer_axes_like_onnxruntime(
    layer_norm, seed: int, dtype: type
) -> None:
    """ONNX lets Scale and B broadcast to all of X, not only to X.shape[axis:]."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(2, 5))
    shape = tuple(int(d) for d in rng.integers(1, 7, rank))
    axis = int(rng.integers(-rank, rank))

    def param() -> np.ndarray:
        keep = int(rng.integers(0, rank + 1))  # a suffix of X's dims, some set to 1
        dims = [d if rng.random() < 0.6 else 1 for d in shape[rank - keep:]]
        return rng.standard_normal(dims).astype(dtype)

    x = rng.standard_normal(shape).astype(dtype)
    scale, bias = param(), param()
    got = layer_norm(x, scale, bias, axis=axis)[0]
    want = _ort_layer_norm(x, scale, bias, axis)
    tol = 1e-5 if dtype == np.float32 else 4e-3
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol,
                               err_msg=f"X{shape} Scale{scale.shape} B{bias.shape} axis {axis}")


def test_layer_norm_full_size_non_contiguous_parameters(layer_norm) -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    scale = rng.standard_normal((6, 4, 3)).astype(np.float32).T  # a transposed view
    bias = rng.standard_normal((3, 4, 6)).astype(np.float32)[:, ::-1, :]
    got = layer_norm(x, scale, bias, axis=-1)[0]
    want = _ort_layer_norm(x, np.ascontiguousarray(scale), np.ascontiguousarray(bias), -1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_softmax_and_gelu_reject_bad_attributes(softmax, gelu) -> None:
    with pytest.raises(opsdk.SpecError, match="axis.*out of range"):
        softmax(np.zeros((2, 3), np.float32), axis=-3)
    with pytest.raises(opsdk.KernelError, match="approximate.*'none' or 'tanh'"):
        gelu(np.zeros(3, np.float32), approximate="exact")


def test_gelu_reference_matches_math_erf() -> None:
    spec = opsdk.load("Gelu").spec
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.0])
    want = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x]
    np.testing.assert_allclose(spec.reference(x), want, rtol=1e-14, atol=1e-300)
