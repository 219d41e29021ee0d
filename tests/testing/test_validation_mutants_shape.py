"""Wrong C++ shape functions (the shape.h CANN's InferShape compiles) make `opsdk test` and
`opsdk check` fail, naming the operator, the case, the output and expected vs actual.

The mutants are made of copies of shipped operators and of an RMSNorm scaffolded by
`opsdk new` here; the unmutated operators pass. The counts go to docs/validation.md
("C++ shape function").
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from opsdk.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="no C++ compiler on this host")

RMS_SPEC = '''"""RmsNorm as LLM inference uses it: y = x * rstd * gamma, rstd = 1/sqrt(mean(x^2) + eps)
over the last axis (kept as 1)."""

from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType

SPEC = OpSpec(
    "RmsNorm",
    domain="com.example",
    version=1,
    inputs=[Input("x", "T"), Input("gamma", "T")],
    outputs=[Output("y", "T"), Output("rstd", "T")],
    attrs=[Attr("epsilon", "float", 1e-06)],
    types={"T": ("float32",)},
    doc="RMS normalisation over the last axis",
    cases=[
        Case({"x": (4, 16), "gamma": (16,)}, name="rows"),
        Case({"x": (2, 3, 8), "gamma": (8,)}, {"epsilon": 1e-3}, name="rank3"),
        Case({"x": (7,), "gamma": (7,)}, name="rank1"),
        Case({"x": (0, 5), "gamma": (5,)}, name="empty_rows"),
    ],
)


@SPEC.register_shape
def _shape(x: TensorType, gamma: TensorType, *, epsilon: float) -> list[TensorType]:
    if x.rank == 0:
        raise SpecError("RmsNorm: input 'x' is a scalar; it needs rank >= 1")
    if tuple(gamma.shape) != (x.shape[-1],):
        raise SpecError(f"RmsNorm: input 'gamma' has shape {tuple(gamma.shape)}, expected "
                        f"({x.shape[-1]},), the last dim of 'x'")
    return [TensorType(tuple(x.shape), x.dtype),
            TensorType(tuple(x.shape[:-1]) + (1,), x.dtype)]
'''

RMS_REFERENCE = '''import numpy as np


def reference(x, gamma, *, epsilon=1e-06):
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + epsilon)
    return x * rstd * gamma, rstd
'''

RMS_KERNEL = r'''#include <opsdk/custom_op.h>

#include <cmath>

namespace {
template <class T0>
void rms_norm_kernel(const CustomOpKernelContext& ctx) {
  const float eps = ctx.attr<float>("epsilon");
  const opsdk::Tensor& x = ctx.input(0);
  const opsdk::Tensor& g = ctx.input(1);
  const int64_t h = x.size(-1);
  const int64_t rows = h == 0 ? 0 : x.numel() / h;
  const float* px = x.data<float>();
  const float* pg = g.data<float>();
  float* py = ctx.output(0).mutable_data<float>();
  float* pr = ctx.output(1).mutable_data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (int64_t j = 0; j < h; ++j) s += double(px[r * h + j]) * px[r * h + j];
    const double rstd = 1.0 / std::sqrt(s / double(h) + eps);
    pr[r] = float(rstd);
    for (int64_t j = 0; j < h; ++j) py[r * h + j] = float(px[r * h + j] * rstd * pg[j]);
  }
}
}  // namespace

REGISTER_CUSTOM_OP("RmsNorm").Kernels<float>(OPSDK_KERNEL_TEMPLATE(rms_norm_kernel));
'''

RMS_SHAPE = '''// RmsNorm output shapes in C++: y like x; rstd keeps x's leading dims and 1 for the last.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string RmsNorm(const Inputs& in, const Attrs& attrs, std::vector<Dims>& out) {
  (void)attrs;
  const Dims& x = *in[0];
  const Dims& gamma = *in[1];
  if (x.empty()) return "RmsNorm: input 'x' is a scalar; it needs rank >= 1";
  if (gamma.size() != 1 || gamma[0] != x.back()) {
    return "RmsNorm: input 'gamma' must have shape (H,), H the last dim of 'x'";
  }
  Dims rstd(x.begin(), x.end() - 1);
  rstd.push_back(1);
  out = {x, rstd};
  return "";
}
}  // namespace shape
}  // namespace opsdk
'''

#: (operator folder, what is wrong, text of shape.h, its replacement)
MUTANTS: list[tuple[str, str, str, str]] = [
    ("softmax", "no output", "out = {*in[0]};", "out = {};"),
    ("softmax", "last dim dropped", "out = {*in[0]};",
     "out = {Dims(in[0]->begin(), in[0]->end() - 1)};"),
    ("layer_normalization", "statistics keep every dim", "out = {x, stats, stats};",
     "out = {x, x, x};"),
    ("layer_normalization", "statistics lose the trailing 1s",
     "stats.resize(static_cast<size_t>(rank), 1);", ""),
    ("layer_normalization", "outputs in the wrong order", "out = {x, stats, stats};",
     "out = {stats, x, stats};"),
    ("layer_normalization", "reads the absent optional bias",
     "out = {x, stats, stats};", "out = {x, stats, *in[2]};"),
    ("grid_sample", "H and W swapped", "y.insert(y.end(), grid.begin() + 1, grid.end() - 1);",
     "y.insert(y.end(), grid.rbegin() + 1, grid.rend() - 1);"),
    ("grid_sample", "channels from the grid", "Dims y = {x[0], x[1]};",
     "Dims y = {x[0], grid.back()};"),
    ("fused_conv_bn_relu", "stride ignored", "return (size + pad - extent) / stride + 1;",
     "return (size + pad - extent) / 1 + 1;"),
    ("fused_conv_bn_relu", "padding ignored", "return (size + pad - extent) / stride + 1;",
     "return (size - extent) / stride + 1;"),
    ("rms_norm", "rstd not reduced", "out = {x, rstd};", "out = {x, x};"),
    ("rms_norm", "rstd without its trailing 1", "  rstd.push_back(1);\n", ""),
    ("rms_norm", "refuses rank 3", 'if (x.empty()) return',
     'if (x.size() > 2) return "RmsNorm: rank > 2";\n  if (x.empty()) return'),
    ("rms_norm", "gamma's shape taken for y", "out = {x, rstd};", "out = {gamma, rstd};"),
]
SHIPPED = ("softmax", "layer_normalization", "grid_sample", "fused_conv_bn_relu")


def _write_rms_norm(folder: Path) -> None:
    (folder / "spec.py").write_text(RMS_SPEC)
    (folder / "reference.py").write_text(RMS_REFERENCE)
    (folder / "kernel.cpp").write_text(RMS_KERNEL)


@pytest.fixture(scope="module")
def rms_norm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RmsNorm scaffolded by `opsdk new`, then written by its author (with shape.h)."""
    root = tmp_path_factory.mktemp("scaffold")
    assert main(["new", "RmsNorm", "--dir", str(root), "--inputs", "x:float32",
                 "gamma:float32", "--outputs", "y", "rstd", "--attrs",
                 "epsilon:float=1e-6"]) == 0
    folder = root / "rms_norm"
    _write_rms_norm(folder)
    (folder / "shape.h").write_text(RMS_SHAPE)
    return folder


