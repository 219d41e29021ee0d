"""The CPU kernels of opsdk operators registered in torch's dispatcher from C++.

The C++ kernel is the one torch's dispatcher runs for the CPU key (and the AutogradCPU
wrapper in front of the Python autograd formula), its results equal ``op(x)`` bit for bit on
every shipped operator's samples (contiguous and strided), its errors are the Python path's,
gradients still come from the spec, and without torch's headers the Python path runs after
one warning naming the reason. The extension is built once per torch version into the build
cache (the first test here pays for it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (scripts/setup.d/40-torch-cpu.sh installs it)")

import opsdk  # noqa: E402
import opsdk.torch as ot  # noqa: E402
from opsdk.errors import SpecError  # noqa: E402
from opsdk.registry import load_spec  # noqa: E402
from opsdk.torch._check import sample_inputs  # noqa: E402
from opsdk.torch._convert import to_numpy  # noqa: E402
from opsdk.torch._cpp import unavailable  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.name for p in (ROOT / "operators").iterdir() if (p / "spec.py").is_file())
NAMES = [load_spec(ROOT / "operators" / s).name for s in SHIPPED]

pytestmark = pytest.mark.skipif(bool(unavailable()), reason=f"no C++ kernels: {unavailable()}")


def _outputs(out: Any) -> list[Any]:
    return list(out) if isinstance(out, tuple) else [out]


def _cpu_kernel_source(qualname: str, key: str) -> str:
    """Where the dispatcher's kernel for ``key`` was registered, from its table dump."""
    for line in torch._C._dispatch_dump(qualname).splitlines():
        if line.startswith(f"{key}: "):
            return line
    return ""


@pytest.mark.parametrize("name", ["Gelu", "Softmax"])
def test_the_dispatcher_runs_the_cpp_kernel_for_cpu(name: str) -> None:
    reg = ot.register(name)
    reg.packet(torch.rand(2, 3))
    assert "dispatch.cpp" in _cpu_kernel_source(reg.qualname, "CPU")
    assert "dispatch.cpp" in _cpu_kernel_source(reg.qualname, "AutogradCPU")
    # the Python autograd kernel of torch.library is still the Autograd alias's
    assert "dispatch.cpp" not in _cpu_kernel_source(reg.qualname, "Autograd[alias]")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(reg.qualname, "CPU")


@pytest.mark.parametrize("name", NAMES)
def test_results_equal_op_x_on_every_sample(name: str) -> None:
    reg = ot.register(name)
    op = opsdk.load(name)
    for case, args, attrs in sample_inputs(reg.spec):
        args = [None if a is None else a.detach() for a in args]
        want = _outputs(op(*[None if a is None else to_numpy(a) for a in args], **attrs))
        got = _outputs(reg.packet(*args, **attrs))
        assert len(got) == len(want), case
        for g, w in zip(got, want):
            assert g.dtype == reg_dtype(w), case
            np.testing.assert_array_equal(to_numpy(g), w, err_msg=f"{name} {case}")


def reg_dtype(a: np.ndarray) -> Any:
    from opsdk.torch._convert import from_numpy

    return from_numpy(a[:0].copy()).dtype


def test_strided_inputs_are_made_contiguous() -> None:
    gelu = ot.load("Gelu")
    x = torch.randn(5, 7).t()
    assert not x.is_contiguous()
    want = opsdk.load("Gelu")(np.ascontiguousarray(to_numpy(x)))
    np.testing.assert_array_equal(gelu(x).numpy(), want)
    assert gelu(x).shape == (7, 5)


def test_empty_tensors_take_the_python_path_and_equal_op_x() -> None:
    gelu, softmax = ot.load("Gelu"), ot.load("Softmax")
    for x in (torch.ones(0), torch.ones(3, 0)):
        assert gelu(x).shape == x.shape
        assert softmax(x, axis=0).shape == x.shape
        np.testing.assert_array_equal(softmax(x, axis=0).numpy(),
                                      opsdk.load("Softmax")(x.numpy(), axis=0))


def test_outputs_are_fresh_tensors_not_views_of_inputs() -> None:
    relu = ot.load("ThresholdedRelu")
    x = torch.randn(64)
    y = relu(x, alpha=0.25)
    assert y.data_ptr() != x.data_ptr()
    y2 = relu(x, alpha=0.25)
    assert y2.data_ptr() != y.data_ptr()
    torch.testing.assert_close(y, y2, rtol=0, atol=0)


