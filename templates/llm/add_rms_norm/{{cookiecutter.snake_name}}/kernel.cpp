// {{ cookiecutter.op_name }} CPU kernel (from the {{ cookiecutter.starter }} starter).
//
// Rows of D: x = x1 + x2 in float32 into a per-task row buffer (written out rounded to T as
// the residual), the sum of squares of that row at the target's vector width in blocks of
// 1024 flushed into a double, then y = x * rstd * gamma from the float32 row.
#include <opsdk/custom_op.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <opsdk/vec.h>

namespace {

namespace w = opsdk_vec::wide;
constexpr int64_t kBlock = 1024;          // elements summed in float32 before a double flush
constexpr int64_t kGrainElems = 1 << 16;  // elements per task

// row = a + b (float32), written to `sum` as T; returns the sum of squares of row.
template <class T>
double add_row(const T* a, const T* b, T* sum, float* row, int64_t n) {
  double total = 0.0;
  for (int64_t blk = 0; blk < n; blk += kBlock) {
    const int64_t e = std::min(n, blk + kBlock);
    w::vf acc = w::splat(0.0f);
    int64_t i = blk;
    for (; i + w::kLanes <= e; i += w::kLanes) {
      const w::vf v = w::load_f(a + i) + w::load_f(b + i);
      w::store(row + i, v);
      w::store_f(sum + i, v);
      acc = w::fma(v, v, acc);
    }
    if (i < e) {
      const int64_t k = e - i;
      const w::vf v = w::load_partial(a + i, k) + w::load_partial(b + i, k);
      w::store_partial(row + i, v, k);
      w::store_partial(sum + i, v, k);
      acc = w::fma(v, v, acc);
    }
    total += static_cast<double>(w::hsum(acc));
  }
  return total;
}

template <class T>
void {{ cookiecutter.snake_name }}_kernel(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x1 = ctx.input(0);
  const opsdk::Tensor& x2 = ctx.input(1);
  const opsdk::Tensor& g = ctx.input(2);
  const float eps = ctx.attr<float>("epsilon");
  if (x1.ndim() == 0) throw opsdk::OpError("input 'x1' is a scalar; it needs rank >= 1");
  if (x2.shape() != x1.shape()) throw opsdk::OpError("input 'x2' must have x1's shape");
  const int64_t d = x1.size(x1.ndim() - 1);
  if (g.ndim() != 1 || g.size(0) != d) {
    throw opsdk::OpError("input 'gamma' must have shape (D,), D = x1's last dim");
  }
  const int64_t rows = ctx.output(1).numel();
  std::vector<float> gamma(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) gamma[static_cast<size_t>(i)] = opsdk::to_float(g.data<T>()[i]);
  const T* pa = x1.data<T>();
  const T* pb = x2.data<T>();
  T* py = ctx.output(0).template mutable_data<T>();
  float* prstd = ctx.output(1).mutable_data<float>();
  T* px = ctx.output(2).template mutable_data<T>();
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(d, 1));
  ctx.parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(d));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t o = r * d;
      const double ss = add_row(pa + o, pb + o, px + o, row.data(), d);
      const double mean_sq = ss / static_cast<double>(std::max<int64_t>(d, 1));
      const float rstd = static_cast<float>(1.0 / std::sqrt(mean_sq + static_cast<double>(eps)));
      prstd[r] = rstd;
      const w::vf s = w::splat(rstd);
      int64_t i = 0;
      for (; i + w::kLanes <= d; i += w::kLanes) {
        w::store_f(py + o + i, w::load(row.data() + i) * s * w::load(gamma.data() + i));
      }
      if (i < d) {
        const int64_t k = d - i;
        w::store_partial(py + o + i, w::load_partial(row.data() + i, k) * s *
                                         w::load_partial(gamma.data() + i, k), k);
      }
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("{{ cookiecutter.op_name }}")
    .Kernels<opsdk::bfloat16, opsdk::half, float>(OPSDK_KERNEL_TEMPLATE({{ cookiecutter.snake_name }}_kernel));
