"""The AI CPU side of every operator: the project files around the operator's own kernel.cpp.

Checked here: every shipped operator (GridSample and FusedConvBnRelu included) gets an AI CPU
project whose adapter, op info and op proto agree with its spec, with the kernel.cpp the CPU
tests validated copied in unchanged. The adapter's CANN side compiles only against a
toolkit's AI CPU headers (``cpu_kernel.h``; no package on the index ships them): that test
runs on hosts with a toolkit and skips elsewhere with the reason.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_cann_specs import ROOT, shipped

from opsdk.cann import write_project
from opsdk.cann.headers import aicpu_include

SHIPPED = sorted(p.name for p in (ROOT / "operators").iterdir() if (p / "spec.py").is_file())


@pytest.fixture(scope="module")
def aicpu_projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("aicpu")
    for folder in SHIPPED:
        write_project(shipped(folder), root / folder, kernel_folder=ROOT / "operators" / folder)
    return {folder: root / folder for folder in SHIPPED}


def test_every_shipped_operator_is_covered() -> None:
    assert {"grid_sample", "fused_conv_bn_relu", "thresholded_relu"} <= set(SHIPPED)


@pytest.mark.parametrize("folder", SHIPPED)
def test_aicpu_project_of_every_shipped_operator(
    folder: str, aicpu_projects: dict[str, Path]
) -> None:
    spec, out = shipped(folder), aicpu_projects[folder]
    kernel = out / "aicpu" / "opsdk" / "kernel.cpp"
    assert kernel.read_text() == (ROOT / "operators" / folder / "kernel.cpp").read_text()
    assert (out / "aicpu" / "opsdk" / "include" / "opsdk" / "custom_op.h").is_file()
    adapter = (out / f"aicpu/cpukernel/impl/{folder}_kernels.cc").read_text()
    assert f'kKernel = "{spec.name}"' in adapter
    assert f"uint32_t {spec.name}CpuKernel::Compute(CpuKernelContext& ctx)" in adapter
    assert f"REGISTER_CPU_KERNEL({folder.upper()}, {spec.name}CpuKernel);" in adapter
    for a in spec.attrs:
        assert f'ctx.GetAttr("{a.name}")' in adapter, a.name
    for i, inp in enumerate(spec.inputs):
        assert f"ctx.Input({i})" in adapter
        assert (f"inputs[{i}].present = false" in adapter) == inp.optional
    ini = (out / f"aicpu/cpukernel/op_info_cfg/aicpu_kernel/{folder}.ini").read_text()
    assert f"[{spec.name}]" in ini and "opInfo.engine=DNN_VM_AICPU" in ini
    assert "opInfo.opKernelLib=CUSTAICPUKernel" in ini
    assert "opInfo.kernelSo=libcust_aicpu_kernels.so" in ini
    assert "opInfo.functionName=RunCpuKernel" in ini
    names = re.findall(r"^input(\d+)\.name=(\w+)$", ini, re.M)
    assert [n for _, n in names] == [i.name for i in spec.inputs]
    proto = (out / f"aicpu/op_proto/{folder}.cc").read_text()
    assert f"COMMON_INFER_FUNC_REG({spec.name}, {spec.name}InferShape);" in proto
    assert ("TODO(author)" in proto) != spec.elementwise
    plugin = (out / f"framework/onnx_plugin/{folder}_plugin.cc").read_text()
    assert "ImplyType::AI_CPU" in plugin
    assert f'.OriginOpType("{spec.domain}::{spec.version}::{spec.name}")' in plugin


def test_grid_sample_adapter_reads_its_string_and_int_attributes(
    aicpu_projects: dict[str, Path],
) -> None:
    adapter = (aicpu_projects["grid_sample"] / "aicpu/cpukernel/impl/grid_sample_kernels.cc")
    text = adapter.read_text()
    assert 'attrs.emplace_back("mode", opsdk::AttrValue(v->GetString()));' in text
    assert 'attrs.emplace_back("align_corners", opsdk::AttrValue(static_cast<int64_t>' in text


def test_aicpu_include_finds_the_toolkit_headers(tmp_path: Path) -> None:
    assert aicpu_include(tmp_path) is None
    inc = tmp_path / "opp" / "built-in" / "op_impl" / "aicpu" / "aicpu_kernel" / "inc"
    inc.mkdir(parents=True)
    (inc / "cpu_kernel.h").write_text("")
    assert aicpu_include(tmp_path) == inc


def test_adapter_compiles_against_the_toolkit_aicpu_headers(
    aicpu_projects: dict[str, Path],
) -> None:
    inc = aicpu_include()
    if inc is None:
        pytest.skip("no CANN toolkit with the AI CPU kernel headers (cpu_kernel.h) on this host")
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++ on this host")
    for folder, out in aicpu_projects.items():
        impl = out / "aicpu" / "cpukernel" / "impl"
        cmd = [cxx, "-std=c++17", "-fsyntax-only", "-Wall", f"-I{inc}", f"-I{impl}"]
        cmd += [f"-I{out / 'aicpu' / 'opsdk' / 'include'}", str(impl / f"{folder}_kernels.cc")]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{folder}: {proc.stderr[-3000:]}"
