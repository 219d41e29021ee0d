"""Output memory reuse of the cpu executor: reused once released, never while alive."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import opsdk
from opsdk.runtime.cpu import output_pool_stats, set_output_pool_limit

BIG = 1 << 18  # 1 MiB of float32: above the pool's 256 KiB threshold


@pytest.fixture(scope="module")
def relu():
    return opsdk.load("ThresholdedRelu")


def _addr(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _x(seed: int, n: int = BIG) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=n).astype(np.float32)


def test_released_output_memory_is_reused(relu):
    x = _x(0)
    y = relu(x, alpha=0.5)
    first, before = _addr(y), output_pool_stats()
    del y
    y = relu(x, alpha=0.5)
    assert _addr(y) == first, "a released output block must be handed out again"
    after = output_pool_stats()
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"]
    np.testing.assert_array_equal(y, relu.reference(x, alpha=0.5))


def test_live_outputs_are_never_handed_out_twice(relu):
    xs = [_x(i) for i in range(8)]  # more calls than blocks kept per size
    ys = [relu(x, alpha=0.25) for x in xs]
    for i, a in enumerate(ys):
        for b in ys[i + 1 :]:
            assert not np.shares_memory(a, b)
    for x, y in zip(xs, ys):  # no later call wrote into an earlier, still held output
        np.testing.assert_array_equal(y, relu.reference(x, alpha=0.25))


@pytest.mark.parametrize(
    "keep",
    [
        lambda y: y[10:],  # a view
        lambda y: y.reshape(-1, 4)[:, 1],  # a strided view of a view
        lambda y: memoryview(y),  # a buffer export
        lambda y: np.frombuffer(y, np.uint8),  # an array over the buffer protocol
    ],
    ids=["view", "strided", "memoryview", "frombuffer"],
)
def test_anything_that_reaches_an_output_keeps_its_memory(relu, keep):
    x1, x2 = _x(1), _x(2)
    y = relu(x1, alpha=0.0)
    want = y.copy()
    held = keep(y)
    del y
    gc.collect()
    for _ in range(3):
        z = relu(x2, alpha=0.0)
        assert not np.shares_memory(np.asarray(held), z)
    np.testing.assert_array_equal(np.frombuffer(bytes(held), np.float32), np.frombuffer(
        bytes(np.ascontiguousarray(keep(want))), np.float32))


def test_pooled_outputs_are_ordinary_writeable_arrays(relu):
    y = relu(_x(3), alpha=0.5)
    assert y.flags.c_contiguous and y.flags.writeable and y.flags.aligned
    assert _addr(y) % 64 == 0
    y[:] = 1.0  # the caller owns it
    assert float(y.sum()) == BIG


def test_checked_path_and_non_elementwise_ops_use_the_pool():
    softmax = opsdk.load("Softmax")
    x = _x(4).reshape(256, 1024)
    y = softmax.run([x], {"axis": -1})[0]
    z = softmax(x, axis=-1)  # y is alive: another block
    assert not np.shares_memory(y, z)
    blocks, hits = {_addr(y), _addr(z)}, output_pool_stats()["hits"]
    del y, z
    again = softmax(x, axis=-1)
    assert _addr(again) in blocks and output_pool_stats()["hits"] == hits + 1
    np.testing.assert_allclose(again.sum(axis=-1), 1.0, rtol=1e-5)


def test_one_pool_serves_every_operator_module(relu):
    gelu = opsdk.load("Gelu")
    x = _x(5)
    y = relu(x, alpha=0.5)
    block = _addr(y)
    del y
    z = gelu(x)  # same byte size, another module: the block relu released
    assert _addr(z) == block
    assert gelu.module.output_pool_stats() == relu.module.output_pool_stats()


def test_limit_zero_turns_pooling_off_and_frees_the_cache(relu):
    x = _x(6)
    try:
        set_output_pool_limit(0)
        assert output_pool_stats()["cached_bytes"] == 0
        hits = output_pool_stats()["hits"]
        for _ in range(3):
            np.testing.assert_array_equal(relu(x, alpha=0.5), relu.reference(x, alpha=0.5))
        assert output_pool_stats()["hits"] == hits
    finally:
        set_output_pool_limit(1 << 30)
    with pytest.raises(ValueError, match=r"nbytes must be 0 to 2\*\*63-1"):
        set_output_pool_limit(-1)


def test_threads_calling_at_once_never_share_an_output(relu):
    xs = [_x(10 + i) for i in range(4)]
    wants = [relu.reference(x, alpha=0.5) for x in xs]
    errors: list[str] = []

    def worker(i: int) -> None:
        held = []
        for _ in range(10):
            y = relu(xs[i], alpha=0.5)
            held = [y] + held[:2]  # keep a few alive, release older ones
            for h in held:
                if not np.array_equal(h, wants[i]):
                    errors.append(f"thread {i}: an output it holds was overwritten")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