def test_errors_are_the_python_paths() -> None:
    gelu, softmax = ot.load("Gelu"), ot.load("Softmax")
    x64 = np.ones(3)
    with pytest.raises(SpecError) as want:
        opsdk.load("Gelu")(x64)
    with pytest.raises(SpecError) as got:
        gelu(torch.from_numpy(x64))
    assert str(got.value) == str(want.value)
    assert "has dtype float64, expected one of" in str(got.value)
    x = np.ones((2, 3), np.float32)
    with pytest.raises(SpecError) as want:
        opsdk.load("Softmax")(x, axis=5)
    with pytest.raises(SpecError) as got:  # a planner error: raised by the Python path
        softmax(torch.from_numpy(x), axis=5)
    assert str(got.value) == str(want.value)
    # a valid call after the error is planned and runs in C++
    np.testing.assert_array_equal(softmax(torch.from_numpy(x), axis=1).numpy(),
                                  opsdk.load("Softmax")(x, axis=1))


def test_gradients_still_come_from_the_spec() -> None:
    gelu = ot.load("Gelu")
    x = torch.randn(6, dtype=torch.float32, requires_grad=True)
    y = gelu(x)
    assert y.grad_fn is not None and "GeneratedBackwardFor" in type(y.grad_fn).__name__
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape
    with torch.no_grad():
        assert gelu(x).grad_fn is None
    assert gelu(x.detach()).grad_fn is None


def test_calls_from_threads_share_plans() -> None:
    from concurrent.futures import ThreadPoolExecutor

    ln = ot.load("LayerNormalization")
    xs = [torch.randn(4, 8 + i % 3) for i in range(24)]

    def call(x: Any) -> Any:
        return ln(x, torch.ones(x.shape[-1]), torch.zeros(x.shape[-1]))

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(call, xs))
    for x, g in zip(xs, got):
        torch.testing.assert_close(g, call(x), rtol=0, atol=0)


def test_the_binder_leaves_guarded_and_non_cpu_executors_to_the_python_path() -> None:
    import copy

    from opsdk.torch._cpp import binder

    op = opsdk.load("Gelu")
    capsule, entries, elementwise, planner = binder(lambda: op)()
    assert capsule is not None and elementwise and planner is None
    # float16, bfloat16, float32 (spec.py), as opsdk::DType codes
    assert sorted(e[0] for e in entries) == [[0], [1], [2]]
    guarded = copy.copy(op)
    guarded.guard = True  # OPSDK_DEBUG=1: guard regions around outputs, checked in Python
    assert binder(lambda: guarded)() == (None, [], False, None)
    # an executor without a compiled CPU module (the NumPy reference runner)
    from opsdk.onnx import ReferenceKernel

    reference = ReferenceKernel(op.spec)
    assert binder(lambda: reference)() == (None, [], False, None)


def test_a_failed_compile_names_its_log_and_leaves_no_module_in_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opsdk.errors import BuildError
    from opsdk.torch._cpp import build_extension

    fake = tmp_path / "include" / "torch"
    fake.mkdir(parents=True)
    (fake / "library.h").write_text("#error not torch\n")  # headers that do not compile
    monkeypatch.setenv("OPSDK_TORCH_INCLUDE", str(fake.parent))
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(BuildError, match=r"compiling opsdk's torch extension failed \(log: "):
        build_extension()
    built = list((tmp_path / "cache" / "torch").rglob("*"))
    assert any(p.name == "build.log" for p in built)
    assert not any(p.suffix == ".so" or p.name.endswith(".tmp") for p in built), built


_FALLBACK = """
import json, os, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as seen:
    import opsdk.torch as ot
    from opsdk.torch._cpp import TorchCppUnavailable
    import torch
    import opsdk
    y = ot.load("Gelu")(torch.linspace(-2, 2, 5))
ours = [str(w.message) for w in seen if issubclass(w.category, TorchCppUnavailable)]
want = opsdk.load("Gelu")(torch.linspace(-2, 2, 5).numpy())
cpu = [ln for ln in torch._C._dispatch_dump("com_opsdk::Gelu").splitlines()
       if ln.startswith("CPU: ")]
print(json.dumps({"warnings": ours, "equal": bool((y.numpy() == want).all()), "cpu": cpu}))
"""


def test_without_torch_headers_the_python_path_runs_after_one_warning(tmp_path: Path) -> None:
    empty = tmp_path / "include"
    empty.mkdir()
    env = {**os.environ, "OPSDK_TORCH_INCLUDE": str(empty)}
    proc = subprocess.run([sys.executable, "-c", _FALLBACK], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(got["warnings"]) == 1, got
    assert "take the Python CPU implementation" in got["warnings"][0]
    assert f"no torch/library.h under {empty}" in got["warnings"][0]
    assert "OPSDK_TORCH_INCLUDE" in got["warnings"][0]  # the fix
    assert "OPSDK_TORCH_CPP=0 chooses that path without this warning" in got["warnings"][0]
    assert got["equal"]
    assert got["cpu"] and "dispatch.cpp" not in got["cpu"][0]
