// {{ cookiecutter.op_name }} CPU kernel (ONNX RMSNormalization, opset 23, stash_type 1).
//
// X is seen as rows x D (D = the product of the dims from `axis` on). scale is widened once
// per call into D floats, broadcast over the normalised dims. Per row (opsdk/rms.h, on
// opsdk/vec.h): the sum of squares at the target's vector width in float32 blocks flushed
// into a double, then Y = X * rstd * scale, narrowed to T. Rows are spread over the threads.
#include <opsdk/custom_op.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <opsdk/rms.h>

namespace {

constexpr int64_t kGrainElems = 1 << 16;  // elements per task

// scale (broadcastable to X.shape[axis:]) as the D floats of one row.
template <class T>
std::vector<float> widen_scale(const opsdk::Tensor& s, const std::vector<int64_t>& xshape,
                               int64_t axis, int64_t d) {
  const int64_t rank = static_cast<int64_t>(xshape.size()), shift = rank - s.ndim();
  if (shift < axis) throw opsdk::OpError("input 'scale' has more dims than X.shape[axis:]");
  for (int64_t k = shift; k < rank; ++k) {
    const int64_t sd = s.size(k - shift);
    if (sd != 1 && sd != xshape[static_cast<size_t>(k)]) {
      throw opsdk::OpError("input 'scale' does not broadcast to X.shape[axis:]");
    }
  }
  const T* ps = s.data<T>();
  std::vector<float> out(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) {
    int64_t rem = i, off = 0;
    for (int64_t k = rank - 1; k >= axis; --k) {
      const int64_t idx = rem % xshape[static_cast<size_t>(k)];
      rem /= xshape[static_cast<size_t>(k)];
      if (k >= shift && s.size(k - shift) != 1) off += idx * s.stride(k - shift);
    }
    out[static_cast<size_t>(i)] = opsdk::to_float(ps[off]);
  }
  return out;
}

template <class T>
void {{ cookiecutter.snake_name }}_kernel(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  if (ctx.attr<int64_t>("stash_type") != 1) {
    throw opsdk::OpError("attribute 'stash_type' must be 1 (float32 statistics)");
  }
  if (x.ndim() == 0) throw opsdk::OpError("input 'x' is a scalar; it needs rank >= 1");
  const int64_t axis = x.norm_dim(ctx.attr<int64_t>("axis"));
  const float eps = ctx.attr<float>("epsilon");
  int64_t d = 1;
  for (int64_t k = axis; k < x.ndim(); ++k) d *= x.size(k);
  const std::vector<float> scale = widen_scale<T>(ctx.input(1), x.shape(), axis, d);
  const int64_t rows = d ? x.numel() / d : 0;
  const T* px = x.data<T>();
  T* py = ctx.output(0).template mutable_data<T>();
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(d, 1));
  ctx.parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const double mean_sq = opsdk_rms::sum_squares(px + r * d, d) / static_cast<double>(d);
      const float rstd = static_cast<float>(1.0 / std::sqrt(mean_sq + static_cast<double>(eps)));
      opsdk_rms::scale_row(px + r * d, py + r * d, d, rstd, scale.data());
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("{{ cookiecutter.op_name }}")
    .Kernels<opsdk::bfloat16, opsdk::half, float>(OPSDK_KERNEL_TEMPLATE({{ cookiecutter.snake_name }}_kernel));
