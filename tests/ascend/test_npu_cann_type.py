"""The CANN operator type reaches the npu executor: from ``opsdk.load(cann_op_type=...)``, from
``--opsdk-cann-op-type`` / ``--opsdk-cann-project`` and from ``opsdk test --cann-op-type``.

There is no NPU here: the executor's plan (``plan_npu``, made before any ACL call) is checked
directly, and through the ``npu unavailable`` reason, which names the type it would have run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

import opsdk
from opsdk.ascend.npu.executor import plan_npu
from opsdk.cli.cmd_test import pytest_argv
from opsdk.errors import DeviceUnavailable, SpecError
from opsdk.registry import find_operator
from opsdk.testing._cann_type import cann_types
from tests._helpers.cann_project import write_project

ROOT = Path(__file__).resolve().parents[2]
OP_DIR = ROOT / "operators" / "thresholded_relu"
TRELU = find_operator("ThresholdedRelu").spec
GELU = find_operator("Gelu").spec
PLAN = ("ThresholdedRelu as CANN operator ThresholdedReluCustom (aclnnThresholdedReluCustom, "
        "else aclop ThresholdedReluCustom)")


def _npu_here() -> bool:
    from opsdk.ascend.npu.executor import npu_available

    return npu_available()[0]


no_npu = pytest.mark.skipif(_npu_here(), reason="an NPU is available: the plan runs for real")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project `opsdk cann ThresholdedRelu --op-type ThresholdedReluCustom` writes."""
    out = tmp_path_factory.mktemp("cann") / "trelu"
    write_project(TRELU, out, op_type="ThresholdedReluCustom")
    return out


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_plan_takes_the_cann_type_before_any_acl_call() -> None:
    plan = plan_npu(TRELU, op_type="ThresholdedReluCustom")
    assert (plan.op, plan.op_type, plan.engine) == ("ThresholdedRelu", "ThresholdedReluCustom",
                                                    "auto")
    assert plan.aclnn == ("aclnnThresholdedReluCustomGetWorkspaceSize",
                          "aclnnThresholdedReluCustom")
    assert plan.describe() == PLAN
    assert plan_npu(TRELU).op_type == "ThresholdedRelu"
    assert plan_npu(TRELU, engine="aclop").describe().endswith("(aclop ThresholdedRelu)")
    with pytest.raises(SpecError, match="ThresholdedRelu: cann_op_type 'trelu_custom' is not a "
                       "CANN operator type: use UpperCamelCase"):
        plan_npu(TRELU, op_type="trelu_custom")


@no_npu
def test_load_on_npu_names_the_type_it_would_run() -> None:
    with pytest.raises(DeviceUnavailable, match=r"^npu unavailable: .*") as e:
        opsdk.load("ThresholdedRelu", device="npu", cann_op_type="ThresholdedReluCustom")
    assert str(e.value).endswith(f"[{PLAN}]")


def test_types_from_options_and_project_manifests(project: Path, tmp_path: Path) -> None:
    assert cann_types([], [str(project)]).for_spec(TRELU) == "ThresholdedReluCustom"
    assert cann_types([], [str(project)]).for_spec(GELU) is None  # another operator's project
    assert cann_types(["GeluCustom"], []).for_spec(TRELU) == "GeluCustom"  # every operator
    named = cann_types(["ThresholdedRelu=ThresholdedReluCustom", "Gelu=GeluCustom"], [])
    assert (named.for_spec(TRELU), named.for_spec(GELU)) == ("ThresholdedReluCustom", "GeluCustom")
    agreed = cann_types(["ThresholdedRelu=ThresholdedReluCustom"], [str(project)])
    assert agreed.for_spec(TRELU) == "ThresholdedReluCustom"
    assert not cann_types([], [])
    with pytest.raises(SpecError, match=r"ThresholdedRelu: two CANN types, TreluX "
                       r"\(--opsdk-cann-op-type\) and ThresholdedReluCustom \(project .*trelu\)"):
        cann_types(["ThresholdedRelu=TreluX"], [str(project)])
    other = tmp_path / "other"
    write_project(TRELU, other, op_type="TreluB")
    with pytest.raises(SpecError, match=r"ThresholdedRelu: two CANN types, ThresholdedReluCustom "
                       r"\(project .*trelu\) and TreluB \(project .*other\); drop one"):
        cann_types([], [str(project), str(other)])
    with pytest.raises(SpecError, match="gives Gelu two types: GeluA and GeluB"):
        cann_types(["Gelu=GeluA", "Gelu=GeluB"], [])
    with pytest.raises(SpecError, match="--opsdk-cann-op-type '=GeluA': write OP=TYPE"):
        cann_types(["=GeluA"], [])
    with pytest.raises(SpecError, match="--opsdk-cann-op-type 'gelu-custom' is not a CANN "
                       "operator type"):
        cann_types(["Gelu=gelu-custom"], [])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SpecError, match=f"--opsdk-cann-project {empty}: no opsdk project "
                       r"manifest with the operator \(.*\.opsdk-manifest\.json\); pass a folder "
                       "written by `opsdk cann`"):
        cann_types([], [str(empty)])


