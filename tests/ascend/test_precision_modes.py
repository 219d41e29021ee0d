"""ATC precision-mode emulation: the kernel dtype each documented mode picks, for vector
and matrix (cube) operators, float16/bfloat16/float32 model inputs, --keep_dtype and
--modify_mixlist; and cases run under emulation end to end.

The kernels here are NumPy stand-ins with the executor interface (they test the
harness's dtype choice and casts, not a device).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from opsdk.ascend.precision import MODE_CHOICES, read_keep_dtype, read_mixlist
from opsdk.errors import SpecError
from opsdk.spec import Input, OpSpec, Output
from opsdk.testing import PrecisionMode, build_cases, kernel_dtypes, run_case

F16, BF16, F32 = ("float16",), ("bfloat16",), ("float32",)


def vec(types: tuple[str, ...] = ("float16", "bfloat16", "float32")) -> OpSpec:
    spec = OpSpec("Scale", domain="com.test", inputs=[Input("x")], outputs=[Output("y")],
                  types={"T": types})
    spec.register_reference(lambda x: x * 3)
    return spec


def cube(types: tuple[str, ...] = ("float16", "float32"), out: str = "T") -> OpSpec:
    spec = OpSpec("Mm", domain="com.test", inputs=[Input("a"), Input("b")],
                  outputs=[Output("y", out)], types={"T": types}, compute="cube")
    spec.register_reference(lambda a, b: a * b)
    return spec


# ------------------------------------------------------------- vector operators
@pytest.mark.parametrize("mode, model, kernel", [
    ("force_fp16", F32, F16), ("fp16", F32, F16), ("force_fp16", BF16, F16),
    ("allow_fp32_to_fp16", F32, F32), ("allow_fp32_to_bf16", F32, F32),
    ("must_keep_origin_dtype", F32, F32), ("origin", BF16, BF16),
    ("force_fp32", F16, F32), ("cube_fp16in_fp32out", BF16, F32), ("force_fp32", F32, F32),
    ("allow_mix_precision", F32, F32), ("allow_mix_precision_fp16", F32, F32),
    ("mixed_float16", F32, F32), ("allow_mix_precision_bf16", F32, F32),
    ("mixed_bfloat16", F16, F16),
])
def test_vector_op_with_every_kernel(mode: str, model: tuple[str], kernel: tuple[str]) -> None:
    assert kernel_dtypes(vec(), model, mode) == kernel


@pytest.mark.parametrize("mode, types, model, kernel", [
    ("allow_fp32_to_fp16", ("float16",), F32, F16),  # no float32 kernel: lowered
    ("allow_fp32_to_bf16", ("bfloat16",), F32, BF16),
    ("force_fp16", ("float32",), F32, F32),  # no float16 kernel: kept
    ("force_fp32", ("float16",), F16, F16),  # no float32 kernel: the mode does not apply
    ("must_keep_origin_dtype", ("float32",), F16, F32),  # float16 unsupported: float32
    ("allow_mix_precision", ("float16",), F32, F16),
    ("allow_mix_precision_bf16", ("bfloat16",), F32, BF16),
    ("allow_fp32_to_fp16", ("float32",), F16, F32),  # float16 model, float32-only op: raised
    ("mixed_float16", ("float32",), BF16, F32),
])
def test_vector_op_falls_back_as_atc_documents(
    mode: str, types: tuple[str, ...], model: tuple[str], kernel: tuple[str]
) -> None:
    assert kernel_dtypes(vec(types), model, mode) == kernel


def test_no_kernel_atc_may_pick_is_an_error_naming_the_mode() -> None:
    with pytest.raises(SpecError, match=r"Scale: under --precision_mode_v2=origin ATC finds no "
                       r"AI Core kernel for inputs float32.*declare the dtype in spec\.py"):
        kernel_dtypes(vec(("float16",)), F32, "origin")
    with pytest.raises(SpecError, match=r"unknown precision mode 'fp8'.*mixed_hif8 is not"):
        kernel_dtypes(vec(), F32, "fp8")


def test_integer_inputs_are_never_changed() -> None:
    spec = OpSpec("Id", domain="com.test", inputs=[Input("x")], outputs=[Output("y")],
                  types={"T": ("int32",)})
    assert kernel_dtypes(spec, ("int32",), "force_fp16") == ("int32",)


# ------------------------------------------------------------- cube operators
FF32, FF16 = ("float32", "float32"), ("float16", "float16")


@pytest.mark.parametrize("mode, model, kernel", [
    ("allow_fp32_to_fp16", FF32, FF16),  # matrix operators run in float16
    ("allow_fp32_to_bf16", FF32, ("bfloat16", "bfloat16")),
    ("force_fp16", FF32, FF16),
    ("must_keep_origin_dtype", FF32, FF32),
    ("allow_mix_precision", FF32, FF32),  # gray, alone: keeps the model's dtype
])
def test_cube_op(mode: str, model: tuple[str, ...], kernel: tuple[str, ...]) -> None:
    spec = cube(("float16", "bfloat16", "float32"))
    assert kernel_dtypes(spec, model, mode) == kernel


def test_cube_fp16in_fp32out_preference_order() -> None:
    # 1. float16 in, float32 out when such a kernel exists,
    assert kernel_dtypes(cube(out="float32"), FF32, "cube_fp16in_fp32out") == FF16
    # 2. else float32 in and out,
    assert kernel_dtypes(cube(), FF16, "force_fp32") == FF32
    # 3. else float16 in and out,
    assert kernel_dtypes(cube(("float16",)), FF16, "force_fp32") == FF16
    # 4. else an error.
    with pytest.raises(SpecError, match="no AI Core kernel"):
        kernel_dtypes(cube(("bfloat16",)), FF16, "force_fp32")


def test_vector_and_cube_differ_under_allow_fp32_to_fp16() -> None:
    vector = cube()
    vector.compute = "vector"
    assert kernel_dtypes(vector, FF32, "allow_fp32_to_fp16") == FF32
    assert kernel_dtypes(cube(), FF32, "allow_fp32_to_fp16") == FF16


def test_spec_compute_is_validated() -> None:
    with pytest.raises(SpecError, match=r"Mm: compute='matrix'; expected 'vector'.*'cube'"):
        OpSpec("Mm", domain="com.test", inputs=[Input("a")], outputs=[Output("y")],
               types={"T": ("float32",)}, compute="matrix")
    assert vec().compute == "vector"


# ----------------------------------------------------- --keep_dtype, --modify_mixlist
def test_mixlist_moves_the_operator_between_lists(tmp_path: Path) -> None:
    f = tmp_path / "ops_info.json"
    f.write_text(json.dumps({"white-list": {"to-add": ["Scale"]}}))
    pm = PrecisionMode.from_atc("allow_mix_precision", modify_mixlist=f)
    assert pm.mixlist("Scale") == "white" and pm.mixlist("Other") == "gray"
    assert kernel_dtypes(vec(), F32, pm) == F16
    bf = PrecisionMode.from_atc("mixed_bfloat16", modify_mixlist=f)
    assert kernel_dtypes(vec(), F32, bf) == BF16
    f.write_text(json.dumps({"black-list": {"to-add": ["Scale"]}}))
    assert read_mixlist(f) == (set(), {"Scale"})
    assert kernel_dtypes(vec(("float16", "float32")), F32,
                         PrecisionMode.from_atc("allow_mix_precision", modify_mixlist=f)) == F32
    f.write_text(json.dumps({"white-list": {"to-add": ["Scale"], "to-remove": ["Scale"]}}))
    assert read_mixlist(f) == (set(), set())  # to-remove: back to gray


def test_mixlist_errors_name_the_file_and_the_keys(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"whitelist": {"to-add": ["Scale"]}}))
    with pytest.raises(SpecError, match=r"bad\.json: expected an object with the keys "
                       r"black-list and white-list, got \['whitelist'\]"):
        read_mixlist(f)
    f.write_text(json.dumps({"white-list": {"to-add": ["A"]}, "black-list": {"to-add": ["A"]}}))
    with pytest.raises(SpecError, match="A added to both black-list and white-list"):
        read_mixlist(f)
    f.write_text("{")
    with pytest.raises(SpecError, match=r"--modify_mixlist file .*bad\.json"):
        read_mixlist(f)


def test_keep_dtype_keeps_listed_operator_types(tmp_path: Path) -> None:
    f = tmp_path / "keep.cfg"
    f.write_text("conv1\nOpType::Scale\nOpType::Other\n")
    assert read_keep_dtype(f) == {"Scale", "Other"}
    pm = PrecisionMode.from_atc("force_fp16", keep_dtype=f)
    assert kernel_dtypes(vec(), F32, pm) == F32
    assert kernel_dtypes(vec(), F32, "force_fp16") == F16
    with pytest.raises(SpecError, match=r"--keep_dtype file .*missing\.cfg does not exist"):
        read_keep_dtype(tmp_path / "missing.cfg")


def test_atc_flag_of_each_name() -> None:
    assert PrecisionMode("mixed_float16").atc_flags == ["--precision_mode_v2=mixed_float16"]
    assert PrecisionMode("force_fp32").atc_flags == ["--precision_mode=force_fp32"]
    assert PrecisionMode("cube_fp16in_fp32out").behaves_as == "force_fp32"
    assert set(MODE_CHOICES) >= {"fp16", "origin", "mixed_bfloat16", "allow_fp32_to_bf16"}


# ------------------------------------------------------------------ end to end
class Kernel:
    """Multiplies by 3 in the input dtype; for ``Mm`` multiplies the two inputs."""

    def __init__(self, spec: OpSpec) -> None:
        self.spec = spec

    def run(self, inputs: list[Any], attrs: dict[str, Any] | None = None) -> list[np.ndarray]:
        out = self.spec.infer([None if a is None else _tt(a) for a in inputs], {})[0].dtype
        with np.errstate(all="ignore"):
            if len(inputs) == 1:
                return [(inputs[0] * inputs[0].dtype.type(3)).astype(out)]
            return [(inputs[0].astype(np.float32) * inputs[1].astype(np.float32)).astype(out)]


def _tt(a: np.ndarray) -> Any:
    from opsdk.dtypes import dtype_name
    from opsdk.spec import TensorType

    return TensorType(a.shape, dtype_name(a.dtype))


def _case(spec: OpSpec, cid: str) -> Any:
    return next(c for c in build_cases(spec) if c.id == cid)


def test_force_fp32_upcasts_a_float16_model_and_judges_in_float16() -> None:
    spec = vec(("float16", "float32"))
    r = run_case(spec, Kernel(spec), _case(spec, "float16-small"), precision_mode="force_fp32")
    assert r.passed, r.summary()
    assert "inputs float16 cast to float32" in r.note and "by the float16 standard" in r.note
    assert r.comparisons[0].dtype == "float16"


def test_bfloat16_model_under_force_fp16() -> None:
    spec = vec()
    r = run_case(spec, Kernel(spec), _case(spec, "bfloat16-small"), precision_mode="fp16")
    assert "--precision_mode_v2=fp16: inputs bfloat16 cast to float16" in r.note
    # bfloat16 has the range float16 lacks: large values overflow in float16.
    big = run_case(spec, Kernel(spec), _case(spec, "bfloat16-edge"), precision_mode="fp16")
    assert not big.passed
    assert any(k.name == "nonfinite" and not k.passed for k in big.comparisons[0].checks)


def test_integer_outputs_keep_their_own_standard_under_emulation() -> None:
    spec = OpSpec("Sign", domain="com.test", inputs=[Input("x")], outputs=[Output("y", "int32")],
                  types={"T": ("float16", "float32")})
    spec.register_reference(lambda x: np.sign(x).astype(np.int32))

    class SignKernel:
        def run(self, inputs: list[Any], attrs: Any = None) -> list[np.ndarray]:
            return [np.sign(inputs[0]).astype(np.int32)]

    r = run_case(spec, SignKernel(), _case(spec, "float32-small"), precision_mode="force_fp16")
    assert r.passed, r.summary()
    assert "cast to float16" in r.note and r.comparisons[0].standard == "exact"


def test_cube_fp16_inputs_with_float32_output_run_end_to_end() -> None:
    spec = cube(out="float32")
    r = run_case(spec, Kernel(spec), _case(spec, "float32-small"),
                 precision_mode="cube_fp16in_fp32out")
    assert "inputs float32/float32 cast to float16/float16" in r.note
    assert "(outputs float32)" in r.note and "by the float16 standard" in r.note
    assert r.passed, r.summary()