def _copy(src: Path, dst: Path) -> Path:
    keep = f"test_{src.name}.py"
    shutil.copytree(src, dst, ignore=lambda _d, names: [
        n for n in names if n in ("__pycache__", "build") or
        (n.startswith("test_") and n != keep)])
    return dst


def _opsdk(*args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "opsdk", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=1800)
    return proc.returncode, proc.stdout + proc.stderr


def _mutant(src: Path, dst: Path, old: str, new: str) -> Path:
    folder = _copy(src, dst)
    text = (folder / "shape.h").read_text()
    assert text.count(old) == 1, f"{src.name}/shape.h no longer holds {old!r}"
    (folder / "shape.h").write_text(text.replace(old, new))
    return folder


def test_unmutated_shape_functions_pass(rms_norm: Path, tmp_path: Path) -> None:
    for name in SHIPPED:
        rc, out = _opsdk("test", str(_copy(ROOT / "operators" / name, tmp_path / name)),
                         "-q", "-k", "shape_function")
        assert rc == 0 and "1 passed" in out, out[-2000:]
    rc, out = _opsdk("test", str(rms_norm), "-q", "-p", "no:cacheprovider")
    last = out.strip().splitlines()[-1]
    assert rc == 0 and "passed" in last and "failed" not in last, out[-3000:]
    assert "skipped" not in last, out[-1000:]  # the shape check ran, with the kernel's cases


