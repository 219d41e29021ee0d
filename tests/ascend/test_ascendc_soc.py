"""AI Core kernels per SoC: the platform facts of the toolkit, tilings that keep clear of
Select's scratch and give the high-level APIs their tmp space, the shapes that went wrong on
the chip, per-SoC refusals, and the generated tanh and bfloat16 rounding."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from opsdk.ascend.aicore_apis import UB_RESERVED, aicore_arch, missing_apis
from opsdk.ascend.ascendc._kernels import aicore_kernel
from opsdk.ascend.ascendc._tiling import evaluate
from opsdk.ascend.ascendc.model import AscendcModel
from opsdk.ascend.socs import CannArgError, core_resources, soc_facts, soc_table
from opsdk.dtypes import to_numpy
from opsdk.errors import DeviceUnavailable
from opsdk.registry import find_operator, load_spec
from tests._helpers.cann_project import render_project


def test_platform_facts_come_from_the_toolkit() -> None:
    assert core_resources("Ascend310B1") == (253_952, 1)
    assert core_resources("Ascend910B1") == (196_608, 48)
    assert core_resources("Ascend910B2") == (196_608, 48)
    assert core_resources("Ascend910B3") == (196_608, 40)
    assert core_resources("Ascend310P3") == (262_144, 7)
    assert soc_facts("Ascend910B1")["cube_cores"] == 24
    assert core_resources("Ascend910A") == (262_144, 1)  # no vector cores: GetCoreNumAiv() = 0
    # the estimate's clock and GM rates: cube_freq + [AICoreMemoryRates] on 910B3, vec_freq +
    # [VectorCoreMemoryRates] on 310P3
    b3, p3 = soc_facts("Ascend910B3"), soc_facts("Ascend310P3")
    assert (b3["freq_mhz"], b3["gm_read_bpc"], b3["gm_write_bpc"], b3["ub_to_gm_bpc"], b3["rates_of"]) == (
        1800, 32, 32, 64, "AICore")
    # the Cube's buffers ([AICoreSpec]), and Ascend 950 (AIC-C-310) from its own .ini
    assert [b3[k] for k in ("l1_bytes", "l0a_bytes", "l0b_bytes", "l0c_bytes", "bt_bytes")] == [
        524_288, 65_536, 65_536, 131_072, 1024]
    a5 = soc_facts("Ascend910_95")
    assert (a5["aic_version"], a5["l0c_bytes"], a5["bt_bytes"], a5["vector_cores"]) == (
        "AIC-C-310", 262_144, 4096, 64)
    assert (p3["freq_mhz"], p3["gm_read_bpc"], p3["gm_write_bpc"], p3["rates_of"]) == (
        1000, 9, 9, "VectorCore")


@pytest.mark.parametrize("soc", sorted(soc_table()))
def test_tilings_stay_below_select_scratch(soc: str) -> None:
    try:
        arch = aicore_arch(soc)
    except CannArgError:
        assert soc in ("Ascend310", "Ascend910_95")  # no Ascend C CPU-debug target in CANN 8.1.RC1
        return
    assert soc_facts(soc)["ub_bytes"] - UB_RESERVED <= arch.tmp_ub_offset


def _ub_used(op: str, n: int, soc: str, type_bytes: int, last: int) -> int:
    """Unified Buffer bytes the kernel's TPipe takes: every byte the tiling budgets."""
    entry = find_operator(op)
    kernel = aicore_kernel(entry.spec, entry.folder)
    ub, cores = core_resources(soc)
    facts = {"totalLength": n, "coreNum": cores, "ubBytes": ub, "typeBytes": type_bytes,
             "lastDim": last}
    _, fields = evaluate(kernel.tiling, facts)
    return int(fields["tileLength"])


