"""GridSample against PyTorch's torch.nn.functional.grid_sample, the oracle of the models
GridSample comes from: every mode, padding and align_corners, 4-D and 5-D, random grids,
coordinates far outside, exact half-integers (nearest's rounding), NaN, Inf and huge values.

Needs torch's CPU build (``scripts/setup.d/40-torch-cpu.sh``, or ``pip install
opsdk[oracle]`` with a CPU wheel); skipped with the reason where it is missing.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import opsdk

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup.d/40-torch-cpu.sh)")
F = torch.nn.functional

PADDINGS = ("zeros", "border", "reflection")
TORCH_MODE = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}
SPECIALS = [np.nan, np.inf, -np.inf, 1e20, -1e20, 3e9, -3e9, 1e7, -1e7, 50.0, -50.0, 1.0, -1.0]
# PyTorch has no 5-D bicubic
CASES = [(r, m, p, a) for r, m, p, a in itertools.product((4, 5), TORCH_MODE, PADDINGS, (0, 1))
         if not (r == 5 and m == "cubic")]


@pytest.fixture(scope="module")
def op() -> Any:
    return opsdk.load("GridSample")


def torch_grid_sample(x: np.ndarray, grid: np.ndarray, mode: str, padding_mode: str,
                      align_corners: int) -> np.ndarray:
    return F.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode=TORCH_MODE[mode],
                         padding_mode=padding_mode, align_corners=bool(align_corners)).numpy()


def grids(rng: np.random.Generator, rank: int, sizes: tuple[int, ...], align: int) -> list[np.ndarray]:
    out_shape = (2,) + tuple(int(v) for v in rng.integers(1, 7, rank - 2)) + (rank - 2,)
    half = rng.integers(-3, 12, out_shape) + 0.5  # unnormalised half-integers, per axis
    d = np.array(sizes[::-1], np.float64)
    exact = 2 * half / np.maximum(d - 1, 1) - 1 if align else (2 * half + 1) / d - 1
    return [rng.uniform(-1.2, 1.2, out_shape), rng.uniform(-40, 40, out_shape), exact]


def assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"NaN positions, {what}")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("rank, mode, padding_mode, align_corners", CASES)
def test_random_and_far_and_half_integer_coordinates(op: Any, rank: int, mode: str,
                                                     padding_mode: str, align_corners: int) -> None:
    rng = np.random.default_rng(rank * 100 + len(mode) * 10 + len(padding_mode) + align_corners)
    for trial in range(4):
        sizes = tuple(int(v) for v in rng.integers(1, 8, rank - 2))  # 1-pixel axes included
        x = rng.standard_normal((2, 3) + sizes).astype(np.float32)
        for g in grids(rng, rank, sizes, align_corners):
            grid = g.astype(np.float32)
            attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
            want = torch_grid_sample(x, grid, **attrs)
            assert_same(op(x, grid, **attrs), want, f"kernel, x{x.shape}, trial {trial}")
            assert_same(op.reference(x, grid, **attrs), want, f"reference, x{x.shape}")


@pytest.mark.parametrize("rank, mode, padding_mode, align_corners", CASES)
def test_nan_inf_and_huge_coordinates(op: Any, rank: int, mode: str, padding_mode: str,
                                      align_corners: int) -> None:
    """PyTorch's CPU kernels: 4-D (vectorised) and 5-D (scalar) differ here; both followed."""
    sizes = (4, 5) if rank == 4 else (2, 4, 5)
    x = np.arange(1, 1 + int(np.prod(sizes)), dtype=np.float32).reshape((1, 1) + sizes)
    base = [0.3, 0.1, 0.2][: rank - 2]
    points = []
    for axis in range(rank - 2):
        for v in SPECIALS:
            p = list(base)
            p[axis] = v
            points.append(p)
    grid = np.array(points, np.float32).reshape((1,) + (1,) * (rank - 3) + (len(points), rank - 2))
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    want = torch_grid_sample(x, grid, **attrs)
    assert_same(op(x, grid, **attrs), want, "kernel")
    assert_same(op.reference(x, grid, **attrs), want, "reference")


def test_cubic_border_clamps_taps_where_onnx_reference_differs(op: Any) -> None:
    """The case that differs from ONNX's reference by up to ~0.2: border, cubic, near edges."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, (1, 2, 6, 7)).astype(np.float32)
    grid = rng.uniform(-1.4, 1.4, (1, 9, 9, 2)).astype(np.float32)
    want = torch_grid_sample(x, grid, "cubic", "border", 0)
    assert_same(op(x, grid, mode="cubic", padding_mode="border"), want, "kernel")
