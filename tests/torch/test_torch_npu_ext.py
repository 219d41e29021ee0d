"""The operators' C++ NPU kernels for torch (PrivateUse1 through torch_npu, the aclnn pair on
the current stream, no host copies): the generated source against golden files, and the
source compiled against the headers of the torch-npu wheel that matches torch (fetched by
``python -m opsdk.ascend.project.headers --fetch``, never imported: it cannot load without
CANN). Without torch_npu nothing is registered and the reason is logged once."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest

from opsdk.errors import BuildError
from opsdk.registry import find_operator
from tests._helpers.golden import check_golden
from tests._helpers.specs import rich_op

torch = pytest.importorskip("torch")

from opsdk.torch import _npu, _npu_ext  # noqa: E402


def test_thresholded_relu_kernel_matches_its_golden() -> None:
    src = _npu_ext.render_npu_kernel(find_operator("ThresholdedRelu").spec)
    check_golden("torch_npu/ThresholdedRelu.cpp", src)


def test_every_attribute_kind_and_an_optional_input_are_passed_to_aclnn() -> None:
    """RichOp: int, float, bool, string, ints, floats; an optional input; two outputs, in
    aclnn's order (inputs, attributes, outputs, workspace size, executor)."""
    src = _npu_ext.render_npu_kernel(rich_op(), op_type="RichOpCustom")
    check_golden("torch_npu/RichOp.cpp", src)
    assert ("get_workspace_size(in0, in1, in2, attr_axis, attr_epsilon, attr_keepdims, "
            "const_cast<char *>(attr_mode.c_str()), args.ints(attr_pads), "
            "args.floats(attr_scales), out0, out1, &workspace_size, &executor)") in src
    assert 'wrap(args, inputs[2], false, "input \'bias\'")' in src
    assert "aclnnRichOpCustomGetWorkspaceSize" in src and "_opsdk_npu_RichOpCustom" in src


def _headers_or_skip() -> None:
    try:
        _npu_ext.npu_include_dirs()
    except BuildError as e:
        pytest.skip(f"no torch_npu headers here: {e}")


def test_the_kernel_compiles_against_the_torch_npu_wheels_headers(tmp_path: Path) -> None:
    """The aclnn prototype, the aclTensor wrapping, the caching-allocator workspace and the
    task-queue launch compile against torch's and torch_npu's real headers (an object file:
    linking needs libtorch_npu, which needs CANN)."""
    _headers_or_skip()
    source = tmp_path / "rich_op.cpp"
    source.write_text(_npu_ext.render_npu_kernel(rich_op()))
    out = tmp_path / "rich_op.o"
    cmd = _npu_ext.compile_command(source, out, object_only=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert proc.returncode == 0 and out.stat().st_size > 0, "\n".join(errors[:20])


def test_missing_headers_are_named_with_the_fix(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setenv("OPSDK_TORCH_NPU_INCLUDE", str(tmp_path))
    with pytest.raises(BuildError, match=r"holds no torch_npu/csrc/core/npu/NPUStream.h; point "
                                         r"OPSDK_TORCH_NPU_INCLUDE"):
        _npu_ext.npu_include_dirs()


def test_without_torch_npu_nothing_is_registered_and_the_reason_is_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    reason = _npu.npu_unavailable()
    if not reason:
        pytest.skip("torch_npu loads here")
    import opsdk.torch as ot

    _npu._say_unavailable.cache_clear()
    caplog.set_level(logging.INFO, logger="opsdk.torch")
    regs = [ot.register("ThresholdedRelu"), ot.register("Gelu")]
    assert not any(_npu.register_npu(r) for r in regs)
    said = [r.message for r in caplog.records if "no npu kernels" in r.message]
    assert said == [f"opsdk.torch: no npu kernels are registered: {reason}"]
    # the dispatcher has no PrivateUse1 kernel for the operator
    assert not torch._C._dispatch_has_kernel_for_dispatch_key(
        regs[0].qualname, "PrivateUse1")
