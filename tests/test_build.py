"""The cached CMake + pybind11 build: no-op, incremental, errors, locking, killed builds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from opsdk.build import build_operator, cache_problem, toolchain
from opsdk.errors import BuildError, RegistrationMismatch
from opsdk.registry import load_spec
from opsdk.runtime.cpu import Operator, load_module

ROOT = Path(__file__).resolve().parent.parent
RELU = ROOT / "operators" / "thresholded_relu"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A private build cache for this module (the entry point compiles once into it)."""
    path = tmp_path_factory.mktemp("cache")
    old = os.environ.get("OPSDK_CACHE_DIR")
    os.environ["OPSDK_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        del os.environ["OPSDK_CACHE_DIR"]
    else:
        os.environ["OPSDK_CACHE_DIR"] = old


# A small ThresholdedRelu kernel owned by these tests (the shipped one may change).
KERNEL = """\
#include <opsdk/custom_op.h>

namespace {
constexpr float kScale = 1.0f;
template <class T>
void trelu(const CustomOpKernelContext& ctx) {
  const float alpha = ctx.attr<float>("alpha");
  const T* x = ctx.input(0).data<T>();
  T* y = ctx.output(0).mutable_data<T>();
  for (int64_t i = 0; i < ctx.input(0).numel(); ++i) {
    const float v = opsdk::to_float(x[i]);
    opsdk::from_float(v > alpha ? v * kScale : 0.0f, &y[i]);
  }
}
}  // namespace

REGISTER_CUSTOM_OP("ThresholdedRelu")
    .Input(0, "x", "float32")
    .Output(0, "y", "float32")
    .Attr("alpha", "float")
    .KernelFn(trelu<float>);

REGISTER_CUSTOM_OP("ThresholdedRelu")
    .Input(0, "x", "float16")
    .Output(0, "y", "float16")
    .Attr("alpha", "float")
    .KernelFn(trelu<opsdk::half>);
"""


def copy_op(tmp_path: Path, name: str = "thresholded_relu") -> Path:
    dst = tmp_path / name
    dst.mkdir()
    for f in ("spec.py", "reference.py"):
        shutil.copy(RELU / f, dst / f)
    (dst / "kernel.cpp").write_text(KERNEL)
    return dst


def load(folder: Path, module: Path) -> Operator:
    return Operator(load_spec(folder), load_module(module), folder)


def test_noop_rebuild_and_incremental_edit(cache, tmp_path):
    op_dir = copy_op(tmp_path)
    first = build_operator(op_dir)
    again = build_operator(op_dir)
    assert first.compiled and not again.compiled and again.module == first.module
    kernel = op_dir / "kernel.cpp"
    kernel.write_text(kernel.read_text().replace("kScale = 1.0f", "kScale = 2.0f"))
    edited = build_operator(op_dir)
    assert edited.compiled and edited.key != first.key and first.module.exists()
    x = np.array([0.0, 3.0], np.float16)
    assert list(load(op_dir, edited.module)(x, alpha=1.0)) == [0.0, 6.0]
    assert list(load(op_dir, first.module)(x, alpha=1.0)) == [0.0, 3.0]


def test_cache_key_covers_flags_and_abi(cache):
    a, b = toolchain("-O2"), toolchain("-O3")
    assert a.key != b.key
    assert a.python_abi.startswith(sys.implementation.cache_tag)


def test_compile_error_points_at_the_authors_line(cache, tmp_path):
    op_dir = copy_op(tmp_path)
    kernel = op_dir / "kernel.cpp"
    lines = kernel.read_text().splitlines()
    lines.insert(5, "this is not C++;")
    kernel.write_text("\n".join(lines) + "\n")
    with pytest.raises(BuildError, match=r"kernel build failed .*\n.*kernel\.cpp:6:\d+: error:"):
        build_operator(op_dir)
    del lines[5]
    kernel.write_text("\n".join(lines) + "\n")
    assert build_operator(op_dir).module.exists()  # the cache is not poisoned


MISMATCHES = [
    ('.Input(0, "x", "float32")', '.Input(0, "input", "float32")',
     r"disagree on inputs: REGISTER_CUSTOM_OP says \['input'\], spec.py says \['x'\]"),
    ('.Attr("alpha", "float")\n    .KernelFn(trelu<float>)', '.Attr("alpha", "int")\n    .KernelFn(trelu<float>)',
     r"the type of attribute 'alpha': REGISTER_CUSTOM_OP says int, spec.py says float"),
    ('.Output(0, "y", "float16")', '.Output(0, "y", "float32")',
     r"output dtypes for inputs \('float16',\): REGISTER_CUSTOM_OP says \('float32',\)"),
    ('REGISTER_CUSTOM_OP("ThresholdedRelu")\n    .Input(0, "x", "float16")', 'REGISTER_CUSTOM_OP("Other")\n    .Input(0, "x", "float16")',
     r"disagree on the op name: REGISTER_CUSTOM_OP says 'Other', spec.py says 'ThresholdedRelu'"),
]


@pytest.mark.parametrize(("old", "new", "match"), MISMATCHES)
def test_cpp_registration_checked_against_spec(cache, tmp_path, old, new, match):
    op_dir = copy_op(tmp_path)
    kernel = op_dir / "kernel.cpp"
    text = kernel.read_text()
    assert old in text
    kernel.write_text(text.replace(old, new, 1))
    with pytest.raises(RegistrationMismatch, match=match):
        load(op_dir, build_operator(op_dir).module)


def test_missing_dtype_kernel_is_named(cache, tmp_path):
    op_dir = copy_op(tmp_path)
    kernel = op_dir / "kernel.cpp"
    text = kernel.read_text()
    kernel.write_text(text[: text.rindex('REGISTER_CUSTOM_OP("ThresholdedRelu")')])
    with pytest.raises(RegistrationMismatch, match=r"spec.py allows x=float16 but kernel.cpp registers no kernel"):
        load(op_dir, build_operator(op_dir).module)


SHORT_FORM = 'REGISTER_CUSTOM_OP("ThresholdedRelu").Kernels<float, opsdk::half>(OPSDK_KERNEL_TEMPLATE(trelu));\n'


def short_form(kernel: Path, registration: str = SHORT_FORM) -> None:
    """Replace the long-form registrations of KERNEL by ``registration``."""
    text = kernel.read_text()
    kernel.write_text(text[: text.index("REGISTER_CUSTOM_OP")] + registration)


def test_short_form_takes_names_optionality_and_attributes_from_the_spec(cache, tmp_path):
    op_dir = copy_op(tmp_path)
    short_form(op_dir / "kernel.cpp")
    op = load(op_dir, build_operator(op_dir).module)
    regs = op.module.registrations()
    assert [(r["inputs"], r["outputs"]) for r in regs] == [
        ([(0, "x", "float32", False)], [(0, "y", "float32", False)]),
        ([(0, "x", "float16", False)], [(0, "y", "float16", False)]),
    ]
    assert regs[0]["attrs"] == [("alpha", "float", True, 1.0)] and not regs[0]["columns"]
    x = np.array([0.5, 2.0], np.float16)
    assert list(op(x)) == [0.0, 2.0] and list(op(x.astype(np.float32), alpha=0.25)) == [0.5, 2.0]


@pytest.mark.parametrize(("registration", "match"), [
    ('REGISTER_CUSTOM_OP("ThresholdedRelu").Kernels<opsdk::Types<float, float>>('
     "[](const CustomOpKernelContext&, auto, auto) {});\n",
     r"the dtype columns of Kernels<...>: REGISTER_CUSTOM_OP says a column of 2 type\(s\) "
     r"\(float32, float32\), spec.py says 1 type variable\(s\) \(T\)"),
    ('REGISTER_CUSTOM_OP("ThresholdedRelu").Kernels<float>(OPSDK_KERNEL_TEMPLATE(trelu));\n',
     r"spec.py allows x=float16 but kernel.cpp registers no kernel for it"),
])
def test_short_form_checked_against_spec(cache, tmp_path, registration, match):
    op_dir = copy_op(tmp_path)
    short_form(op_dir / "kernel.cpp", registration)
    with pytest.raises(RegistrationMismatch, match=match):
        load(op_dir, build_operator(op_dir).module)


BUILD_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from opsdk.build import build_operator
    r = build_operator(sys.argv[1])
    print(json.dumps({"compiled": r.compiled, "module": str(r.module)}))
    """
)


def test_two_processes_building_at_once(cache, tmp_path):
    op_dir = copy_op(tmp_path)
    (op_dir / "kernel.cpp").write_text((op_dir / "kernel.cpp").read_text() + "\n// concurrent\n")
    procs = [
        subprocess.Popen([sys.executable, "-c", BUILD_SCRIPT, str(op_dir)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(r["compiled"] for r in results) == [False, True]
    assert results[0]["module"] == results[1]["module"]


def test_killed_build_does_not_block_or_corrupt(cache, tmp_path):
    op_dir = copy_op(tmp_path)
    (op_dir / "kernel.cpp").write_text((op_dir / "kernel.cpp").read_text() + "\n// killed\n")
    proc = subprocess.Popen([sys.executable, "-c", BUILD_SCRIPT, str(op_dir)], start_new_session=True)
    lib_root = cache / "ops" / "thresholded_relu"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(lib_root.glob("*/build/build.ninja")) and not list(lib_root.glob("*/build/Makefile")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # kill the build and its compiler mid-way
    proc.wait()
    result = build_operator(op_dir)  # the lock is free and the tree is usable
    assert result.module.exists()
    assert list(load(op_dir, result.module)(np.array([2.0], np.float32), alpha=1.0)) == [2.0]


RUN_SCRIPT = textwrap.dedent(
    """
    import sys, numpy as np
    from opsdk.build import build_operator
    from opsdk.registry import load_spec
    from opsdk.runtime.cpu import Operator, load_module
    r = build_operator(sys.argv[1])
    op = Operator(load_spec(sys.argv[1]), load_module(r.module), None)
    print(op(np.array([0.0, 3.0], np.float32), alpha=1.0).tolist())
    """
)


def test_corrupted_cache_is_rebuilt_with_a_notice_never_loaded(cache, tmp_path):
    op_dir = copy_op(tmp_path)
    (op_dir / "kernel.cpp").write_text((op_dir / "kernel.cpp").read_text() + "\n// integrity\n")
    good = build_operator(op_dir)
    other_dir = copy_op(tmp_path, "other")
    other_kernel = other_dir / "kernel.cpp"
    other_kernel.write_text(KERNEL.replace("kScale = 1.0f", "kScale = 5.0f"))
    foreign = build_operator(other_dir, name="thresholded_relu_other").module.read_bytes()
    content = good.module.read_bytes()
    damages = {
        "truncated": content[: len(content) // 2],
        "empty": b"",
        "garbage": b"\x7fELF not really" * 100,
        "swapped": foreign,  # a real module built from other code
    }
    for what, data in damages.items():
        good.module.write_bytes(data)
        p = subprocess.run([sys.executable, "-c", RUN_SCRIPT, str(op_dir)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, (what, p.stderr)
        assert p.stdout.strip() == "[0.0, 3.0]", what  # the right kernel, rebuilt
        notice = [ln for ln in p.stderr.splitlines() if "rebuilding it" in ln]
        assert len(notice) == 1 and str(good.module) in notice[0], (what, p.stderr)
        assert "recorded content hash" in notice[0]
    # e.g. a cache written by an older opsdk
    good.module.with_name(good.module.name + ".record.json").unlink()
    again = build_operator(op_dir)
    assert again.compiled and cache_problem(again.module, json.loads(
        again.module.with_name(again.module.name + ".record.json").read_text())["source_hash"]
    ) is None
