"""The npu executor: honest unavailability here, the real numerical check on an NPU host."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.npu.executor import NpuOperator, npu_available
from opsdk.errors import DeviceUnavailable
from tests._helpers.specs import thresholded_relu

AVAILABLE, REASON = npu_available()


def test_reason_names_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if AVAILABLE:
        pytest.skip("an NPU is available: the unavailable path cannot be observed")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    ok, reason = npu_available()
    assert not ok and f"libascendcl.so not found under {tmp_path}" in reason
    monkeypatch.delenv("ASCEND_HOME_PATH")
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    ok, reason = npu_available()
    assert not ok and reason


def test_operator_raises_device_unavailable() -> None:
    if AVAILABLE:
        pytest.skip("an NPU is available")
    with pytest.raises(DeviceUnavailable, match=r"^npu unavailable: "):
        NpuOperator(thresholded_relu())


def test_load_with_device_npu_raises_the_same() -> None:
    import opsdk

    if AVAILABLE:
        pytest.skip("an NPU is available")
    with pytest.raises(DeviceUnavailable, match="npu unavailable: "):
        opsdk.load("ThresholdedRelu", device="npu")


@pytest.mark.npu
@pytest.mark.skipif(not AVAILABLE, reason=f"npu unavailable: {REASON}")
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_thresholded_relu_on_npu_matches_reference(dtype: str) -> None:
    spec = thresholded_relu()
    op = NpuOperator(spec)
    x = np.random.default_rng(0).uniform(-2, 2, (4, 33)).astype(dtype)
    y = op(x, alpha=0.5)
    expected = np.where(x > np.asarray(0.5, dtype), x, np.zeros_like(x))
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, expected)
