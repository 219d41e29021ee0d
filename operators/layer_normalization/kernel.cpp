// LayerNormalization CPU kernel (ONNX LayerNormalization, opset 17, stash_type 1).
//
// X is seen as rows x D (D = the product of the dims from `axis` on). Each row takes
// three passes at the target's natural vector width (opsdk_vec::wide: 16 lanes on
// AVX-512, 8 elsewhere) over data that stays in cache: the sum (-> Mean), the sum of
// squared deviations from the mean (-> InvStdDev; two passes, so a large mean does not
// cancel the variance away), and Y = (X - Mean) * InvStdDev * Scale + B. Sums run in
// four vector float32 accumulators flushed into a double every 1024 elements, so long rows
// keep float32 accuracy. float16/bfloat16 rows are widened once into a per-task float32
// buffer. Rows are spread over the threads; Scale and B are widened once per call into
// one row per distinct index over X's outer axes (ONNX lets them broadcast to all of X),
// so a row looks its parameters up in O(axis) and the inner loop stays the same.
#include <opsdk/custom_op.h>

#include <cmath>
#include <vector>

#include <opsdk/vec.h>

namespace {


constexpr int64_t kBlock = 1024;           // elements summed in float32 before a double flush
constexpr int64_t kGrainElems = 1 << 16;   // elements per task (~50 us): smaller runs on one thread

// sum(x) when mean == 0, else sum((x - mean)^2), in float32 blocks flushed to double.
template <bool kSquares>
double row_sum(const float* x, int64_t n, float mean) {
  using namespace opsdk_vec::wide;
  constexpr int64_t L = kLanes;
  double total = 0.0;
  const vf m = splat(mean);
  auto term = [&](vf v) {
    if constexpr (kSquares) {
      v -= m;
      return v * v;
    } else {
      return v;
    }
  };
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    vf a0 = splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = b;
    for (; i + 4 * L <= e; i += 4 * L) {
      a0 += term(load(x + i));
      a1 += term(load(x + i + L));
      a2 += term(load(x + i + 2 * L));
      a3 += term(load(x + i + 3 * L));
    }
    for (; i + L <= e; i += L) a0 += term(load(x + i));
    float tail = 0.0f;
    for (; i < e; ++i) {
      const float d = kSquares ? x[i] - mean : x[i];
      tail += kSquares ? d * d : d;
    }
    total += static_cast<double>(hsum((a0 + a1) + (a2 + a3))) + tail;
  }
  return total;
}

// y = (x - mean) * inv * scale + bias over one row, narrowed to T.
template <class T>
void normalize_row(const float* x, T* y, int64_t n, float mean, float inv, const float* scale,
                   const float* bias) {
  using namespace opsdk_vec::wide;
  constexpr int64_t L = kLanes;
  const vf m = splat(mean), s = splat(inv);
  int64_t i = 0;
  if (bias) {
    for (; i + L <= n; i += L) store_f(y + i, fma((load(x + i) - m) * s, load(scale + i),
                                                  load(bias + i)));
    if (i < n) {
      const int64_t k = n - i;
      store_partial(y + i, fma((load_partial(x + i, k) - m) * s, load_partial(scale + i, k),
                               load_partial(bias + i, k)), k);
    }
  } else {
    for (; i + L <= n; i += L) store_f(y + i, (load(x + i) - m) * s * load(scale + i));
    if (i < n) {
      const int64_t k = n - i;
      store_partial(y + i, (load_partial(x + i, k) - m) * s * load_partial(scale + i, k), k);
    }
  }
}

// A parameter (Scale or B) broadcast to X: `blocks` rows of D floats, one per distinct
// index of the parameter over X's outer axes (1 when it varies only along the normalised
// axes), and per outer axis of X the step between blocks (0 where the parameter is 1).
// A row of X finds its block in O(axis) -- no per-element broadcast in the hot loop.
// `d` elements of a float16/bfloat16 row as float32.
template <class T>
const float* widen_row(const T* src, int64_t d, float* dst) {
  using namespace opsdk_vec::wide;
  int64_t i = 0;
  for (; i + kLanes <= d; i += kLanes) opsdk_vec::wide::store(dst + i, load_f(src + i));
  if (i < d) store_partial(dst + i, load_partial(src + i, d - i), d - i);
  return dst;
}

template <class T>
struct Param {
  const float* data = nullptr;
  const T* raw = nullptr;     // set instead of `data`: contiguous T blocks, widened per row
  std::vector<int64_t> step;  // empty: one block for every row
  std::vector<float> buf;

  // The parameters of row r; `tmp` (d floats) holds them when they are widened per row.
  const float* row(int64_t r, const std::vector<int64_t>& outer, int64_t d, float* tmp) const {
    int64_t block = 0;
    for (size_t k = step.empty() ? 0 : outer.size(); k-- > 0;) {
      block += (r % outer[k]) * step[k];
      r /= outer[k];
    }
    if constexpr (!std::is_same_v<T, float>) {
      if (raw) return widen_row(raw + block * d, d, tmp);
    }
    return data + block * d;
  }
};

