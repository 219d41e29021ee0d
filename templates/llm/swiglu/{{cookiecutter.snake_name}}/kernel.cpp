// {{ cookiecutter.op_name }} CPU kernel (from the {{ cookiecutter.starter }} starter): y = silu(gate) * up.
//
// silu(x) = x * sigmoid(x), computed with e = exp(-|x|) (never overflows) as x / (1 + e) for
// x > 0 and x e / (1 + e) otherwise, at the target's vector width (opsdk_vec::wide), in
// float32 for every dtype. Equal shapes take the vector path over threads; broadcast
// inputs take an index-mapping path.
#include <opsdk/custom_op.h>

#include <cmath>
#include <vector>

#include <opsdk/vec.h>

namespace {

namespace w = opsdk_vec::wide;
constexpr int64_t kGrain = 1 << 15;  // elements per task

inline w::vf swiglu(w::vf g, w::vf u) {
  const w::vf e = w::exp_nonpositive(-w::vabs(g));
  const w::vf num = w::select(w::gt(g, w::splat(0.0f)), g, g * e);
  return num / (w::splat(1.0f) + e) * u;
}

inline float swiglu(float g, float u) {
  const float e = std::exp(-std::fabs(g));
  return (g > 0.0f ? g : g * e) / (1.0f + e) * u;
}

// Element offset in `src` of flat output index `i`, with NumPy broadcasting.
int64_t broadcast_offset(const opsdk::Tensor& src, const std::vector<int64_t>& out_shape,
                         int64_t i) {
  int64_t off = 0;
  const int64_t shift = static_cast<int64_t>(out_shape.size()) - src.ndim();
  for (int64_t d = static_cast<int64_t>(out_shape.size()) - 1; d >= 0; --d) {
    const int64_t idx = i % out_shape[static_cast<size_t>(d)];
    i /= out_shape[static_cast<size_t>(d)];
    const int64_t sd = d - shift;
    if (sd >= 0 && src.size(sd) != 1) off += idx * src.stride(sd);
  }
  return off;
}

template <class T>
void {{ cookiecutter.snake_name }}_kernel(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& gate = ctx.input(0);
  const opsdk::Tensor& up = ctx.input(1);
  opsdk::Tensor& y = ctx.output(0);
  const T* pg = gate.data<T>();
  const T* pu = up.data<T>();
  T* py = y.mutable_data<T>();
  const int64_t n = y.numel();
  if (gate.numel() == n && up.numel() == n) {
    ctx.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      int64_t i = begin;
      for (; i + w::kLanes <= end; i += w::kLanes) {
        w::store_f(py + i, swiglu(w::load_f(pg + i), w::load_f(pu + i)));
      }
      if (i < end) {
        const int64_t k = end - i;
        w::store_partial(py + i, swiglu(w::load_partial(pg + i, k), w::load_partial(pu + i, k)), k);
      }
    });
    return;
  }
  ctx.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float g = opsdk::to_float(pg[broadcast_offset(gate, y.shape(), i)]);
      const float u = opsdk::to_float(pu[broadcast_offset(up, y.shape(), i)]);
      opsdk::from_float(swiglu(g, u), py + i);
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("{{ cookiecutter.op_name }}")
    .Kernels<opsdk::bfloat16, opsdk::half, float>(OPSDK_KERNEL_TEMPLATE({{ cookiecutter.snake_name }}_kernel));
