"""The shipped operators' AI Core kernels on opsdk's Ascend C model: the full validation
harness per operator, and lengths the harness does not reach (rows larger than the Unified
Buffer, one element, zero elements)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc.model import AscendcModel

OPS = Path(__file__).parents[2] / "operators"


@pytest.mark.parametrize("op", ["thresholded_relu", "gelu", "softmax", "layer_normalization"])
def test_full_harness_on_ascendc_model(op: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(OPS / op), "-q", "-p", "no:cacheprovider",
         "--opsdk-device", "ascendc-model", "--opsdk-seed", "5"],
        capture_output=True, text=True, check=False)
    # 0 failed: the harness's declared expected failures (strict xfails) are counted apart
    summary = re.search(r"opsdk: (\d+) cases compared, 0 failed\b", proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert summary is not None and int(summary.group(1)) >= 20


@pytest.fixture(scope="module")
def softmax() -> AscendcModel:
    return AscendcModel(OPS / "softmax", seed=2)


@pytest.fixture(scope="module")
def layer_norm() -> AscendcModel:
    return AscendcModel(OPS / "layer_normalization", seed=2)


@pytest.mark.parametrize("shape", [(2, 100_003), (3, 1), (1, 0), (0, 5)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_softmax_rows_of_any_length(softmax: AscendcModel, shape: tuple[int, ...],
                                    dtype: type) -> None:
    x = np.random.default_rng(1).uniform(-20, 20, shape).astype(dtype)
    (y,) = softmax.run([x], {"axis": -1})
    x64 = x.astype(np.float64)
    e = np.exp(x64 - (x64.max(axis=-1, keepdims=True) if x.size else 0))
    want = e / e.sum(axis=-1, keepdims=True) if x.size else e
    tol = 1e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol * 1e-3)


@pytest.mark.parametrize("d", [70_001, 1])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_layer_norm_rows_of_any_length(layer_norm: AscendcModel, d: int, dtype: type) -> None:
    rng = np.random.default_rng(d)
    x = rng.normal(3.0, 2.0, (3, d)).astype(dtype)
    scale, bias = rng.normal(size=d).astype(dtype), rng.normal(size=d).astype(dtype)
    y, mean, inv = layer_norm.run([x, scale, bias], {"epsilon": 1e-5})
    x64 = x.astype(np.float64)
    m = x64.mean(axis=-1, keepdims=True)
    s = 1 / np.sqrt(((x64 - m) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(mean, m, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(inv, s, rtol=1e-4)
    tol = 1e-2 if dtype == np.float16 else 1e-4
    np.testing.assert_allclose(y.astype(np.float64), (x64 - m) * s * scale + bias, atol=tol, rtol=tol)


def test_non_last_axis_is_refused_with_the_reason(softmax: AscendcModel) -> None:
    from opsdk.errors import DeviceUnavailable

    with pytest.raises(DeviceUnavailable, match="last axis only; this call has axis=0 of rank 2"):
        softmax.run([np.ones((3, 4), np.float32)], {"axis": 0})
