"""Generated AI Core kernels: an operator the generator has never seen, its refusals, and
lengths around the Unified Buffer, on opsdk's Ascend C model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from opsdk.ascend.ascendc import GenerateRefused, generate
from opsdk.ascend.ascendc.model import AscendcModel
from opsdk.errors import DeviceUnavailable
from opsdk.registry import load_spec

SPEC = '''
from opsdk.spec import Attr, Input, OpSpec, Output, TFloat

SPEC = OpSpec("SoftClip", domain="com.test", inputs=[Input("a"), Input("b")],
              outputs=[Output("out")], attrs=[Attr("limit", "float", 3.0)], types={"T": TFloat})


@SPEC.register_function
def _f(fb):
    a, b = fb.input("a"), fb.input("b")
    lim = fb.op("CastLike", fb.op("Constant", value_float=fb.attr("limit")), a)
    s = fb.op("Mul", fb.op("Sigmoid", a), fb.op("Pow", b, fb.op("Constant", value_float=2.0)))
    r = fb.op("Sub", fb.op("Abs", a), fb.op("Reciprocal", fb.op("Add", fb.op("Exp", b),
              fb.op("Constant", value_float=1.0))))
    w = fb.op("Where", fb.op("Less", a, b), s, fb.op("Neg", r))
    return fb.op("Clip", w, fb.op("Neg", lim), lim)
'''


def _expected(a: np.ndarray, b: np.ndarray, limit: float) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    s = 1 / (1 + np.exp(-a64)) * b64**2
    r = np.abs(a64) - 1 / (np.exp(b64) + 1)
    lim = float(np.asarray(limit, a.dtype))
    return np.clip(np.where(a64 < b64, s, -r), -lim, lim)


@pytest.fixture(scope="module")
def soft_clip(tmp_path_factory: pytest.TempPathFactory) -> AscendcModel:
    folder = tmp_path_factory.mktemp("soft_clip")
    (folder / "spec.py").write_text(SPEC)
    return AscendcModel(folder, load_spec(folder), seed=3)


@pytest.mark.parametrize("n", [0, 1, 7, 64, 1000, 200_003])  # 200_003 floats > the 192 KiB UB
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_unseen_operator_matches_numpy(soft_clip: AscendcModel, n: int, dtype: type) -> None:
    rng = np.random.default_rng(n)
    a, b = (rng.uniform(-4, 4, n).astype(dtype) for _ in range(2))
    (out,) = soft_clip.run([a, b], {"limit": 2.5})
    assert out.shape == (n,) and out.dtype == dtype
    tol = 2e-3 if dtype == np.float16 else 2e-6
    np.testing.assert_allclose(out.astype(np.float64), _expected(a, b, 2.5), rtol=tol, atol=tol)


def test_broadcast_is_refused_with_the_reason(soft_clip: AscendcModel) -> None:
    with pytest.raises(DeviceUnavailable, match=r"input 'b' has shape \[1\], the output \[5\]"):
        soft_clip.run([np.ones(5, np.float32), np.ones(1, np.float32)], {})


def test_non_elementwise_decomposition_is_refused() -> None:
    spec = load_spec(Path(__file__).parents[2] / "operators" / "softmax")
    with pytest.raises(GenerateRefused, match="Softmax: no AI Core kernel generated"):
        generate(spec)


def test_thresholded_relu_kernel_is_source_compatible() -> None:
    k = generate(load_spec(Path(__file__).parents[2] / "operators" / "thresholded_relu"))
    src = k.source
    assert '#include "kernel_operator.h"' in src and "GET_TILING_DATA(tilingData, tiling);" in src
    assert ('extern "C" __global__ __aicore__ void thresholded_relu(GM_ADDR x, GM_ADDR y, '
            "GM_ADDR workspace, GM_ADDR tiling)") in src
    assert {f.name for f in k.tiling.fields} == {"blockLength", "lastBlockLength", "tileLength",
                                                  "tileNum"}


@pytest.mark.parametrize("name", ["opsdk.ascend.ascendc._tiling", "opsdk.ascend.ascendc",
                                  "opsdk._decomposition", "opsdk.ascend.socs",
                                  "opsdk.ascend.ascendc._kernels", "opsdk.ascend.ascendc._estimate",
                                  "opsdk.ascend.ascendc._tune", "opsdk.ascend.ascendc._compiler"])
def test_docstring_examples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest
    import importlib

    monkeypatch.chdir(Path(__file__).parents[2])
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_tiling_description_errors_name_the_step() -> None:
    from opsdk.ascend.ascendc import Tiling, TilingField
    from opsdk.errors import SpecError

    with pytest.raises(SpecError, match="reads 'rows' before it is defined"):
        Tiling("Demo", (TilingField("n"),), (("n", "rows * 2"),), "1")
    with pytest.raises(SpecError, match=r"may use \+ - \* and the functions floordiv"):
        Tiling("Demo", (TilingField("n"),), (("n", "totalLength / 2"),), "1")
    with pytest.raises(SpecError, match=r"tiling fields \['m'\] have no step"):
        Tiling("Demo", (TilingField("m"),), (("n", "totalLength"),), "1")
