"""The cpu executor: dispatch, zero-copy inputs, attributes, errors from C++ and Python."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import opsdk
from opsdk.errors import KernelError, SpecError


@pytest.fixture(scope="module")
def relu():
    return opsdk.load("ThresholdedRelu")


def test_thresholded_relu_float32_and_float16(relu):
    x = np.array([-1.0, 0.5, 1.0, 1.5, np.nan, np.inf], np.float32)
    np.testing.assert_array_equal(relu(x, alpha=1.0), [0, 0, 0, 1.5, 0, np.inf])
    y = relu(x.astype(np.float16), alpha=0.25)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, np.array([0, 0.5, 1.0, 1.5, 0, np.inf], np.float16))


def test_alpha_is_compared_in_the_input_dtype(relu):
    # 0.99995 rounds to 1.0 in float16, so x == 1.0 is not > alpha (as ONNX and NumPy say).
    x = np.array([1.0], np.float16)
    assert relu(x, alpha=0.99995)[0] == relu.reference(x, alpha=0.99995)[0] == 0


def test_lookup_spellings_give_the_same_operator(relu):
    for name in ("ThresholdedRelu", "thresholded_relu", "com.opsdk::ThresholdedRelu"):
        assert opsdk.load(name) is relu


def test_contiguous_input_is_not_copied(probe):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    info = probe(x)
    assert info[0] == x.ctypes.data, "the kernel must see the caller's buffer"
    assert list(info[1:4]) == [2, 1, 12]


def test_strided_input_reaches_a_strided_kernel_without_copy(probe):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[:, ::2]
    info = probe(view)
    assert info[0] == view.ctypes.data and info[2] == 2  # element stride 2


def test_non_contiguous_input_is_made_contiguous_for_other_kernels(probe, relu):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    view = base[:, ::2]
    info = probe(view)  # the float64 kernel does not declare AcceptsStrided
    assert info[0] != view.ctypes.data and info[2] == 1
    x = np.linspace(-2, 2, 40, dtype=np.float32).reshape(5, 8)[::2, 1::3]
    np.testing.assert_array_equal(relu(x, alpha=0.1), relu.reference(x, alpha=0.1))


def test_attributes_reach_the_kernel(probe):
    x = np.zeros(3, np.float32)
    info = probe(x, x, flag=True, count=7, axes=[1, 2, 3], weights=(0.1, 0.2))
    assert list(info[4:]) == [1, 1, 7, 3]
    assert probe(x)[4] == 0  # optional input absent


def test_cpp_exception_becomes_kernel_error_naming_the_op(probe):
    x = np.zeros(3, np.float32)
    with pytest.raises(KernelError, match=r"Probe: boom on purpose"):
        probe(x, mode="throw")
    with pytest.raises(KernelError, match=r"Probe: .*'x': index 1000000 out of range"):
        probe(x, mode="bounds")
    with pytest.raises(KernelError, match=r"tensor 'x' has dtype float32, accessed as int8"):
        probe(x, mode="wrong_type")
    with pytest.raises(KernelError, match=r"optional input 'bias' was not given"):
        probe(x, mode="absent")
    with pytest.raises(KernelError, match=r"tensor 'x' is an input and is read-only"):
        probe(x, mode="write_input")
    assert probe(x)[3] == 3  # and the process goes on


def test_a_throwing_kernel_runs_once_and_raises_kernel_error(probe):
    x = np.zeros(3, np.float32)
    before = probe(x, mode="thrown")[0]
    for n in (1, 2):
        with pytest.raises(KernelError, match=r"^Probe: boom on purpose -- raised by the C\+\+ "
                           r"kernel of Probe \(.*kernel\.cpp\)$") as info:
            probe(x, mode="throw")
        assert isinstance(info.value.__cause__, RuntimeError)
        assert probe(x, mode="thrown")[0] == before + n  # once per call, not re-run
    with pytest.raises(KernelError, match="boom on purpose"):  # the checked path: once too
        probe.run([x], {"mode": "throw"})
    assert probe(x, mode="thrown")[0] == before + 3


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.zeros(3, np.int32),), {}, r"ThresholdedRelu: input 'x' has dtype int32, expected one of float16, float32"),
        ((np.zeros(3, np.float64),), {}, r"input 'x' has dtype float64, expected one of float16, float32"),
        ((), {}, r"ThresholdedRelu: expected 1 inputs \(x\), got 0"),
        ((np.zeros(3, np.float32), np.zeros(3, np.float32)), {}, r"expected 1 inputs"),
        ((np.zeros(3, np.float32),), {"beta": 1.0}, r"unknown attribute 'beta'; the spec declares: alpha"),
        ((np.zeros(3, np.float32),), {"alpha": "high"}, r"attribute 'alpha' expects float, got str"),
        ((np.array(["a"]),), {}, r"input 'x' has dtype <U1, expected one of float16, float32"),
    ],
)
def test_bad_calls_raise_spec_error(relu, args, kwargs, match):
    with pytest.raises(SpecError, match=match):
        relu(*args, **kwargs)


def test_mixed_dtypes_of_one_type_variable(probe):
    with pytest.raises(SpecError, match=r"Probe: input 'bias' has dtype float64 but 'x' has float32"):
        probe(np.zeros(2, np.float32), np.zeros(2, np.float64))


def test_destination_passing_writes_into_given_buffer(relu):
    x = np.array([0.0, 3.0], np.float32)
    out = np.full(2, 7, np.float32)
    res = relu.run([x], {"alpha": 1.0}, outputs=[out])
    assert res[0] is out and list(out) == [0.0, 3.0]
    with pytest.raises(SpecError, match=r"output buffer 'y' is float64\[2\], expected contiguous float32\[2\]"):
        relu.run([x], {}, outputs=[np.zeros(2)])


def test_gil_released_and_threads_agree(relu):
    x = np.random.default_rng(1).normal(size=1 << 16).astype(np.float32)
    want = relu.reference(x, alpha=0.5)
    errors = []

    def worker():
        for _ in range(20):
            if not np.array_equal(relu(x, alpha=0.5), want):
                errors.append("mismatch")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_thread_count_does_not_change_results(relu, threads):
    x = np.random.default_rng(2).normal(size=300_001).astype(np.float32)
    relu.set_num_threads(threads)
    try:
        np.testing.assert_array_equal(relu(x, alpha=0.1), relu.reference(x, alpha=0.1))
    finally:
        relu.set_num_threads(2)


def test_empty_and_scalar_inputs(relu):
    assert relu(np.zeros((0, 3), np.float32)).shape == (0, 3)
    assert relu(np.array(2.0, np.float32)).shape == ()


def test_fast_path_and_checked_path_agree(relu):
    x = np.random.default_rng(3).normal(size=(3, 7)).astype(np.float32)
    fast = relu(x, alpha=0.2)  # plain arguments: the C++ fast path
    checked = relu(x, alpha=np.float32(0.2))  # a NumPy scalar attribute: the Python path
    np.testing.assert_array_equal(fast, checked)
    np.testing.assert_array_equal(relu(x.T, alpha=0.2), relu.reference(x.T, alpha=0.2))


@pytest.mark.parametrize("code", [">f4", ">f2", "<f4"])
def test_non_native_byte_order_is_converted_not_reinterpreted(relu, code):
    x = np.array([0.5, 1.5, 2, 3], code)
    want = relu(x.astype(x.dtype.newbyteorder("=")), alpha=1.0)
    np.testing.assert_array_equal(want, [0, 1.5, 2, 3])
    for got in (relu(x, alpha=1.0), relu.run([x], {"alpha": 1.0})[0]):  # fast and checked paths
        np.testing.assert_array_equal(got, want)
        assert got.dtype.isnative and got.dtype == want.dtype


def test_non_native_byte_order_non_elementwise_op():
    ln = opsdk.load("LayerNormalization")
    rng = np.random.default_rng(0)
    x, s, b = (rng.normal(size=shape).astype(np.float32) for shape in ((3, 8), (8,), (8,)))
    swapped = [a.astype(">f4") for a in (x, s, b)]
    want = ln.run([x, s, b], {})
    got = ln.run(swapped, {})
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_operators_are_called_by_vectorcall(relu):
    from opsdk.runtime.cpu import Operator

    have_vectorcall = 1 << 11  # Py_TPFLAGS_HAVE_VECTORCALL
    assert isinstance(relu, Operator) and type(relu).__flags__ & have_vectorcall
    x = np.array([0.5, 2.0], np.float32)
    # every way of calling reaches the same kernel with the same argument handling
    for got in (relu(x, alpha=1.0), relu(x, **{"alpha": 1.0}), relu(*[x], alpha=1.0),
                Operator.__call__(relu, x, alpha=1.0), relu.__call__(x, alpha=1.0)):
        np.testing.assert_array_equal(got, [0.0, 2.0])
    with pytest.raises(SpecError, match="ThresholdedRelu: unknown attribute 'alhpa'"):
        relu(x, alhpa=1.0)


def test_copies_are_working_operators_over_the_same_module(relu):
    import copy

    x = np.array([0.5, 2.0], np.float32)
    for dup in (copy.copy(relu), copy.deepcopy(relu)):
        assert dup is not relu and dup.module is relu.module and type(dup) is type(relu)
        np.testing.assert_array_equal(dup(x, alpha=1.0), [0.0, 2.0])


def test_outputs_overlapping_inputs_give_numpys_result(relu):
    """Issue 23 item 10: an output buffer that partly overlaps the input (one buffer, shifted
    by one element; Softmax rows shifted by one row) is computed apart and copied, so the
    values equal NumPy's; an exactly aliased elementwise output still runs in place."""
    buf = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
    x = buf[:-1].copy()
    relu.run([buf[:-1]], {"alpha": 1.0}, outputs=[buf[1:]])
    np.testing.assert_array_equal(buf[1:], np.where(x > 1.0, x, 0))
    softmax = opsdk.load("Softmax")
    rows = np.random.default_rng(1).standard_normal((9, 64)).astype(np.float32)
    want = softmax(rows[:-1].copy())
    softmax.run([rows[:-1]], {}, outputs=[rows[1:]])
    np.testing.assert_array_equal(rows[1:], want)
    same = x.copy()
    out = relu.run([same], {"alpha": 1.0}, outputs=[same])
    assert out[0] is same
    np.testing.assert_array_equal(same, np.where(x > 1.0, x, 0))
