"""<opsdk/vec.h>: the natural-width API (16 lanes on AVX-512, 8 elsewhere) and the 8-lane
one, through the test-only VecProbe operator: documented ulp bounds of exp_nonpositive and
recip from dense float32 sweeps against float64, masked tails, streaming stores and the
float16/bfloat16 block conversions."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import opsdk
from opsdk.registry import load_spec
from opsdk.runtime.cross import CrossOperator, cross_available

PROBE = Path(__file__).resolve().parents[1] / "data" / "vec_probe"
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]


@pytest.fixture(scope="module")
def vec() -> Any:
    return opsdk.load(str(PROBE))


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in float32 ulps of the exact value (subnormals: ulps of 2^-149)."""
    exponent = np.frexp(np.maximum(np.abs(want), 2.0**-126))[1]
    return np.abs(got.astype(np.float64) - want) / np.ldexp(1.0, exponent - 24)


def _host_has_avx512() -> bool:
    try:
        return " avx512f" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def test_natural_width_is_16_lanes_exactly_where_avx512_is_targeted(vec) -> None:
    lanes = int(vec(np.zeros(1, np.float32), fn="lanes")[0])
    if platform.machine() in ("x86_64", "AMD64"):
        assert lanes == (16 if _host_has_avx512() else 8)  # default build: -march=native
    else:
        assert lanes == 8


@pytest.mark.parametrize("fn", ["exp", "exp8"])
def test_exp_nonpositive_within_documented_ulps(vec, fn: str) -> None:
    # every 211th float32 in [-104, -0] (5.3M values), outputs down through the subnormals
    x = np.arange(0x80000000, 0xC2D00001, 211, dtype=np.uint64).astype(np.uint32).view(
        np.float32)
    got = vec(x, fn=fn)
    assert float(_ulps(got, np.exp(x.astype(np.float64))).max()) <= 1.02  # documented: 1.019 (exhaustive)
    special = np.array([-np.inf, np.nan, -0.0, 0.0, -1e-30, -103.0, -104.0, -200.0], np.float32)
    y = vec(special, fn=fn)
    assert y[0] == 0 and np.isnan(y[1]) and y[2] == 1 and y[3] == 1 and y[4] == 1
    assert y[5] == np.float32(2.0**-149) and y[6] == 0 and y[7] == 0  # exp(-103) = 1.8e-45


# documented: 0.527 ulps at 16 lanes (VRCP14PS and a Newton step), 0.5 for the division
@pytest.mark.parametrize(("fn", "bound"), [("recip", 0.53), ("recip8", 0.5)])
def test_recip_within_documented_ulps(vec, fn: str, bound: float) -> None:
    rng = np.random.default_rng(0)
    d = np.concatenate([rng.uniform(1, 2, 1_000_000),
                        np.geomspace(2.0**-125, 2.0**125, 500_000)]).astype(np.float32)
    d = np.concatenate([d, -d])
    got = vec(d, fn=fn)
    assert float(_ulps(got, 1.0 / d.astype(np.float64)).max()) <= bound


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", ["copy", "copy_stream"])
def test_map_covers_every_length_and_alignment(vec, dtype: type, fn: str) -> None:
    base = np.random.default_rng(1).uniform(-9, 9, 300).astype(dtype)
    for offset in range(4):
        for n in [*range(0, 70), 255, 256, 257]:
            x = base[offset:offset + n]
            got = vec(x, fn=fn)
            assert np.array_equal(got.view(np.uint8), x.view(np.uint8)), (offset, n)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_and_bfloat16_conversions_are_exact_at_both_widths(vec, dtype: type) -> None:
    bits = np.arange(1 << 16, dtype=np.uint16)
    x = bits.view(dtype)
    got = vec(x, fn="copy")
    nan = np.isnan(x.astype(np.float32))
    assert np.array_equal(got.view(np.uint16)[~nan], bits[~nan])
    assert np.isnan(got.astype(np.float32)[nan]).all()
    # narrowing float32 -> T: the natural-width and 8-lane paths round alike (exp's float32
    # results are the same at both widths)
    neg = x[(x.astype(np.float32) <= 0) & ~nan]
    assert np.array_equal(vec(neg, fn="exp").view(np.uint16), vec(neg, fn="exp8").view(np.uint16))


def test_bad_function_is_rejected_with_the_choices(vec) -> None:
    with pytest.raises(opsdk.KernelError, match=r"VecProbe.*'fn' is 'cos', expected copy"):
        vec(np.zeros(2, np.float32), fn="cos")


@pytest.mark.slow
@pytest.mark.skipif(not cross_available("aarch64")[0], reason="aarch64 cross toolchain or qemu "
                    "unavailable (scripts/setup.d/20-cross.sh installs both)")
def test_natural_width_api_on_aarch64_neon() -> None:
    """On AArch64 the natural width is 8 NEON lanes: same tails, conversions and bounds."""
    op = CrossOperator(load_spec(PROBE), PROBE)
    x = np.arange(0x80000000, 0xC2D00001, 4099, dtype=np.uint64).astype(np.uint32).view(
        np.float32)
    base = np.random.default_rng(1).uniform(-9, 9, 80).astype(np.float32)
    tails = [base[o:o + n] for o in range(3) for n in range(0, 40)]
    h = np.arange(1 << 16, dtype=np.uint16)
    h = h[~np.isnan(h.view(np.float16).astype(np.float32))]
    calls = [op.call([np.zeros(1, np.float32)], {"fn": "lanes"}), op.call([x], {"fn": "exp"}),
             op.call([h.view(np.float16)], {"fn": "copy"}),
             *(op.call([t], {"fn": "copy_stream"}) for t in tails)]
    lanes, (exp,), (half,), *copies = op.run_many(calls)
    assert int(lanes[0][0]) == 8
    assert float(_ulps(exp, np.exp(x.astype(np.float64))).max()) <= 1.02
    assert np.array_equal(half.view(np.uint16), h)
    for t, got in zip(tails, copies):
        assert np.array_equal(got[0], t)
