"""The generating commands decide each thing once: `opsdk triton build --target ascend`
resolves its options, CANN release and dims once and scans the operator folders once; a
pipeline plans each step once; `opsdk cann A B` generates each AI Core kernel once.
Counted by wrapping the commands as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from opsdk.cli import main
from tests._helpers.ascend_repo import two_op_model
from tests._helpers.call_counts import counting
from tests._helpers.pipelines import write_pipeline

RESOLUTIONS = {
    "options": "opsdk.triton._repository._plan_config",
    "cann": "opsdk.ascend.versions.resolve_cann",
    "dims": "opsdk.triton._ascend_dims.name_dims",
    "renders": "opsdk.triton._repository._render",
    "scans": "opsdk.registry.find_operators",
}


def test_triton_build_ascend_decides_each_thing_once(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "two.onnx"
    onnx.save(two_op_model(), str(src))
    with counting(RESOLUTIONS) as n:
        assert main(["triton", "build", str(src), "--target", "ascend", "--cann", "8.1.RC1",
                     "-o", str(tmp_path / "repo"), "--name", "net"]) == 0
    assert dict(n) == {"options": 1, "cann": 1, "dims": 1, "renders": 1, "scans": 1}
    assert "GE parser rules of CANN 8.1.RC1 (--cann 8.1.RC1)" in capsys.readouterr().out
    record = json.loads((tmp_path / "repo" / "net" / ".opsdk-files.json").read_text())
    assert record["cann"] == "8.1.RC1"  # what `opsdk triton check` reads back


def test_triton_check_reads_the_release_the_build_recorded(tmp_path: Path) -> None:
    from opsdk.triton._check import _release

    src = tmp_path / "two.onnx"
    onnx.save(two_op_model(), str(src))
    assert main(["triton", "build", str(src), "--target", "ascend", "--cann", "9.0",
                 "-o", str(tmp_path / "repo"), "--name", "net"]) == 0
    with counting({"cann": RESOLUTIONS["cann"]}) as n:
        assert str(_release(tmp_path / "repo" / "net", "auto")) == "9.0"
    assert n["cann"] == 0
    assert str(_release(tmp_path / "repo" / "net", "8.1.RC1")) == "8.1.RC1"  # the user's word


@pytest.mark.parametrize("target", ["cpu", "ascend"])
def test_pipeline_plans_each_step_once(tmp_path: Path, target: str) -> None:
    toml = write_pipeline(tmp_path, operator=True)  # two model steps: mlp.onnx, ThresholdedRelu
    with counting(RESOLUTIONS) as n:
        assert main(["triton", "pipeline", str(toml), "-o", str(tmp_path / "repo"),
                     "--target", target]) == 0
    assert n["options"] == 2 and n["renders"] == 2  # was 10 and 6 for two such steps
    assert n["cann"] == (2 if target == "ascend" else 0)


def test_cann_generates_each_kernel_once(tmp_path: Path) -> None:
    with counting({"kernels": "opsdk.ascend.ascendc._gen_reduce.generate"}) as n:
        assert main(["cann", "Gelu", "ThresholdedRelu", "-o", str(tmp_path / "pkg")]) == 0
    assert n["kernels"] == 2