@pytest.mark.parametrize("op", ["ThresholdedRelu", "Gelu", "Softmax", "LayerNormalization"])
@pytest.mark.parametrize("soc", ["Ascend910B1", "Ascend910B3", "Ascend310B1"])
@pytest.mark.parametrize("n", [64, 80_000, 470_000, 4_000_000])
def test_every_tile_leaves_the_reserve(op: str, soc: str, n: int) -> None:
    tile = _ub_used(op, n, soc, 2, 1024 if op in ("Softmax", "LayerNormalization") else n)
    ub, _ = core_resources(soc)
    per = {"ThresholdedRelu": 2 * 2 * 2, "Gelu": 2 * 2 * 2, "Softmax": 4 * 2 + 12,
           "LayerNormalization": 6 * 2 + 12}[op]
    assert tile * per < ub - UB_RESERVED


def test_thresholded_relu_float16_470000_elements() -> None:
    op = AscendcModel(find_operator("ThresholdedRelu").folder, soc="Ascend910B3")
    x = np.random.default_rng(0).uniform(-3, 3, 470_000).astype(np.float16)
    (y,) = op.run([x], {"alpha": 1.0})
    np.testing.assert_array_equal(y, np.where(x > np.float16(1.0), x, np.float16(0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))


@pytest.mark.parametrize("dtype, tol", [("float16", 2e-3), ("bfloat16", 1.6e-2)])
@pytest.mark.parametrize("soc", ["Ascend910B3", "Ascend910B1"])
def test_gelu_tanh_1_80_1024(soc: str, dtype: str, tol: float) -> None:
    op = AscendcModel(find_operator("Gelu").folder, soc=soc)
    x = np.random.default_rng(1).uniform(-4, 4, (1, 80, 1024)).astype(to_numpy(dtype))
    (y,) = op.run([x], {"approximate": "tanh"})
    want = _gelu_tanh(x.astype(np.float32))
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("unit, api", [("ascend310p", "Cast of bfloat16_t"), ("ascend310b", "Erf"),
                                       ("ascend910", "DataCopyPad")])
def test_cann_project_refuses_a_soc_without_the_kernels_apis(unit: str, api: str) -> None:
    spec = find_operator("Gelu").spec
    with pytest.raises(CannArgError, match=rf"(?s){unit}: {api}: not in the Ascend C.*--engine aicpu"):
        render_project(spec, socs=[unit], engine="aicore")
    assert "op_kernel/gelu.cpp" in render_project(spec, socs=["ascend910b", "ascend910_93"],
                                                  engine="aicore")


def test_bfloat16_forms_the_soc_lacks() -> None:
    kernel = aicore_kernel(find_operator("Softmax").spec, find_operator("Softmax").folder)
    assert not missing_apis(kernel.source, "Ascend910B3", ["bfloat16"])
    assert not missing_apis(kernel.source, "Ascend310B1", ["float16", "float32"])
    assert [w.split(":")[0] for w in missing_apis(kernel.source, "Ascend310B1", ["bfloat16"])] \
        == ["DataCopyPad of bfloat16_t"]
    assert any("Cast of bfloat16_t" in w for w in
               missing_apis(kernel.source.replace("DataCopyPad", "X"), "Ascend310P3", ["bfloat16"]))


@pytest.mark.parametrize("soc", ["Ascend910A", "Ascend310P3", "Ascend910B3", "Ascend310B1"])
def test_a_refusal_cites_the_header_of_its_own_family(soc: str) -> None:
    """Every API line names the implementation folder of the SoC's family (CANN 8.1.RC1 has
    each of them for these headers), and an API the family lacks is told once."""
    from opsdk.ascend.aicore_apis import API_ARCHS, aicore_arch

    calls = "".join(f"{api}(x); " for api in API_ARCHS)
    why = missing_apis(calls, soc, ["bfloat16"])
    own = aicore_arch(soc).impl_dir
    cited = {m for w in why for m in re.findall(r"basic_api/impl/(\w+)/", w)}
    assert cited <= {own}, (soc, why)
    lacking = [w.split(":")[0] for w in why]
    assert len(lacking) == len(set(lacking)) and not any(
        w.endswith(" of bfloat16_t") and w.split(" of ")[0] in lacking for w in lacking)


def test_model_refuses_an_api_the_soc_lacks() -> None:
    op = AscendcModel(find_operator("Gelu").folder, soc="Ascend310B1")
    with pytest.raises(DeviceUnavailable, match=r"Erf: not in the Ascend C of Ascend310B1.*erf\.h"):
        op.run([np.ones(8, np.float32)], {})
    ok = AscendcModel(find_operator("ThresholdedRelu").folder, soc="Ascend310B1")
    (y,) = ok.run([np.arange(100, dtype=np.float32)], {"alpha": 50.0})
    assert y[50] == 0 and y[51] == 51


TANH = '''
from opsdk.spec import Input, OpSpec, Output, TFloat

SPEC = OpSpec("MyTanh", domain="com.test", inputs=[Input("x")], outputs=[Output("y")],
              types={"T": TFloat})


@SPEC.register_function
def _f(fb):
    x = fb.input("x")
    half = fb.op("Cast", fb.op("Constant", value_float=1.005859375), to=16)  # bfloat16
    return fb.op("Mul", fb.op("Tanh", x), fb.op("CastLike", half, x))
'''


def test_generated_tanh_and_bfloat16_constant(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "spec.py").write_text(TANH)
    op = AscendcModel(tmp_path, load_spec(tmp_path))
    x = np.concatenate([np.geomspace(1e-7, 0.3, 500), -np.geomspace(1e-7, 20, 500),
                        np.linspace(-9, 9, 200), [0.0, 0.25, -0.25]]).astype(np.float32)
    (y,) = op.run([x], {})
    want = np.tanh(x.astype(np.float64)) * 1.0078125  # the constant rounds to nearest even
    rel = np.abs(y - want) / np.maximum(np.abs(want), 1e-30)
    assert rel.max() < 4e-7, (x[np.argmax(rel)], rel.max())


def test_cli_on_310p_takes_aicore_where_the_dtypes_allow_and_refuses_bfloat16(
        tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """The generated kernels copy whole blocks on 310P (no DataCopyPad there): ThresholdedRelu
    (float16, float32) builds for AI Core; Gelu's bfloat16 needs a Cast 310P lacks."""
    from opsdk.cli import main

    for op, code in (("ThresholdedRelu", 0), ("Gelu", 1)):
        folder = str(find_operator(op).folder)
        cmd = ["cann", folder, "--soc", "Ascend310P3", "--cann", "8.1.RC1"]
        assert main([*cmd, "-o", str(tmp_path / op), "--engine", "aicore"]) == code
    assert (tmp_path / "ThresholdedRelu" / "op_kernel" / "thresholded_relu.cpp").is_file()
    err = capsys.readouterr().err
    assert "ascend310p: Cast of bfloat16_t: not in the Ascend C" in err and "--engine aicpu" in err
    # the header of the family the message speaks of (__CCE_AICORE__ = 200), not dav_m300's
    assert "basic_api/impl/dav_m200/kernel_operator_vec_vconv_impl.h" in err
    assert "dav_m300" not in err and "dav_*" not in err
    assert main(["cann", str(find_operator("Gelu").folder), "--soc", "Ascend310P3", "--cann",
                 "8.1.RC1", "-o", str(tmp_path / "b"), "--engine", "aicpu"]) == 0


def test_default_engine_is_aicpu_where_a_soc_lacks_the_kernels_apis() -> None:
    from opsdk.ascend.project._project import default_engine

    gelu = find_operator("Gelu")
    assert default_engine(gelu.spec, gelu.folder, ["ascend910b"])[0] == "both"
    engine, why = default_engine(gelu.spec, gelu.folder, ["ascend910b", "ascend310b"])
    assert engine == "aicpu" and "ascend310b: Erf: not in the Ascend C" in why


@pytest.mark.parametrize("op", ["Gelu", "ThresholdedRelu"])
def test_generated_high_level_calls_pass_a_shared_tmp_buffer(op: str) -> None:
    """Never the tmp-buffer stack: its size is whatever the tiling leaves, possibly 0."""
    import re

    source = aicore_kernel(find_operator(op).spec).source
    calls = re.findall(r"\b(Erfc?|Tanh)\(([^;]*)\);", source)
    assert all(args.count(",") == 3 and "apiTmpBuf_.Get<uint8_t>()" in args for _, args in calls)
    assert ("apiTmpBuf_" in source) == bool(calls)
