"""One CANN package of many operators: the project, its build.sh, and the clash rules.

build.sh is run for real (bash) with a stand-in of msopgen on PATH (tests/data/msopgen_standin:
it writes the files of msopgen 8.1's projects that build.sh touches, and build scripts that
record what they were given instead of compiling). That checks what build.sh itself does:
one msopgen run per operator, the vendor set in the classic AI CPU project, per-vendor
library names, bf16 made acceptable to the op info checker, ASCEND_TENSOR_COMPILER_INCLUDE
set when unset, and one .run with every operator.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from opsdk.ascend import (
    CannArgError,
    PackageClash,
    PackageOp,
    installed_vendors,
    project_op_types,
)
from opsdk.ascend.project._package import check_installed
from opsdk.cli import main
from opsdk.registry import find_operator
from tests._helpers.cann_project import render_package, write_entries
from tests._helpers.specs import ROOT

STANDIN = Path(__file__).parents[1] / "data" / "msopgen_standin"
OPS = ("ThresholdedRelu", "GridSample", "Gelu")


def _entries(*names: str, engine: str = "aicpu") -> list[PackageOp]:
    return [PackageOp(find_operator(n).spec, engine) for n in names]


def _toolkit(tmp_path: Path) -> Path:
    """A stand-in toolkit tree as an 8.1.RC1 install has it (no compiler/include softlinks)."""
    root = tmp_path / "toolkit"
    (root / "compiler").mkdir(parents=True)
    (root / "compiler" / "version.info").write_text("Version=7.7.0.1.238\nversion_dir=8.1.RC1\n")
    (root / "x86_64-linux" / "include").mkdir(parents=True)
    (root / "aarch64-linux" / "include").mkdir(parents=True)
    (root / "opp").mkdir()
    return root


def _run_build(project: Path, toolkit: Path, tmp_path: Path) -> tuple[str, list[str]]:
    if shutil.which("bash") is None:
        pytest.skip("no bash on this host")
    log = tmp_path / "msopgen.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND")}
    env.update(PATH=f"{STANDIN}{os.pathsep}{env['PATH']}", ASCEND_HOME_PATH=str(toolkit),
               MSOPGEN_LOG=str(log))
    proc = subprocess.run(["bash", str(project / "build.sh")], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = sorted((project / "build_out").glob("custom_opp_*.run"))
    assert len(runs) == 1, runs
    return runs[0].read_text(), log.read_text().splitlines()


def test_build_sh_builds_one_aicpu_run_with_every_operator(tmp_path: Path) -> None:
    project = tmp_path / "pkg"
    write_entries(_entries(*OPS), project, vendor="acme")
    listing, calls = _run_build(project, _toolkit(tmp_path), tmp_path)
    assert [c.split(" -op ")[1].split()[0] for c in calls] == list(OPS)
    assert "-m 1" not in calls[0] and all("-m 1" in c for c in calls[1:])
    assert all(" -c aicpu " in c for c in calls)
    assert f"include={tmp_path / 'toolkit' / 'x86_64-linux' / 'include'}" in listing or (
        f"include={tmp_path / 'toolkit' / 'aarch64-linux' / 'include'}" in listing)
    tree = "./packages/vendors/acme/"
    assert f"{tree}op_impl/cpu/aicpu_kernel/impl/libcust_acme_aicpu_kernels.so" in listing
    assert f"{tree}op_proto/libcust_acme_op_proto.so" in listing
    for snake in ("thresholded_relu", "grid_sample", "gelu"):
        assert f"{snake}_kernels.cc" in listing and f"{snake}.cc" in listing
    info = json.loads((project / "build_msopgen/aicpu/build_out/makepkg/packages/vendors/acme/"
                       "op_impl/cpu/config/cust_aicpu_kernel.json").read_text())
    assert sorted(info) == sorted(OPS)
    assert "DT_BF16" in info["Gelu"]["input0"]["type"]  # accepted by the patched checker
    assert info["Gelu"]["opInfo"]["kernelSo"] == "libcust_acme_aicpu_kernels.so"


def test_build_sh_puts_ai_cpu_into_the_ai_core_run(tmp_path: Path) -> None:
    project = tmp_path / "pkg"
    entries = [PackageOp(find_operator("ThresholdedRelu").spec, "both", "ThresholdedReluCustom"),
               PackageOp(find_operator("GridSample").spec, "aicpu")]
    write_entries(entries, project, vendor="acme", socs=["ascend910b", "ascend310b"])
    listing, calls = _run_build(project, _toolkit(tmp_path), tmp_path)
    aicore = [c for c in calls if " -c ai_core-" in c]
    assert len(aicore) == 1 and "-op ThresholdedReluCustom" in aicore[0]
    tree = "./packages/vendors/acme/"
    assert f"{tree}op_kernel/thresholded_relu_custom.cpp" in listing
    assert f"{tree}op_impl/cpu/aicpu_kernel/impl/libcust_acme_aicpu_kernels.so" in listing
    assert f"{tree}op_impl/cpu/config/cust_aicpu_kernel.json" in listing
    for plugin in ("thresholded_relu_custom_plugin.cc", "grid_sample_plugin.cc"):
        assert f"{tree}framework/onnx/{plugin}" in listing
    presets = json.loads((project / "build_msopgen/aicore/CMakePresets.json").read_text())
    cache = presets["configurePresets"][0]["cacheVariables"]
    assert cache["vendor_name"]["value"] == "acme"
    assert cache["ASCEND_COMPUTE_UNIT"]["value"] == "ascend910b;ascend310b"
    # the operator with both engines has its op proto in the AI Core package only
    assert not (project / "build_msopgen/aicpu/op_proto/thresholded_relu_custom.cc").exists()
    assert (project / "build_msopgen/aicpu/op_proto/grid_sample.cc").is_file()


def test_package_files_and_manifest(tmp_path: Path) -> None:
    files = render_package([PackageOp(find_operator(n).spec, shape_header=True)
                            for n in ("GridSample", "Softmax")], vendor="acme")
    assert json.loads(files["msopgen/aicpu.json"])[1]["op"] == "Softmax"
    assert "msopgen/aicore.json" not in files
    cmake = files["aicpu/cpukernel/opsdk_aicpu.cmake"]
    assert "kernels/grid_sample.cpp" in cmake and "kernels/softmax.cpp" in cmake
    assert "cust_acme_aicpu_kernels" in cmake
    out = tmp_path / "pkg"
    write_entries(_entries("GridSample", "Softmax"), out, vendor="acme")
    assert project_op_types(out) == {("com.opsdk", "GridSample"): "GridSample",
                                     ("com.opsdk", "Softmax"): "Softmax"}
    man = json.loads((out / ".opsdk-manifest.json").read_text())
    assert man["vendor"] == "acme" and [o["op"] for o in man["ops"]] == ["GridSample", "Softmax"]


def test_two_operators_of_one_type_are_refused() -> None:
    tr, gs = find_operator("ThresholdedRelu").spec, find_operator("GridSample").spec
    with pytest.raises(PackageClash, match="would be the CANN operator 'Same' of one package"):
        render_package([PackageOp(tr, op_type="Same"), PackageOp(gs, op_type="Same")])
    with pytest.raises(PackageClash, match="ThresholdedRelu is in the package twice"):
        render_package([PackageOp(tr), PackageOp(tr, op_type="ThresholdedReluCustom")])


def test_engine_both_without_an_ai_core_kernel_is_refused() -> None:
    fc = find_operator("FusedConvBnRelu").spec
    with pytest.raises(CannArgError, match="FusedConvBnRelu: --engine both builds an AI Core "
                       "kernel, but the operator has none.*Use --engine aicpu"):
        render_package([PackageOp(fc, "both", shape_header=True)])
    files = render_package([PackageOp(fc, "both", shape_header=True)], aicore_skeleton=True)
    assert "TODO(author)" in files["op_kernel/fused_conv_bn_relu.cpp"]


def _vendor(opp: Path, vendor: str, aicpu: list[str], aicore: list[str]) -> None:
    """A vendor folder as msopgen's packages install it (their op info JSON files)."""
    cfg = opp / "vendors" / vendor / "op_impl" / "cpu" / "config"
    cfg.mkdir(parents=True)
    (cfg / "cust_aicpu_kernel.json").write_text(json.dumps({t: {} for t in aicpu}))
    core = opp / "vendors" / vendor / "op_impl" / "ai_core" / "tbe" / "config" / "ascend910b"
    core.mkdir(parents=True)
    (core / "aic-ascend910b-ops-info.json").write_text(json.dumps({t: {} for t in aicore}))


