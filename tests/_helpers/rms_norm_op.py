"""An RMSNorm operator as an LLM author writes it after ``opsdk new``: x [..., H], gamma [H],
epsilon; outputs y and the per-row reciprocal rms; a shape function and a backward.

The files below replace the scaffold's spec.py, reference.py and kernel.cpp. Environment
switches select the mutants of the validation tests (tests/testing/test_validation_mutants.py):
``RMS_MUTANT`` in the kernel (read on every call), ``RMS_BACKWARD`` in spec.py.
"""

from __future__ import annotations

from pathlib import Path

SPEC = '''"""RmsNormTest: y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2 over the last axis) + epsilon)."""

import os

from opsdk.errors import SpecError
from opsdk.spec import Attr, Case, Input, OpSpec, Output, TensorType

SPEC = OpSpec(
    "RmsNormTest",
    domain="com.example",
    version=1,
    inputs=[Input("x", "T"), Input("gamma", "T")],
    outputs=[Output("y", "T"), Output("rstd", "float32")],
    attrs=[Attr("epsilon", "float", 1e-6)],
    types={"T": ("float16", "float32", "bfloat16")},
    doc="RMSNorm over the last axis, with the per-row reciprocal rms",
    cases=[
        Case({"x": (4, 32), "gamma": (32,)}, name="rows"),
        Case({"x": (2, 3, 17), "gamma": (17,)}, {"epsilon": 0.5}, name="eps"),
        Case({"x": (5,), "gamma": (5,)}, name="rank1"),
        Case({"x": (0, 8), "gamma": (8,)}, name="empty"),
    ],
)


@SPEC.register_shape
def _shape(x, gamma, *, epsilon):
    if x.rank == 0 or gamma.shape != x.shape[-1:]:
        raise SpecError(f"RmsNormTest: gamma has shape {gamma.shape}, expected {x.shape[-1:]}")
    return [TensorType(x.shape, x.dtype), TensorType(x.shape[:-1], "float32")]


@SPEC.register_backward
def _backward(inputs, outputs, grads, *, epsilon):
    x, gamma = inputs
    rstd = outputs[1].to(x.dtype).unsqueeze(-1)
    gy = grads[0] if grads[0] is not None else x.new_zeros(x.shape)
    gr = grads[1] if grads[1] is not None else x.new_zeros(x.shape[:-1])
    xhat = x * rstd
    dxhat = gy * gamma
    dgamma = (gy * xhat).sum_to_size(gamma.shape)
    dx = rstd * dxhat
    if os.environ.get("RMS_BACKWARD") != "drop_mean":
        dx = dx - rstd * xhat * (dxhat * xhat).mean(-1, keepdim=True)
    if os.environ.get("RMS_BACKWARD") != "drop_rstd":
        dx = dx - gr.to(x.dtype).unsqueeze(-1) * rstd ** 3 * x / x.shape[-1]
    return [dx, dgamma]
'''

REFERENCE = '''"""NumPy reference of RmsNormTest."""

import numpy as np


def reference(x, gamma, epsilon=1e-6):
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=-1) + epsilon)
    return x * rstd[..., None] * gamma, rstd
'''

KERNEL = '''// RmsNormTest CPU kernel: sums in double, one row at a time.
#include <opsdk/custom_op.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace {

bool mutant(const char* name) {
  const char* m = std::getenv("RMS_MUTANT");
  return m != nullptr && std::strcmp(m, name) == 0;
}

// v rounded to T; the rounding mutants truncate it, or round it to one more significand
// bit first (both then to nearest even): float16 (11 bits) or bfloat16 (8 bits) alone.
template <class T>
T narrow(double v) {
  constexpr bool f16 = std::is_same_v<T, opsdk::half>;
  constexpr bool bf16 = std::is_same_v<T, opsdk::bfloat16>;
  const bool trunc = (f16 && mutant("trunc16")) || (bf16 && mutant("trunc_bf16"));
  const bool twice = (f16 && mutant("twice16")) || (bf16 && mutant("twice_bf16"));
  if ((trunc || twice) && std::isfinite(v) && v != 0.0) {
    const int bits = (f16 ? 11 : 8) + (twice ? 1 : 0);
    int e = 0;
    const double m = std::ldexp(std::frexp(v, &e), bits);
    v = std::ldexp(trunc ? std::trunc(m) : std::nearbyint(m), e - bits);
  }
  T out;
  opsdk::from_float(static_cast<float>(v), &out);
  return out;
}

template <class T>
void rms_norm(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const opsdk::Tensor& g = ctx.input(1);
  opsdk::Tensor& y = ctx.output(0);
  opsdk::Tensor& r = ctx.output(1);
  const double eps = mutant("eps_ignored") ? 1e-6 : ctx.attr<float>("epsilon");
  const int64_t h = x.size(-1);
  const int64_t rows = h > 0 ? x.numel() / h : 0;
  const T* px = x.data<T>();
  const T* pg = g.data<T>();
  T* py = y.mutable_data<T>();
  float* pr = r.mutable_data<float>();
  const bool nan0 = mutant("nan0");
  const int64_t tail = mutant("tail") ? 1 : 0;
  for (int64_t i = 0; i < rows; ++i) {
    double ss = 0.0;
    for (int64_t j = 0; j < h; ++j) {
      const double v = opsdk::to_float(px[i * h + j]);
      ss += v * v;
    }
    const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(h) + eps);
    pr[i] = static_cast<float>(rstd);
    for (int64_t j = 0; j < h - tail; ++j) {
      double v = static_cast<double>(opsdk::to_float(px[i * h + j])) * rstd *
                 static_cast<double>(opsdk::to_float(pg[j]));
      if (nan0 && std::isnan(v)) v = 0.0;
      py[i * h + j] = narrow<T>(v);
    }
    if (tail) py[i * h + h - 1] = T{};
  }
}

}  // namespace

REGISTER_CUSTOM_OP("RmsNormTest").Kernels<opsdk::half, float, opsdk::bfloat16>(
    OPSDK_KERNEL_TEMPLATE(rms_norm));
'''


def scaffold_rms_norm(root: Path) -> Path:
    """``opsdk new RmsNormTest`` under ``root/operators``, then the author's files; returns
    the operator folder."""
    from opsdk.cli import main

    assert main(["new", "RmsNormTest", "--inputs", "x:float16,float32", "gamma",
                 "--outputs", "y", "rstd:float32", "--attrs", "epsilon:float=1e-6",
                 "--domain", "com.example", "--backward", "--dir",
                 str(root / "operators")]) == 0
    folder = root / "operators" / "rms_norm_test"
    (folder / "spec.py").write_text(SPEC)
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "kernel.cpp").write_text(KERNEL)
    return folder