def test_every_wrong_shape_function_is_caught(rms_norm: Path, tmp_path: Path) -> None:
    caught: Counter[str] = Counter()
    made: Counter[str] = Counter()
    missed = []
    for k, (name, what, old, new) in enumerate(MUTANTS):
        src = rms_norm if name == "rms_norm" else ROOT / "operators" / name
        folder = _mutant(src, tmp_path / f"m{k}" / src.name, old, new)
        rc, out = _opsdk("test", str(folder), "-q", "-k", "shape_function")
        made[name] += 1
        named = "the C++ shape function CANN's InferShape runs disagrees with spec.py" in out
        if rc != 0 and named and "C++ shape function (" in out:
            caught[name] += 1
        else:
            missed.append(f"{name}: {what}: exit {rc}\n{out[-1500:]}")
    print(f"\nwrong C++ shape functions: {sum(made.values())} mutants over {len(made)} "
          f"operators, {sum(caught.values())} caught")
    for name in made:
        print(f"  {name}: {caught[name]}/{made[name]}")
    assert not missed, "\n".join(missed)


def test_a_failure_names_operator_case_output_expected_and_actual(rms_norm: Path,
                                                                 tmp_path: Path) -> None:
    folder = _mutant(rms_norm, tmp_path / "rms_norm", "out = {x, rstd};", "out = {x, x};")
    rc, out = _opsdk("test", str(folder), "-q", "-k", "shape_function")
    assert rc == 1
    assert re.search(r"RmsNorm \[float32-rows[^\]]*\]: output 'rstd': C\+\+ shape function "
                     + re.escape(f"({folder / 'shape.h'}) gives shape [4, 16], spec.py infers "
                                 "[4, 1]"), out), out


def test_opsdk_check_holds_the_shape_function_to_spec_and_kernel(rms_norm: Path,
                                                                 tmp_path: Path) -> None:
    rc, out = _opsdk("check", str(rms_norm), "--no-torch")
    assert rc == 0, out  # the samples: rows, and its strided hard case
    assert re.search(re.escape(f"ok      C++ shape function ({rms_norm / 'shape.h'}): ")
                     + r"\d+ cases agree with spec.py \(shapes and dtypes\) and 2 sample\(s\) "
                     "with the kernel's outputs", out), out
    folder = _mutant(rms_norm, tmp_path / "rms_norm", "  rstd.push_back(1);\n", "")
    rc, out = _opsdk("check", str(folder), "--no-torch")
    assert rc == 1
    where = r"FAILED  RmsNorm \[float32-rows[^\]]*\]: output 'rstd': C\+\+ shape function "
    gives = re.escape(f"({folder / 'shape.h'}) gives shape [4], ")
    assert re.search(where + gives + re.escape("spec.py infers [4, 1]"), out), out
    assert re.search(where + gives + re.escape("the kernel produced [4, 1]"), out), out


