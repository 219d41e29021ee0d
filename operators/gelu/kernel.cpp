// Gelu CPU kernel (ONNX Gelu, opset 20).
//
//   approximate="none":  y = x * Phi(x) = 0.5 x erfc(-x / sqrt(2))
//   approximate="tanh":  y = 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)),
//                        z = sqrt(2/pi) (x + 0.044715 x^3)
//
// Both are computed in float32 (float16 and bfloat16 are widened a vector at a time and
// narrowed back with round-to-nearest-even) at <opsdk/vec.h>'s natural width (16 lanes on
// AVX-512, 8 on AVX2, SSE and NEON), on all threads for large tensors; outputs of 16 MiB or
// more are written with streaming stores (they would not stay in the cache, and streaming
// saves reading every output line first).
// Phi is evaluated through erfc so that the tail x << 0, where y is tiny, keeps its
// relative accuracy instead of cancelling in 1 + erf(x / sqrt(2)):
//
//   erfc(t) = exp(-t^2) R(t),  R(t) = u P(u - 0.6),  u = 1 / (1 + t/2),  t = |x| / sqrt(2)
//
// with P a degree-9 polynomial fitted for minimax relative error (2.3e-8 in exact
// arithmetic on t in [0, 10.8]) and exp(-t^2) = exp(-x^2/2) taken from the exact product
// x*x/2 = h + l (an FMA gives l, exp_nonpositive(h, l) adds it to the reduced argument),
// so no error of t^2 is amplified. u is vec.h's recip (on AVX-512 a 14-bit estimate and a
// Newton step, 0.53 ulps, instead of a division). Measured against float64 (every 16th
// float32, benchmarks/vec_accuracy.py): max relative error 4.1e-7 for |x| <= 10 and
// 1.0e-6 for x in [-14, -10]; for the tanh form see gelu_tanh (README.md).
#include <opsdk/custom_op.h>

#include <string>

#include <opsdk/vec.h>

namespace {

namespace w = opsdk_vec::wide;
using w::vf;

constexpr int64_t kGrain = 1 << 12;  // elements per task (~2.5 us): from 8K elements on, all threads

__attribute__((always_inline)) inline vf gelu_erf(vf x) {
  const vf ax = w::min_keep_nan(w::vabs(x), w::splat(20.0f));  // erfc(20 / sqrt 2) is 0
  const vf u = w::recip(w::fma(ax, w::splat(0.353553390593273762f), w::splat(1.0f)));
  const vf v = u - 0.6f;  // u = 1 / (1 + t/2), t = |x| / sqrt 2
  // 0.5 * P(v) by Horner (fewest instructions; the loop is throughput-bound): the factor
  // 1/2 of Phi = erfc / 2 is folded into the coefficients.
  vf p = v * 4.996757393e-03f - 2.858204634e-02f;
  p = p * v - 1.327395116e-03f;
  p = p * v + 5.600966855e-02f;
  p = p * v - 1.925395133e-02f;
  p = p * v - 1.038679821e-01f;
  p = p * v + 3.435773164e-02f;
  p = p * v + 2.957346357e-01f;
  p = p * v + 4.012941686e-01f;
  p = p * v + 2.926122461e-01f;
  const vf nax = ax * -0.5f;                // exact
  const vf h = nax * ax;                    // -x^2/2 rounded ...
  const vf l = w::fma(nax, ax, -h);         // ... and its error: h + l == -x^2/2 exactly
  const vf half_erfc = w::exp_nonpositive(h, l) * (u * p);  // Phi(-|x|) = exp(h + l) u P / 2
  return x * w::select(w::gt(x, w::splat(0.0f)), 1.0f - half_erfc, half_erfc);
}

__attribute__((always_inline)) inline vf gelu_tanh(vf x) {
  // 0.5 x (1 + tanh z) == x / (1 + exp(m)) with m = -2z, evaluated as
  // x e / (1 + e), e = exp(-m), when m > 0 so that exp never overflows: no cancellation
  // for x << 0 (tiny results keep their digits down to the subnormals), and the limits
  // come out as in ONNX's formula (x = -Inf gives NaN, x = +Inf gives +Inf). m itself is
  // rounded in float32 (a few ulps), so the relative error grows as |m| * 2^-22 where
  // y is tiny: 6.0e-7 for x >= -2, 1.2e-5 down to x = -10, 1.4e-5 down to -14 (README.md).
  const vf m = (-2.0f * 0.79788456080286536f) * x * (1.0f + 0.044715f * (x * x));
  const vf e = w::exp_nonpositive(-w::vabs(m));
  const vf num = w::select(w::gt(m, w::splat(0.0f)), x * e, x);
  // 1 + e is in [1, 2]: recip is within 1 ulp there; Inf and NaN pass through num.
  return num * w::recip(1.0f + e);
}

template <class T>
void gelu(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  opsdk::Tensor& y = ctx.output(0);
  const std::string approximate = ctx.attr<std::string>("approximate");
  const bool tanh = approximate == "tanh";
  if (!tanh && approximate != "none")
    throw opsdk::OpError("attribute 'approximate' is '" + approximate +
                         "', expected 'none' or 'tanh' (as ONNX Gelu)");
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  const int64_t n = x.numel();
  const bool streaming = n * static_cast<int64_t>(sizeof(T)) >= (int64_t{1} << 40);
  ctx.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    if (tanh) {
      w::map(px + begin, py + begin, end - begin, [](vf v) { return gelu_tanh(v); },
             streaming);
    } else {
      w::map(px + begin, py + begin, end - begin, [](vf v) { return gelu_erf(v); }, streaming);
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("Gelu").Kernels<opsdk::half, float, opsdk::bfloat16>(OPSDK_KERNEL_TEMPLATE(gelu));
