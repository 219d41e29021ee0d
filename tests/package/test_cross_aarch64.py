"""Every shipped kernel built for AArch64 (the NPU's AI CPU) and run under qemu.

Debian's cross toolchain compiles kernel.cpp with opsdk's headers, the Python-free runtime
and the harness main; one qemu-aarch64 run computes all of the operator's validation cases,
and each is judged against the NumPy reference by the standards of the CPU tests. Without
the toolchain or qemu (scripts/setup.d/20-cross.sh installs both) the tests skip.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from opsdk import _cross, _paths
from opsdk.errors import BuildError, KernelError
from opsdk.registry import load_spec
from opsdk.runtime.cross import CrossOperator, build_harness, cross_available
from opsdk.testing import build_cases, validate_cross
from tests.conftest import ROOT

OK, REASON = cross_available("aarch64")
needs_cross = pytest.mark.skipif(not OK, reason=f"aarch64 unavailable: {REASON}")
OPERATORS = sorted(p.parent.name for p in (ROOT / "operators").glob("*/kernel.cpp"))


@needs_cross
@pytest.mark.slow
@pytest.mark.parametrize("op", OPERATORS)
def test_shipped_kernel_on_aarch64_matches_reference(op: str) -> None:
    folder = ROOT / "operators" / op
    v = validate_cross(folder, "aarch64")
    print(v.summary())  # the figures: cases, max abs error per dtype
    assert len(v.results) == len(build_cases(load_spec(folder))) > 0
    assert v.passed, v.summary()
    assert all(r.comparisons for r in v.results)


@needs_cross
def test_harness_is_an_aarch64_executable() -> None:
    exe = build_harness(ROOT / "operators" / "thresholded_relu", "aarch64")
    head = exe.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183  # EM_AARCH64


@needs_cross
def test_one_call_and_kernel_errors_through_the_harness() -> None:
    op = CrossOperator(load_spec(ROOT / "operators" / "gelu"), ROOT / "operators" / "gelu")
    x = np.linspace(-3, 3, 50, dtype=np.float32)
    (y,) = op.run([x], {"approximate": "tanh"})
    ref = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    call = op.call([x], {"approximate": "tanh"})
    bad = type(call)(call.op, [x.astype(np.float64)], call.outputs, call.attrs)
    (err,) = op.run_many([bad])
    assert err == "Gelu: input 'X' has dtype float64, expected float16 or float32 or bfloat16 (the registered kernels)"


@needs_cross
def test_a_kernel_that_does_not_compile_for_aarch64_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "x86_only"
    shutil.copytree(ROOT / "operators" / "thresholded_relu", folder)
    kernel = folder / "kernel.cpp"
    kernel.write_text("#include <immintrin.h>\nstatic __m256 v;\n" + kernel.read_text())
    with pytest.raises(BuildError, match=r"x86_only: building the aarch64 kernel failed"):
        build_harness(folder, "aarch64")


def _compile_runtime_test(gxx: str, program: str, out: Path) -> None:
    src = ROOT / "tests" / "cpp" / f"{program}.cpp"
    cmd = [gxx, "-std=c++17", "-O1", "-pthread", "-Wall", "-DOPSDK_POOL_TEST_HOOKS",
           f"-I{_paths.include_dir()}",
           str(src), str(_paths.runtime_source()), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@pytest.mark.parametrize("program", ["test_invoke", "test_pool"])
@pytest.mark.parametrize("arch", ["host", "aarch64"])
def test_runtime_core(arch: str, program: str, tmp_path: Path) -> None:
    """tests/cpp/test_invoke.cpp (dispatch, defaults, strides, every error message) and
    tests/cpp/test_pool.cpp (the thread pool: coverage, exceptions, nesting, concurrent
    callers, thread-count changes, fork, workers that sleep after their spin time or when
    parked, seen through the pool's state rather than CPU time, so on both targets)."""
    if arch == "host":
        gxx, prefix = shutil.which("g++") or shutil.which("c++"), []
        if gxx is None:
            pytest.skip("no host C++ compiler")
    else:
        if not OK:
            pytest.skip(f"aarch64 unavailable: {REASON}")
        t = _cross.target("aarch64")
        gxx, prefix = _cross.cross_gxx(t), _cross.qemu_command(t)
    exe = tmp_path / program
    _compile_runtime_test(str(gxx), program, exe)
    proc = subprocess.run([*(prefix or []), str(exe)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("checks, 0 failed")


@needs_cross
def test_harness_exit_status_is_an_error_not_a_result(tmp_path: Path) -> None:
    op = CrossOperator(load_spec(ROOT / "operators" / "thresholded_relu"),
                       ROOT / "operators" / "thresholded_relu")
    op.harness = tmp_path / "missing"
    with pytest.raises(KernelError, match="ThresholdedRelu: the aarch64 harness exited"):
        op.run([np.ones(3, np.float32)])


@needs_cross
def test_aarch64_is_a_device_of_the_test_plugin() -> None:
    from opsdk.testing import open_device, run_case

    folder = ROOT / "operators" / "softmax"
    spec = load_spec(folder)
    ex = open_device("aarch64", folder, spec, {})
    assert isinstance(ex, CrossOperator)
    case = next(c for c in build_cases(spec) if c.dtypes[0] == "float16")
    result = run_case(spec, ex, case, device="aarch64")
    assert result.passed and result.comparisons, result.summary()
