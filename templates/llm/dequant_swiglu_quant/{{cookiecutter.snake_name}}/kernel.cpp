// {{ cookiecutter.op_name }} CPU kernel (from the {{ cookiecutter.starter }} starter).
//
// Per token (a row of 2H int32 values), three passes over float32 row buffers of H:
//   1. dequantise gate and up (v = x * weight_scale * activation_scale; the compiler
//      vectorises the int32 -> float32 loop);
//   2. act = silu(gate) * up at the target's vector width (opsdk_vec::wide; silu with
//      e = exp(-|x|), never overflowing) and the row's largest magnitude;
//   3. y = clip(round_half_even(act / scale), -127, 127) with scale = max / 127 (0 gives
//      y = 0), in a loop the compiler vectorises.
// Tokens are spread over the threads.
#include <opsdk/custom_op.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <opsdk/vec.h>

namespace {

namespace w = opsdk_vec::wide;
constexpr int64_t kGrainElems = 1 << 15;  // elements per task

inline w::vf silu_mul(w::vf g, w::vf u) {
  const w::vf e = w::exp_nonpositive(-w::vabs(g));
  return w::select(w::gt(g, w::splat(0.0f)), g, g * e) / (w::splat(1.0f) + e) * u;
}

// gate[i] = silu(gate[i]) * up[i] in place; returns max |gate[i]| (a NaN lane is skipped).
float silu_mul_row(float* gate, const float* up, int64_t n) {
  w::vf m = w::splat(0.0f);
  int64_t i = 0;
  for (; i + w::kLanes <= n; i += w::kLanes) {
    const w::vf a = silu_mul(w::load(gate + i), w::load(up + i));
    w::store(gate + i, a);
    m = w::vmax(w::vabs(a), m);
  }
  if (i < n) {
    const int64_t k = n - i;
    const w::vf a = silu_mul(w::load_partial(gate + i, k), w::load_partial(up + i, k));
    w::store_partial(gate + i, a, k);
    m = w::vmax(w::vabs(a), m);
  }
  return w::hmax(m);
}

// y[i] = clip(round_half_even(act[i] / safe), -127, 127). Clipping to the integers +-127
// first gives the same result; adding and subtracting 1.5 * 2^23 then rounds half to even
// (|v| <= 127 < 2^22).
void quantize_row(const float* act, int8_t* y, int64_t n, float safe) {
  constexpr float kRound = 12582912.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = std::min(127.0f, std::max(-127.0f, act[i] / safe));
    v = (v + kRound) - kRound;
    y[i] = static_cast<int8_t>(static_cast<int32_t>(v));
  }
}

template <class...>  // no type variables: one dtype column, int32 in, int8 out
void {{ cookiecutter.snake_name }}_kernel(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const opsdk::Tensor& ws = ctx.input(1);
  const opsdk::Tensor& as = ctx.input(2);
  if (x.ndim() == 0) throw opsdk::OpError("input 'x' is a scalar; it needs rank >= 1");
  const int64_t d = x.size(x.ndim() - 1), h = d / 2;
  if (d % 2 != 0) throw opsdk::OpError("input 'x' must have an even last dim (2H)");
  if (ws.ndim() != 1 || ws.size(0) != d) throw opsdk::OpError("input 'weight_scale' must be (2H,)");
  const int64_t tokens = ctx.output(0).numel();
  if (as.numel() != tokens) throw opsdk::OpError("input 'activation_scale' must be x.shape[:-1]");
  const int32_t* px = x.data<int32_t>();
  const float* pws = ws.data<float>();
  const float* pas = as.data<float>();
  float* pscale = ctx.output(0).mutable_data<float>();
  int8_t* py = ctx.output(1).mutable_data<int8_t>();
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(d, 1));
  ctx.parallel_for(tokens, grain, [&](int64_t t0, int64_t t1) {
    std::vector<float> gate(static_cast<size_t>(h)), up(static_cast<size_t>(h));
    float* pg = gate.data();
    float* pu = up.data();
    for (int64_t t = t0; t < t1; ++t) {
      const int32_t* xr = px + t * d;
      const float ts = pas[t];
      for (int64_t i = 0; i < h; ++i) {
        pg[i] = static_cast<float>(xr[i]) * pws[i] * ts;
        pu[i] = static_cast<float>(xr[h + i]) * pws[h + i] * ts;
      }
      const float scale = silu_mul_row(pg, pu, h) / 127.0f;
      pscale[t] = scale;
      quantize_row(pg, py + t * h, h, scale == 0.0f ? 1.0f : scale);
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("{{ cookiecutter.op_name }}")
    .Kernels<opsdk::Types<>>(OPSDK_KERNEL_TEMPLATE({{ cookiecutter.snake_name }}_kernel));
