"""FusedConvBnRelu beyond the spec-generated tests: against ONNX Runtime's Conv+BN+Relu
with an error bound derived from the data, the BatchNormalization folding it stands for,
edge geometry (tile remainders, K blocks, groups), NaN, threads, and shape errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import opsdk
from opsdk.errors import SpecError

FOLDER = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def op() -> Any:
    return opsdk.load(str(FOLDER))


def _inputs(rng: np.random.Generator, n: int, c: int, hw: tuple[int, int], m: int,
            k: tuple[int, int], group: int = 1, dtype: Any = np.float32
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = rng.uniform(-2, 2, (n, c, *hw)).astype(dtype)
    w = rng.uniform(-0.5, 0.5, (m, c // group, *k)).astype(dtype)
    b = rng.uniform(-1, 1, m).astype(dtype)
    return x, w, b


def _bound(op: Any, x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
           attrs: dict[str, Any]) -> np.ndarray:
    """sum |w| |x| + |b| per output: the scale float32 rounding errors are relative to."""
    absb = None if b is None else np.abs(b.astype(np.float64))
    return np.asarray(op.reference(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)),
                                   absb, **attrs), np.float64)


def _ort_conv_bn_relu(x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
                      bn: tuple[np.ndarray, ...], attrs: dict[str, Any]) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    scale, bias, mean, var = bn
    inits = [numpy_helper.from_array(a, n) for n, a in
             (("w", w), ("scale", scale), ("bias", bias), ("mean", mean), ("var", var))]
    conv_in = ["x", "w"]
    if b is not None:
        inits.append(numpy_helper.from_array(b, "b"))
        conv_in.append("b")
    nodes = [
        helper.make_node("Conv", conv_in, ["c"], **attrs),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"],
                         epsilon=1e-5),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, {"x": x})[0])


def _fold(w: np.ndarray, b: np.ndarray | None, bn: tuple[np.ndarray, ...]
          ) -> tuple[np.ndarray, np.ndarray]:
    """BatchNormalization folded into the convolution, as `opsdk rewrite` does it."""
    scale, bias, mean, var = (a.astype(np.float64) for a in bn)
    s = scale / np.sqrt(var + 1e-5)
    b0 = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
    wf = (w.astype(np.float64) * s[:, None, None, None]).astype(np.float32)
    return wf, ((b0 - mean) * s + bias).astype(np.float32)


GEOMETRIES = [  # n, c, (h, w), m, (kh, kw), attrs
    (1, 3, (9, 9), 8, (3, 3), {"pads": [1, 1, 1, 1]}),
    (2, 16, (10, 7), 13, (1, 1), {}),
    (1, 8, (12, 11), 7, (3, 3), {"strides": [2, 1], "pads": [0, 1, 2, 1]}),
    (1, 6, (15, 15), 9, (3, 3), {"dilations": [2, 3], "pads": [2, 3, 2, 3]}),
    (2, 12, (8, 8), 12, (3, 3), {"group": 3, "pads": [1, 1, 1, 1]}),
    (1, 8, (9, 9), 8, (3, 3), {"group": 8, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    (1, 3, (23, 23), 10, (7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    (1, 40, (6, 6), 20, (3, 3), {"pads": [1, 1, 1, 1]}),  # K = 360 > one K block
    (1, 300, (5, 5), 11, (1, 1), {}),  # K = 300, M = 11 (tile rows 6 + 5)
    # stride-2 panels read as runs (masked loads + permute), with dilation and padding on
    # both sides; stride 3 takes the gather
    (1, 5, (20, 21), 9, (3, 3), {"strides": [2, 2], "dilations": [2, 2], "pads": [2, 1, 2, 1]}),
    (1, 4, (19, 19), 7, (3, 3), {"strides": [3, 3], "pads": [1, 1, 1, 1]}),
    (1, 16, (30, 30), 20, (3, 3), {"pads": [1, 1, 1, 1]}),  # 2-panel tiles, partial last pair
    # the direct depthwise path: channel multiplier 2, asymmetric pads larger than the kernel
    # reach, dilation, strides 1 and 3, 5x5, a plane smaller than the kernel, many planes per task
    (2, 6, (13, 17), 12, (3, 3), {"group": 6, "pads": [3, 0, 1, 4], "dilations": [2, 1]}),
    (1, 5, (16, 16), 5, (5, 5), {"group": 5, "pads": [2, 2, 2, 2], "strides": [3, 1]}),
    (1, 3, (2, 3), 3, (3, 3), {"group": 3, "pads": [1, 1, 1, 1]}),
    (2, 64, (4, 4), 64, (3, 3), {"group": 64, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    (1, 8, (9, 10), 12, (3, 3), {"group": 4, "pads": [1, 2, 0, 1], "strides": [1, 2]}),  # 2 per group
    # the direct path of dense convs with at most 4 input channels (a first layer): odd sizes,
    # stride 2 with a phase longer than the other, 13 output channels (blocks of 8 + 5), batch
    # 2 (one unit after the other), 1 and 4 channels, 7x7 with 3 rows padded, dilation
    (2, 3, (33, 31), 13, (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    (1, 1, (17, 40), 3, (3, 3), {"pads": [1, 0, 1, 2]}),
    (1, 4, (21, 19), 20, (7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    (1, 2, (16, 18), 9, (3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2], "strides": [2, 1]}),
    # PP-OCR's and YOLOv8n's first layer: blocks of 40 rows of 161, a span that 48-wide
    # steps round past the row pitch (the scratch was once sized short of it)
    (1, 3, (320, 320), 16, (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    # depthwise on small planes (7x7 and 14x14 of MobileNet), a multiplier of 4 channels per
    # input, and a plane wider than one step of 64 positions
    # (planes of at most 64 positions go in blocks of 16 channels: 88 = 5 x 16 + 8, stride 2
    # with dilation, a 5x5 kernel on a 3x8 plane, one block of 3 channels)
    (2, 88, (7, 7), 88, (3, 3), {"group": 88, "pads": [1, 1, 1, 1]}),
    (1, 40, (9, 11), 40, (3, 3), {"group": 40, "pads": [2, 1, 0, 2], "strides": [2, 2],
                                  "dilations": [2, 1]}),
    (2, 17, (3, 8), 17, (5, 5), {"group": 17, "pads": [2, 2, 2, 2]}),
    (1, 3, (5, 4), 3, (3, 3), {"group": 3, "pads": [1, 1, 1, 1], "strides": [1, 2]}),
    (1, 24, (14, 14), 24, (5, 5), {"group": 24, "pads": [2, 2, 2, 2], "strides": [2, 2]}),
    (1, 3, (11, 9), 12, (3, 3), {"group": 3, "pads": [1, 1, 1, 1]}),
    (1, 4, (6, 70), 4, (1, 3), {"group": 4, "pads": [0, 1, 0, 1]}),
    # the channel blocks on larger planes (output rows of at most 64 positions, 128 with 5x5):
    # the copy in 16-position runs across rows (13x11), columns and rows the copy crops
    # (stride 2, no right padding), stride 2 with 3x3 and 5x5 (33 = 2 x 16 + 1 channels,
    # batch 2), 5x5 on a 3x100 plane and kernel rows wholly in the padding, rows of 64 (blocks)
    # and 65 (planes) positions
    (2, 20, (13, 11), 20, (3, 3), {"group": 20, "pads": [1, 1, 1, 1]}),
    (1, 18, (11, 10), 18, (3, 3), {"group": 18, "pads": [0, 0, 0, 0], "strides": [2, 2]}),
    (1, 48, (40, 41), 48, (3, 3), {"group": 48, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    (2, 33, (17, 19), 33, (5, 5), {"group": 33, "pads": [2, 1, 2, 2], "strides": [2, 2]}),
    (1, 20, (3, 100), 20, (5, 5), {"group": 20, "pads": [2, 2, 2, 2]}),
    (1, 16, (2, 30), 16, (5, 5), {"group": 16, "pads": [4, 2, 4, 2], "strides": [2, 1]}),
    (1, 24, (30, 64), 24, (3, 3), {"group": 24, "pads": [1, 1, 1, 1]}),
    (1, 8, (5, 65), 8, (3, 3), {"group": 8, "pads": [1, 1, 1, 1]}),
    # rows split into runs of equal length (9 -> 5 + 4 above, 11 -> 6 + 5, 30 -> 8 + 8 + 7 + 7),
    # and runs of 1 and 4 positions
    (2, 16, (1, 1), 16, (5, 5), {"group": 16, "pads": [2, 2, 2, 2]}),
    (1, 21, (7, 7), 21, (5, 5), {"group": 21, "pads": [2, 2, 2, 2], "strides": [2, 2]}),
    # 1x1 on planes of fewer than 16 positions (squeeze-excitation): dot products along C,
    # C not a multiple of 16, M not a multiple of 4, several positions and images
    (2, 144, (1, 1), 574, (1, 1), {}),
    (3, 37, (3, 4), 6, (1, 1), {}),
    (1, 8, (1, 1), 2, (1, 1), {}),
]


@pytest.mark.parametrize("n, c, hw, m, k, attrs", GEOMETRIES)
def test_matches_onnxruntime_conv_bn_relu(op: Any, n: int, c: int, hw: tuple[int, int], m: int,
                                          k: tuple[int, int], attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(n * 1000 + c * 10 + m)
    x, w, b = _inputs(rng, n, c, hw, m, k, attrs.get("group", 1))
    bn = tuple(a.astype(np.float32) for a in (
        rng.uniform(0.5, 1.5, m), rng.uniform(-1, 1, m), rng.uniform(-1, 1, m),
        rng.uniform(0.5, 2, m)))
    want = _ort_conv_bn_relu(x, w, b, bn, attrs)
    wf, bf = _fold(w, b, bn)
    got = op(x, wf, bf, **attrs)
    assert got.shape == want.shape and got.dtype == np.float32
    tol = 2e-6 * (_bound(op, x, wf, bf, op.spec.resolve_attrs(attrs)) + 1.0)
    assert np.all(np.abs(got.astype(np.float64) - want) <= tol)


@pytest.mark.parametrize("n, c, hw, m, k, attrs", GEOMETRIES)
def test_float32_within_the_rounding_bound_of_the_reference(
    op: Any, n: int, c: int, hw: tuple[int, int], m: int, k: tuple[int, int],
    attrs: dict[str, Any],
) -> None:
    rng = np.random.default_rng(7 + m)
    x, w, b = _inputs(rng, n, c, hw, m, k, attrs.get("group", 1))
    full = op.spec.resolve_attrs(attrs)
    want = op.reference(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **full)
    got = op(x, w, b, **attrs)
    # float32 accumulation over K terms: |error| <= K * eps * sum |w x| (a loose classic
    # bound); the kernel must be far inside it.
    kdim = w.shape[1] * w.shape[2] * w.shape[3]
    tol = kdim * 2.0**-24 * (_bound(op, x, w, b, full) + 1e-30)
    assert np.all(np.abs(got - want) <= tol)


def test_float16_accumulates_in_float32(op: Any) -> None:
    rng = np.random.default_rng(3)
    x, w, b = _inputs(rng, 1, 64, (10, 10), 20, (3, 3), dtype=np.float16)  # K = 576
    attrs = {"pads": [1, 1, 1, 1]}
    want = op.reference(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                        **op.spec.resolve_attrs(attrs))
    got = op(x, w, b, **attrs)
    assert got.dtype == np.float16
    # one float16 rounding of a float32 sum: within half an ulp of float16 plus float32
    # accumulation noise; float16 accumulation over 576 terms would be far off
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(err <= np.abs(want) * 2.0**-11 + 1e-3)


@pytest.mark.parametrize("c, m, group, k, attrs", [
    (3, 16, 1, (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # direct, first layer
    (16, 24, 1, (3, 3), {"pads": [1, 1, 1, 1]}),  # direct, 16 channels on a large plane
    (24, 24, 24, (3, 3), {"pads": [1, 1, 1, 1]}),  # depthwise, channel blocks
    (40, 40, 40, (5, 5), {"strides": [2, 2], "pads": [2, 2, 2, 2]}),  # channel blocks, 5x5 s2
    (8, 8, 8, (3, 3), {"pads": [1, 1, 1, 1], "dilations": [1, 2]}),  # channel blocks, dilated
])
def test_float16_direct_paths_round_once(op: Any, c: int, m: int, group: int,
                                         k: tuple[int, int], attrs: dict[str, Any]) -> None:
    rng = np.random.default_rng(4)
    hw = (33, 32) if c == 16 and group == 1 else (13, 15)  # the dense 16-channel path: >= 1024
    x, w, b = _inputs(rng, 2, c, hw, m, k, group, dtype=np.float16)
    full = op.spec.resolve_attrs({**attrs, "group": group})
    want = op.reference(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **full)
    got = op(x, w, b, **attrs, group=group)
    assert got.dtype == np.float16 and got.shape == want.shape
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(err <= np.abs(want) * 2.0**-11 + 1e-4 * _bound(op, x, w, b, full) + 1e-6)


def test_no_bias_and_bias_only(op: Any) -> None:
    rng = np.random.default_rng(5)
    x, w, _ = _inputs(rng, 2, 4, (6, 6), 5, (3, 3))
    got = op(x, w)
    np.testing.assert_allclose(got, op.reference(x, w), rtol=1e-5, atol=1e-5)
    empty_c = np.zeros((1, 0, 4, 4), np.float32)
    bias = np.array([-1, 0.5, 2], np.float32)
    y = op(empty_c, np.zeros((3, 0, 1, 1), np.float32), bias)
    np.testing.assert_array_equal(y, np.broadcast_to(np.maximum(bias, 0)[None, :, None, None],
                                                     (1, 3, 4, 4)))


def test_nan_propagates_through_relu(op: Any) -> None:
    x = np.ones((1, 1, 5, 5), np.float32)
    x[0, 0, 2, 2] = np.nan
    w = -np.ones((1, 1, 3, 3), np.float32)  # negative everywhere: relu gives 0 ...
    y = op(x, w, pads=[1, 1, 1, 1])
    assert np.isnan(y[0, 0, 1:4, 1:4]).all()  # ... except where the NaN is in the window
    assert (y[0, 0, 0, :] == 0).all() and (y[0, 0, :, 0] == 0).all()


def test_threads_do_not_change_the_result(op: Any) -> None:
    rng = np.random.default_rng(11)
    x, w, b = _inputs(rng, 3, 32, (20, 20), 40, (3, 3))
    attrs = {"pads": [1, 1, 1, 1]}
    previous = op.module.get_num_threads()
    try:
        op.set_num_threads(1)
        one = op(x, w, b, **attrs)
        op.set_num_threads(2)
        two = op(x, w, b, **attrs)
    finally:
        op.set_num_threads(previous)
    np.testing.assert_array_equal(one, two)


def _same_on_threads(op: Any, threads: int, x: np.ndarray, w: np.ndarray, b: np.ndarray,
                     attrs: dict[str, Any]) -> np.ndarray:
    """The result on ``threads`` threads, checked equal bit for bit to one thread's."""
    previous = op.module.get_num_threads()
    try:
        op.set_num_threads(1)
        one = op(x, w, b, **attrs)
        op.set_num_threads(threads)
        many = op(x, w, b, **attrs)
    finally:
        op.set_num_threads(previous)
    np.testing.assert_array_equal(one, many)
    return many


