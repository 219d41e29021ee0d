// Gelu CPU kernel (ONNX Gelu, opset 20).
//
//   approximate="none":  y = x * Phi(x) = 0.5 x erfc(-x / sqrt(2))
//   approximate="tanh":  y = 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)),
//                        z = sqrt(2/pi) (x + 0.044715 x^3)
//
// Both are computed in float32 (float16 and bfloat16 are widened 8 at a time and narrowed
// back with round-to-nearest-even), 8 lanes per step, on all threads for large tensors;
// outputs of 16 MiB or more are written with streaming stores (they would not stay in
// the cache, and streaming saves reading every output line first).
// Phi is evaluated through erfc so that the tail x << 0, where y is tiny, keeps its
// relative accuracy instead of cancelling in 1 + erf(x / sqrt(2)):
//
//   erfc(t) = exp(-t^2) R(t),  R(t) = u P(u - 0.6),  u = 1 / (1 + t/2),  t = |x| / sqrt(2)
//
// with P a degree-9 polynomial fitted for minimax relative error (2.3e-8 in exact
// arithmetic on t in [0, 10.8]) and exp(-t^2) = exp(-x^2/2) taken from the exact product
// x*x = h + l (an FMA gives l), so no error of t^2 is amplified. Measured against a
// float64 reference on a 1.2e-5 grid over [-14, 10]: max relative error 4.0e-7 for
// |x| <= 10 and 9.7e-7 for x in [-14, -10]; the tanh form 2.8e-7 and 1.3e-6 (README.md).
#include <opsdk/custom_op.h>

#include <cstring>
#include <string>

#include "vec.h"

namespace {

using opsdk_vec::f8;
using opsdk_vec::i8;

constexpr int64_t kGrain = 1 << 15;  // elements per task (~40 us); smaller tensors stay on one thread

inline f8 gelu_erf(f8 x) {
  using namespace opsdk_vec;
  const f8 ax = min_keep_nan(vabs(x), splat(20.0f));  // erfc(20 / sqrt 2) is 0 in float32
  const f8 t = ax * 0.70710678118654752f;
  const f8 u = 1.0f / (1.0f + 0.5f * t);
  const f8 w = u - 0.6f;
  f8 p = w * 9.993514786e-03f - 5.716409267e-02f;
  p = p * w - 2.654790232e-03f;
  p = p * w + 1.120193371e-01f;
  p = p * w - 3.850790266e-02f;
  p = p * w - 2.077359642e-01f;
  p = p * w + 6.871546328e-02f;
  p = p * w + 5.914692713e-01f;
  p = p * w + 8.025883371e-01f;
  p = p * w + 5.852244922e-01f;
  const f8 h = ax * ax;
  const f8 l = opsdk_vec::fma(ax, ax, -h);  // x*x == h + l exactly
  const f8 e = opsdk_vec::exp(-0.5f * h) * (1.0f - 0.5f * l);
  const f8 half_erfc = 0.5f * e * (u * p);  // Phi(-|x|)
  const f8 phi = select(x > 0.0f, 1.0f - half_erfc, half_erfc);
  return x * phi;
}

typedef double d4 __attribute__((vector_size(32)));
typedef float f4 __attribute__((vector_size(16)));

// m = -2 sqrt(2/pi) (x + 0.044715 x^3) for 4 lanes in double, split into float hi + lo.
inline void tanh_arg(f4 x, f4* hi, f4* lo) {
  const d4 xd = __builtin_convertvector(x, d4);
  const d4 m = (-2.0 * 0.79788456080286535588) * xd * (1.0 + 0.044715 * (xd * xd));
  *hi = __builtin_convertvector(m, f4);
  *lo = __builtin_convertvector(m - __builtin_convertvector(*hi, d4), f4);
}

inline f8 gelu_tanh(f8 x) {
  // 0.5 x (1 + tanh z) == x / (1 + exp(m)) with m = -2z, evaluated as
  // x e / (1 + e), e = exp(-m), when m > 0 so that exp never overflows: no cancellation
  // for x << 0 (tiny results keep their digits down to the subnormals), and the limits
  // come out as in ONNX's formula (x = -Inf gives NaN, x = +Inf gives +Inf). m is formed
  // in double and split m = hi + lo, exp(-|m|) = exp(-|hi|) (1 -+ lo): exp's argument
  // carries no float32 rounding, which would otherwise grow the error as |m| * 2^-24.
  using namespace opsdk_vec;
  f4 xl, xh, hl, hh, ll, lh;
  std::memcpy(&xl, &x, sizeof xl);
  std::memcpy(&xh, reinterpret_cast<const char*>(&x) + 16, sizeof xh);
  tanh_arg(xl, &hl, &ll);
  tanh_arg(xh, &hh, &lh);
  f8 m, lo;
  std::memcpy(&m, &hl, 16);
  std::memcpy(reinterpret_cast<char*>(&m) + 16, &hh, 16);
  std::memcpy(&lo, &ll, 16);
  std::memcpy(reinterpret_cast<char*>(&lo) + 16, &lh, 16);
  lo = select(vabs(m) < 128.0f, lo, splat(0.0f));  // hi = +-Inf makes lo NaN: exp is 0 there
  const i8 pos = m > 0.0f;
  const f8 e = opsdk_vec::exp_nonpositive(-vabs(m)) * (1.0f - select(pos, lo, -lo));
  return select(pos, x * e, x) / (1.0f + e);
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
  const bool streaming = n * static_cast<int64_t>(sizeof(T)) >= opsdk_vec::kStreamBytes;
  ctx.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    if (tanh) {
      opsdk_vec::map(px + begin, py + begin, end - begin, gelu_tanh, streaming);
    } else {
      opsdk_vec::map(px + begin, py + begin, end - begin, gelu_erf, streaming);
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("Gelu")
    .Input(0, "X", "float16")
    .Output(0, "Y", "float16")
    .Attr("approximate", "string")
    .KernelFn(gelu<opsdk::half>);

REGISTER_CUSTOM_OP("Gelu")
    .Input(0, "X", "float32")
    .Output(0, "Y", "float32")
    .Attr("approximate", "string")
    .KernelFn(gelu<float>);

REGISTER_CUSTOM_OP("Gelu")
    .Input(0, "X", "bfloat16")
    .Output(0, "Y", "bfloat16")
    .Attr("approximate", "string")
    .KernelFn(gelu<opsdk::bfloat16>);