def test_a_shape_function_that_does_not_compile_fails_naming_the_file(
        rms_norm: Path, tmp_path: Path) -> None:
    folder = _mutant(rms_norm, tmp_path / "rms_norm", "out = {x, rstd};", "out = {x, rstd}")
    rc, out = _opsdk("test", str(folder), "-q", "-k", "shape_function")
    assert rc == 1
    assert (f"RmsNorm: its C++ shape function ({folder / 'shape.h'}) does not compile") in out
    assert re.search(re.escape(str(folder / "shape.h")) + r":\d+:\d+: error: expected", out), out


def test_no_shape_function_skips_with_the_file_to_write_and_cann_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "RmsNorm", "--dir", str(tmp_path), "--inputs", "x:float32",
                 "gamma:float32", "--outputs", "y", "rstd", "--attrs",
                 "epsilon:float=1e-6"]) == 0
    folder = tmp_path / "rms_norm"
    _write_rms_norm(folder)  # a shape function in spec.py, none in C++ yet
    rc, out = _opsdk("test", str(folder), "-q", "-rs", "-k", "shape_function")
    assert rc == 0 and "1 skipped" in out
    assert f"RmsNorm has no C++ shape function: no {folder / 'shape.h'}" in out
    capsys.readouterr()
    prj = tmp_path / "prj"
    assert main(["cann", str(folder), "-o", str(prj)]) == 1
    err = capsys.readouterr().err
    assert f"RmsNorm: no C++ shape function: write {folder / 'shape.h'}" in err
    assert "--allow-todo-infershape" in err and not prj.exists()
    assert main(["cann", str(folder), "-o", str(prj), "--allow-todo-infershape"]) == 0
    err = capsys.readouterr().err
    assert "warning: RmsNorm: InferShape is the TODO skeleton" in err
    proto = prj / "aicpu" / "op_proto" / "rms_norm.cc"
    assert "TODO(author): port the shape function" in proto.read_text()
    (folder / "shape.h").write_text(RMS_SHAPE)
    assert main(["cann", str(folder), "-o", str(tmp_path / "prj2")]) == 0
    assert "InferShape is the TODO" not in capsys.readouterr().err


def test_the_kernel_outputs_are_held_to_the_cpp_function() -> None:
    from opsdk.registry import find_operator
    from opsdk.testing import build_cases
    from opsdk.testing._shape_cpp import ShapeCheck, shape_cases

    info = find_operator("LayerNormalization")
    cases = shape_cases(info.spec, build_cases(info.spec))
    check = ShapeCheck.of(info.folder, info.spec, cases)
    assert check.spec_report() == []
    case = next(c for c in cases if c.dtypes[0] == "float16" and c.shapes[0] == (4, 33))
    right = ["float16[4, 33]", "float32[4, 1]", "float32[4, 1]"]
    assert check.kernel_report(case.id, right) == []
    wrong = ["float16[4, 33]", "float16[4, 1]", "float32[4]"]
    where = f"C++ shape function ({info.folder / 'shape.h'})"
    assert check.kernel_report(case.id, wrong) == [
        "output 'Mean': the CANN project's InferDataType gives float32, the kernel produced "
        "float16",
        f"output 'InvStdDev': {where} gives shape [4, 1], the kernel produced [4]"]
    assert check.kernel_report(case.id, wrong, check_dtypes=False) == [
        f"output 'InvStdDev': {where} gives shape [4, 1], the kernel produced [4]"]


def test_an_unwritable_cache_is_an_error_naming_it(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from opsdk.errors import BuildError
    from opsdk.registry import find_operator
    from opsdk.testing._shape_cpp import shape_function

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("OPSDK_CACHE_DIR", str(tmp_path / "file" / "cache"))
    info = find_operator("Softmax")
    with pytest.raises(BuildError, match="Softmax: cannot build its C\\+\\+ shape function in "
                       ".*point OPSDK_CACHE_DIR at a folder you can write"):
        shape_function(info.folder, info.spec)