@pytest.mark.parametrize("threads", [2, 4])
@pytest.mark.parametrize("n, c, hw, m, k, dtype", [
    (1, 300, (10, 10), 150, (3, 3), np.float32),  # one column block, 11 K blocks (the last short)
    (1, 64, (15, 10), 96, (3, 3), np.float32),  # 150 columns: a full block and a narrow one
    (2, 40, (6, 6), 130, (1, 1), np.float32),  # two images, M not a multiple of the chunks
    (1, 64, (10, 10), 100, (3, 3), np.float16),  # float16: float32 partial sums across K blocks
])
def test_channel_chunks_share_the_packed_rows(op: Any, threads: int, n: int, c: int,
                                              hw: tuple[int, int], m: int,
                                              k: tuple[int, int], dtype: Any) -> None:
    """Few column blocks and many output channels: the chunks of a block read one packing
    (shared_gemm), which must give what one thread gives, bit for bit, and the reference."""
    rng = np.random.default_rng(c + m)
    x, w, b = _inputs(rng, n, c, hw, m, k, dtype=dtype)
    attrs = {"pads": [k[0] // 2] * 4}
    many = _same_on_threads(op, threads, x, w, b, attrs)
    full = op.spec.resolve_attrs(attrs)
    want = op.reference(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **full)
    scale = _bound(op, x, w, b, full)
    tol = scale * (2.0**-11 if dtype == np.float16 else c * k[0] * k[1] * 2.0**-24) + 1e-3
    assert np.all(np.abs(many.astype(np.float64) - want) <= tol)


@pytest.mark.parametrize("threads", [2, 4])
@pytest.mark.parametrize("n, c, hw, m, k, attrs", [
    (2, 3, (31, 29), 10, (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # first layers
    (3, 4, (17, 16), 13, (5, 5), {"dilations": [2, 1], "pads": [4, 2, 4, 2]}),
    (1, 4, (12, 13), 6, (3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),  # 2 per group, 2 units
    (1, 16, (34, 33), 20, (3, 3), {"pads": [1, 1, 1, 1]}),  # 16 channels, 1122 positions
    (2, 9, (40, 40), 7, (3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}),
])
def test_direct_path_over_few_images_splits_rows(op: Any, threads: int, n: int, c: int,
                                                 hw: tuple[int, int], m: int,
                                                 k: tuple[int, int],
                                                 attrs: dict[str, Any]) -> None:
    """Fewer (image, group) units than twice the threads: every unit is padded in one
    parallel section and its channel and row blocks computed in another."""
    rng = np.random.default_rng(n + c + m)
    x, w, b = _inputs(rng, n, c, hw, m, k, attrs.get("group", 1))
    many = _same_on_threads(op, threads, x, w, b, attrs)
    full = op.spec.resolve_attrs(attrs)
    want = op.reference(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **full)
    tol = w[0].size * 2.0**-24 * (_bound(op, x, w, b, full) + 1e-30)
    assert np.all(np.abs(many - want) <= tol)


def test_non_contiguous_inputs(op: Any) -> None:
    rng = np.random.default_rng(13)
    x, w, b = _inputs(rng, 1, 6, (9, 9), 4, (3, 3))
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)  # a view
    assert not xt.flags.c_contiguous
    np.testing.assert_array_equal(op(xt, w, b), op(x, w, b))


def test_writes_into_a_given_output(op: Any) -> None:
    rng = np.random.default_rng(17)
    x, w, b = _inputs(rng, 1, 4, (6, 6), 3, (3, 3))
    out = np.full((1, 3, 4, 4), np.nan, np.float32)
    res = op.run([x, w, b], {}, [out])
    assert res[0] is out
    np.testing.assert_allclose(out, op.reference(x, w, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shapes, attrs, match", [
    (((1, 6, 8, 8), (4, 4, 3, 3)), {}, r"input 'w' has 4 input channels per group.*C / group"),
    (((1, 6, 8, 8), (5, 3, 3, 3)), {"group": 2}, r"M=5 output channels.*group=2"),
    (((1, 6, 8, 8), (4, 6, 3, 3), (3,)), {}, r"input 'b' has shape \(3,\), expected \(4,\)"),
    (((1, 6, 8, 8), (4, 6, 3, 3)), {"pads": [1, 1]}, r"'pads' must be 4 ints"),
    (((1, 6, 8, 8), (4, 6, 3, 3)), {"strides": [0, 1]}, r"'strides' must be 2 ints >= 1"),
    (((1, 6, 2, 8), (4, 6, 3, 3)), {}, r"H=2 \(padded\) is smaller than the dilated kernel"),
    (((1, 6, 8), (4, 6, 3, 3)), {}, r"input 'x' has rank 3"),
])
def test_shape_errors_name_the_input_and_the_fix(
    op: Any, shapes: tuple[tuple[int, ...], ...], attrs: dict[str, Any], match: str
) -> None:
    arrays = [np.zeros(s, np.float32) for s in shapes]
    with pytest.raises(SpecError, match=match):
        op(*arrays, **attrs)