@no_npu
@pytest.mark.parametrize("how", ["project", "named", "bare"])
def test_pytest_npu_device_runs_the_operator_under_the_cann_type(how: str, project: Path) -> None:
    option = {"project": f"--opsdk-cann-project={project}",
              "named": "--opsdk-cann-op-type=ThresholdedRelu=ThresholdedReluCustom",
              "bare": "--opsdk-cann-op-type=ThresholdedReluCustom"}[how]
    p = run("-m", "pytest", str(OP_DIR), "-q", "-rs", "-p", "no:cacheprovider",
            "--opsdk-device=npu", option, "-k", "float32-small")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 skipped" in p.stdout and "npu unavailable: " in p.stdout
    assert PLAN in p.stdout.replace("\n", "")


def test_pytest_rejects_unusable_cann_type_options(tmp_path: Path) -> None:
    base = ["-m", "pytest", str(OP_DIR), "-q", "-p", "no:cacheprovider", "-k", "float32-small"]
    cases = [
        (["--opsdk-cann-op-type=ThresholdedReluCustom"],
         "add --opsdk-device=npu (the cpu device runs kernel.cpp)"),
        (["--opsdk-device=npu", "--opsdk-cann-op-type=trelu"],
         "--opsdk-cann-op-type 'trelu' is not a CANN operator type"),
        (["--opsdk-device=npu", f"--opsdk-cann-project={tmp_path}"],
         f"--opsdk-cann-project {tmp_path}: no opsdk project manifest"),
        (["--opsdk-device=npu", "--opsdk-cann-op-type=ThresholdRelu=ThresholdedReluCustom"],
         "--opsdk-cann-op-type names ThresholdRelu, which no collected operator is "
         "(collected: ThresholdedRelu)"),
    ]
    for extra, message in cases:
        p = run(*base, *extra)
        assert p.returncode == 4, p.stdout + p.stderr
        assert message in p.stderr + p.stdout, p.stderr


def test_opsdk_test_passes_the_cann_type_on(project: Path) -> None:
    ns = argparse.Namespace(device="npu", cann_op_type=["ThresholdedReluCustom"],
                            cann_project=None,
                            pytest_args=["--cann-project", str(project), "-x"])
    argv = pytest_argv(ns, Path("/ops/my_op"))
    assert argv[argv.index("/ops/my_op"):] == [
        "/ops/my_op", "--opsdk-device=npu", "--opsdk-timeout=120.0",
        "--opsdk-cann-op-type=ThresholdedReluCustom", f"--opsdk-cann-project={project}",
        "--opsdk-isolate", "-x",
    ]
    gelu = run("-m", "opsdk", "test", "Gelu", "--device", "npu", "--cann-project", str(project))
    assert gelu.returncode == 1 and "Traceback" not in gelu.stderr
    assert (f"--cann-project {project} is the CANN project of com.opsdk::ThresholdedRelu, not of "
            "com.opsdk::Gelu; pass that operator's project") in gelu.stderr
    if _npu_here():
        return
    p = run("-m", "opsdk", "test", "ThresholdedRelu", "--device", "npu", "--cann-op-type",
            "ThresholdedReluCustom", "-k", "float32-small", "-q", "-rs", "-p", "no:cacheprovider")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "--opsdk-cann-op-type=ThresholdedReluCustom" in p.stdout
    assert "1 skipped" in p.stdout and PLAN in p.stdout.replace("\n", "")