def test_installed_packages_clash_rules(tmp_path: Path) -> None:
    opp = tmp_path / "opp"
    _vendor(opp, "acme", ["GridSample"], ["ThresholdedReluCustom"])
    _vendor(opp, "other", ["Gelu"], [])
    assert installed_vendors(opp) == {"acme": {"GridSample", "ThresholdedReluCustom"},
                                      "other": {"Gelu"}}
    check_installed("acme", ["GridSample", "ThresholdedReluCustom", "Softmax"],
                    installed_vendors(opp), opp)  # a rebuild of acme's package, one op more
    check_installed("third", ["Softmax"], installed_vendors(opp), opp)  # coexists
    with pytest.raises(PackageClash, match="vendor 'acme' is already installed at .* with "
                       "operators this package does not have \\(ThresholdedReluCustom\\)"):
        check_installed("acme", ["GridSample"], installed_vendors(opp), opp)
    with pytest.raises(PackageClash, match="Gelu: already the type of an operator of vendor "
                       "'other'"):
        check_installed("third", ["Gelu"], installed_vendors(opp), opp)


# --- the command line -------------------------------------------------------------------


def test_cli_writes_one_package_of_many_operators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASCEND_OPP_PATH", raising=False)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(_toolkit(tmp_path)))
    out = tmp_path / "pkg"
    args = ["cann", "ThresholdedRelu", "GridSample", "-o", str(out), "--vendor", "acme",
            "--op-type", "ThresholdedRelu=ThresholdedReluCustom", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["vendor"] == "acme" and report["cann"] == "8.1.RC1"
    assert [(o["op"], o["op_type"], o["engine"]) for o in report["ops"]] == [
        ("ThresholdedRelu", "ThresholdedReluCustom", "both"), ("GridSample", "GridSample", "both")]
    assert (out / "op_kernel" / "thresholded_relu_custom.cpp").is_file()
    assert (out / "op_kernel" / "grid_sample.cpp").is_file()  # its hand-written AI Core kernel
    assert (out / "aicpu" / "opsdk" / "kernels" / "grid_sample.cpp").is_file()
    assert main(["cann", "GridSample", "Gelu", "-o", str(tmp_path / "x"),
                 "--op-type", "GeluCustom"]) == 1
    assert "with several operators write Op=Type" in capsys.readouterr().err
    assert main(["cann", "-o", str(tmp_path / "y")]) == 1
    assert "name at least one operator (or --all)" in capsys.readouterr().err


def test_cli_all_and_the_installed_vendor_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    toolkit = _toolkit(tmp_path)
    monkeypatch.setenv("ASCEND_HOME_PATH", str(toolkit))
    monkeypatch.delenv("ASCEND_OPP_PATH", raising=False)
    out = tmp_path / "all"
    assert main(["cann", "--all", "-o", str(out), "--vendor", "acme", "--engine", "aicpu"]) == 0
    shipped = sorted(p.name for p in (ROOT / "operators").iterdir() if (p / "spec.py").is_file())
    kernels = sorted(p.stem for p in (out / "aicpu" / "opsdk" / "kernels").glob("*.cpp"))
    assert set(shipped) <= set(kernels)
    capsys.readouterr()
    _vendor(toolkit / "opp", "acme", ["Gelu", "Softmax"], [])
    assert main(["cann", "GridSample", "-o", str(tmp_path / "b"), "--vendor", "acme"]) == 1
    err = capsys.readouterr().err
    assert "vendor 'acme' is already installed" in err and "Pass another --vendor" in err
    assert not (tmp_path / "b").exists()
    assert main(["cann", "GridSample", "-o", str(tmp_path / "c"), "--vendor", "beta"]) == 0