template <class T>
void widen_param(const opsdk::Tensor& p, const std::vector<int64_t>& xshape, int64_t axis,
                 int64_t d, Param<T>& out) {
  const int64_t rank = static_cast<int64_t>(xshape.size()), shift = rank - p.ndim();
  auto pdim = [&](int64_t k) { return k >= shift ? p.size(k - shift) : int64_t{1}; };
  std::vector<int64_t> step(static_cast<size_t>(axis), 0);
  int64_t blocks = 1;
  for (int64_t k = axis - 1; k >= 0; --k) {
    if (pdim(k) != 1) step[static_cast<size_t>(k)] = blocks;
    blocks *= pdim(k);
  }
  const T* src = p.data<T>();
  if (blocks > 1 && p.numel() == blocks * d && p.is_contiguous()) {  // as large as X: no copy
    if constexpr (std::is_same_v<T, float>) out.data = src; else out.raw = src;
    out.step = std::move(step);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {  // D contiguous floats
    if (p.numel() == d && p.is_contiguous()) {
      out.data = src;
      return;
    }
  }
  // Offsets of one block's D elements (X's normalised dims) and of each block's start.
  std::vector<int64_t> inner(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) {
    int64_t rem = i, off = 0;
    for (int64_t k = rank - 1; k >= axis; --k) {
      const int64_t idx = rem % xshape[static_cast<size_t>(k)];
      rem /= xshape[static_cast<size_t>(k)];
      if (k >= shift && p.size(k - shift) != 1) off += idx * p.stride(k - shift);
    }
    inner[static_cast<size_t>(i)] = off;
  }
  out.buf.resize(static_cast<size_t>(blocks * d));
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t rem = b, base = 0;
    for (int64_t k = axis - 1; k >= 0; --k) {
      const int64_t idx = rem % pdim(k);
      rem /= pdim(k);
      if (k >= shift) base += idx * p.stride(k - shift);
    }
    float* dst = out.buf.data() + b * d;
    for (int64_t i = 0; i < d; ++i) dst[i] = opsdk::to_float(src[base + inner[static_cast<size_t>(i)]]);
  }
  out.data = out.buf.data();
  if (blocks > 1) out.step = std::move(step);
}

template <class T>
void layer_norm(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const int64_t axis = x.norm_dim(ctx.attr<int64_t>("axis"));
  if (ctx.attr<int64_t>("stash_type") != 1)
    throw opsdk::OpError("attribute 'stash_type' must be 1 (float32 statistics)");
  const float eps = ctx.attr<float>("epsilon");
  const std::vector<int64_t>& xshape = x.shape();
  const std::vector<int64_t> outer(xshape.begin(), xshape.begin() + axis);
  int64_t d = 1;
  for (size_t k = static_cast<size_t>(axis); k < xshape.size(); ++k) d *= xshape[k];
  const int64_t rows = d ? x.numel() / d : 0;
  Param<T> scale, bias;
  widen_param<T>(ctx.input(1), xshape, axis, d, scale);
  const bool has_bias = ctx.has_input(2);
  if (has_bias) widen_param<T>(ctx.input(2), xshape, axis, d, bias);
  const T* px = x.data<T>();
  T* py = ctx.output(0).template mutable_data<T>();
  float* pmean = ctx.output(1).mutable_data<float>();
  float* pinv = ctx.output(2).mutable_data<float>();
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(d, 1));
  ctx.parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    // float32 copies of a float16/bfloat16 row of X, Scale and B, once per task
    std::vector<float> row, srow, brow;
    if constexpr (!std::is_same_v<T, float>) {
      row.resize(static_cast<size_t>(d) + 8);
      if (scale.raw) srow.resize(static_cast<size_t>(d) + 8);
      if (bias.raw) brow.resize(static_cast<size_t>(d) + 8);
    }
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr;
      if constexpr (std::is_same_v<T, float>) {
        xr = px + r * d;
      } else {
        xr = widen_row(px + r * d, d, row.data());
      }
      const float mean = static_cast<float>(row_sum<false>(xr, d, 0.0f) / static_cast<double>(d));
      const double var = row_sum<true>(xr, d, mean) / static_cast<double>(d);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
      pmean[r] = mean;
      pinv[r] = inv;
      normalize_row(xr, py + r * d, d, mean, inv, scale.row(r, outer, d, srow.data()),
                    has_bias ? bias.row(r, outer, d, brow.data()) : nullptr);
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("LayerNormalization")
    .Kernels<opsdk::half, float, opsdk::bfloat16>(OPSDK_KERNEL_TEMPLATE(layer_norm));
