// {{ cookiecutter.op_name }} CPU kernel (from the {{ cookiecutter.starter }} starter).
//
// x is seen as rows x D. Per row (opsdk/rms.h, on opsdk/vec.h): the sum of squares at the
// target's vector width, in float32 blocks of 1024 flushed into a double so long rows keep
// float32 accuracy; then y = x * rstd * gamma, narrowed to T. gamma is widened to float32
// once per call; rows are spread over the threads. Outputs of 16 MiB and more are written
// with non-temporal stores (they do not fit in the cache anyway).
#include <opsdk/custom_op.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <opsdk/rms.h>

namespace {

constexpr int64_t kGrainElems = 1 << 16;  // elements per task

template <class T>
void {{ cookiecutter.snake_name }}_kernel(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const opsdk::Tensor& g = ctx.input(1);
  const float eps = ctx.attr<float>("epsilon");
  if (x.ndim() == 0) throw opsdk::OpError("input 'x' is a scalar; it needs rank >= 1");
  const int64_t d = x.size(x.ndim() - 1);
  if (g.ndim() != 1 || g.size(0) != d) {
    throw opsdk::OpError("input 'gamma' must have shape (D,), D = x's last dim");
  }
  const int64_t rows = ctx.output(1).numel();
  std::vector<float> gamma(static_cast<size_t>(d));
  const T* pg = g.data<T>();
  for (int64_t i = 0; i < d; ++i) gamma[static_cast<size_t>(i)] = opsdk::to_float(pg[i]);
  const T* px = x.data<T>();
  T* py = ctx.output(0).template mutable_data<T>();
  float* prstd = ctx.output(1).mutable_data<float>();
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(d, 1));
  // An output larger than the cache is written with non-temporal stores (opsdk/vec.h).
  const bool streaming = rows * d * static_cast<int64_t>(sizeof(T)) >= opsdk_vec::kStreamBytes;
  ctx.parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const double mean_sq = opsdk_rms::sum_squares(px + r * d, d) / static_cast<double>(std::max<int64_t>(d, 1));
      const float rstd = static_cast<float>(1.0 / std::sqrt(mean_sq + static_cast<double>(eps)));
      prstd[r] = rstd;
      opsdk_rms::scale_row(px + r * d, py + r * d, d, rstd, gamma.data(), streaming);
    }
    if (streaming) opsdk_vec::stream_fence();
  });
}

}  // namespace

REGISTER_CUSTOM_OP("{{ cookiecutter.op_name }}")
    .Kernels<opsdk::bfloat16, opsdk::half, float>(OPSDK_KERNEL_TEMPLATE({{ cookiecutter.snake_name }}_kernel));
