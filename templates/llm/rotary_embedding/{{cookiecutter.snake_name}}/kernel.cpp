// {{ cookiecutter.op_name }} CPU kernel (from the {{ cookiecutter.starter }} starter).
//
// x is seen as rows of D features; each row finds its cos/sin row (R features) through the
// broadcast of cos's leading dims onto x's in O(rank). Rotate-half rows run at the target's
// vector width (opsdk_vec::wide) over the two halves at once; interleaved rows pair adjacent
// features. All arithmetic is float32; features from R on are copied.
#include <opsdk/custom_op.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <opsdk/vec.h>

namespace {

namespace w = opsdk_vec::wide;
constexpr int64_t kGrainElems = 1 << 15;  // elements per task

// y1 = x1 c1 - x2 s1 and y2 = x2 c2 + x1 s2 over the halves [0, h) and [h, 2h).
template <class T>
void rotate_half_row(const T* x, const T* c, const T* s, T* y, int64_t h) {
  auto step = [&](int64_t i, int64_t k) {
    const w::vf x1 = w::load_partial(x + i, k), x2 = w::load_partial(x + h + i, k);
    const w::vf y1 = x1 * w::load_partial(c + i, k) - x2 * w::load_partial(s + i, k);
    const w::vf y2 = x2 * w::load_partial(c + h + i, k) + x1 * w::load_partial(s + h + i, k);
    w::store_partial(y + i, y1, k);
    w::store_partial(y + h + i, y2, k);
  };
  int64_t i = 0;
  for (; i + w::kLanes <= h; i += w::kLanes) {
    const w::vf x1 = w::load_f(x + i), x2 = w::load_f(x + h + i);
    w::store_f(y + i, x1 * w::load_f(c + i) - x2 * w::load_f(s + i));
    w::store_f(y + h + i, x2 * w::load_f(c + h + i) + x1 * w::load_f(s + h + i));
  }
  if (i < h) step(i, h - i);
}

template <class T>
void interleaved_row(const T* x, const T* c, const T* s, T* y, int64_t r) {
  for (int64_t i = 0; i + 1 < r; i += 2) {
    const float a = opsdk::to_float(x[i]), b = opsdk::to_float(x[i + 1]);
    opsdk::from_float(a * opsdk::to_float(c[i]) - b * opsdk::to_float(s[i]), y + i);
    opsdk::from_float(b * opsdk::to_float(c[i + 1]) + a * opsdk::to_float(s[i + 1]), y + i + 1);
  }
}

template <class T>
void {{ cookiecutter.snake_name }}_kernel(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const opsdk::Tensor& cos = ctx.input(1);
  const opsdk::Tensor& sin = ctx.input(2);
  const int64_t interleaved = ctx.attr<int64_t>("interleaved");
  if (x.ndim() == 0 || cos.ndim() == 0) throw opsdk::OpError("inputs 'x' and 'cos' need rank >= 1");
  if (sin.shape() != cos.shape()) throw opsdk::OpError("input 'sin' must have cos's shape");
  const int64_t d = x.size(x.ndim() - 1), r = cos.size(cos.ndim() - 1);
  if (r % 2 != 0 || r > d) throw opsdk::OpError("input 'cos': last dim must be even and <= x's");
  // Per leading dim of x, the step of cos's row index (0 where cos broadcasts).
  const int64_t lead = x.ndim() - 1, shift = lead - (cos.ndim() - 1);
  if (shift < 0) throw opsdk::OpError("input 'cos' has a higher rank than x");
  std::vector<int64_t> dims(static_cast<size_t>(lead)), step(static_cast<size_t>(lead), 0);
  int64_t cstride = 1;
  for (int64_t k = lead - 1; k >= 0; --k) {
    dims[static_cast<size_t>(k)] = x.size(k);
    if (k < shift) continue;
    const int64_t cd = cos.size(k - shift);
    if (cd != 1 && cd != x.size(k)) throw opsdk::OpError("input 'cos' does not broadcast to x");
    if (cd != 1) step[static_cast<size_t>(k)] = cstride;
    cstride *= cd;
  }
  const T* px = x.data<T>();
  const T* pc = cos.data<T>();
  const T* ps = sin.data<T>();
  T* py = ctx.output(0).template mutable_data<T>();
  const int64_t rows = d ? x.numel() / d : 0;
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(d, 1));
  ctx.parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      int64_t crow = 0;
      for (int64_t k = lead - 1, rem = row; k >= 0; --k) {
        crow += (rem % dims[static_cast<size_t>(k)]) * step[static_cast<size_t>(k)];
        rem /= dims[static_cast<size_t>(k)];
      }
      const T* xr = px + row * d;
      T* yr = py + row * d;
      if (interleaved) {
        interleaved_row(xr, pc + crow * r, ps + crow * r, yr, r);
      } else {
        rotate_half_row(xr, pc + crow * r, ps + crow * r, yr, r / 2);
      }
      if (d > r) std::memcpy(yr + r, xr + r, static_cast<size_t>(d - r) * sizeof(T));
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("{{ cookiecutter.op_name }}")
    .Kernels<opsdk::bfloat16, opsdk::half, float>(OPSDK_KERNEL_TEMPLATE({{ cookiecutter.snake_name }}_kernel));
