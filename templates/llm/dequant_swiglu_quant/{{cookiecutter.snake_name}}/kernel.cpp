// {{ cookiecutter.op_name }} CPU kernel (from the {{ cookiecutter.starter }} starter).
//
// Per token (a row of 2H int32 values): dequantise into a float32 row buffer, silu(gate) * up
// (silu with e = exp(-|x|), never overflowing), the row's largest magnitude, then
// y = clip(round_half_even(act / scale), -127, 127) with scale = max / 127 (0 gives y = 0).
// Tokens are spread over the threads.
#include <opsdk/custom_op.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

constexpr int64_t kGrainElems = 1 << 15;  // elements per task

inline float silu(float g) {
  const float e = std::exp(-std::fabs(g));
  return (g > 0.0f ? g : g * e) / (1.0f + e);
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
    std::vector<float> act(static_cast<size_t>(h));
    for (int64_t t = t0; t < t1; ++t) {
      const int32_t* xr = px + t * d;
      float amax = 0.0f;
      for (int64_t i = 0; i < h; ++i) {
        const float gate = static_cast<float>(xr[i]) * pws[i] * pas[t];
        const float up = static_cast<float>(xr[h + i]) * pws[h + i] * pas[t];
        const float a = silu(gate) * up;
        act[static_cast<size_t>(i)] = a;
        amax = std::max(amax, std::fabs(a));
      }
      const float scale = amax / 127.0f;
      pscale[t] = scale;
      const float safe = scale == 0.0f ? 1.0f : scale;
      for (int64_t i = 0; i < h; ++i) {
        const float q = std::nearbyint(act[static_cast<size_t>(i)] / safe);  // half to even
        py[t * h + i] = static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, q)));
      }
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("{{ cookiecutter.op_name }}")
    .Kernels<opsdk::Types<>>(OPSDK_KERNEL_TEMPLATE({{ cookiecutter.snake_name }}_kernel));
