// LayerNormalization CPU kernel (ONNX LayerNormalization, opset 17, stash_type 1).
//
// X is seen as rows x D (D = the product of the dims from `axis` on). Each row takes
// three vectorised passes over data that stays in cache: the sum (-> Mean), the sum of
// squared deviations from the mean (-> InvStdDev; two passes, so a large mean does not
// cancel the variance away), and Y = (X - Mean) * InvStdDev * Scale + B. Sums run in
// 8-lane float32 accumulators flushed into a double every 1024 elements, so long rows
// keep float32 accuracy. float16/bfloat16 rows are widened once into a per-task float32
// buffer. Rows are spread over the threads; Scale and B are widened (and broadcast to
// X.shape[axis:]) once per call.
#include <opsdk/custom_op.h>

#include <cmath>
#include <vector>

#include <opsdk/vec.h>

namespace {

using opsdk_vec::f8;
using opsdk_vec::load;

constexpr int64_t kBlock = 1024;           // elements summed in float32 before a double flush
constexpr int64_t kGrainElems = 1 << 16;   // elements per task (~50 us): smaller runs on one thread

// sum(x) when mean == 0, else sum((x - mean)^2), in float32 blocks flushed to double.
template <bool kSquares>
double row_sum(const float* x, int64_t n, float mean) {
  double total = 0.0;
  const f8 m = opsdk_vec::splat(mean);
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    f8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
    int64_t i = b;
    for (; i + 32 <= e; i += 32) {
      f8 v0 = load(x + i), v1 = load(x + i + 8), v2 = load(x + i + 16), v3 = load(x + i + 24);
      if constexpr (kSquares) {
        v0 -= m; v1 -= m; v2 -= m; v3 -= m;
        a0 += v0 * v0; a1 += v1 * v1; a2 += v2 * v2; a3 += v3 * v3;
      } else {
        a0 += v0; a1 += v1; a2 += v2; a3 += v3;
      }
    }
    for (; i + 8 <= e; i += 8) {
      f8 v = load(x + i);
      if constexpr (kSquares) {
        v -= m;
        a0 += v * v;
      } else {
        a0 += v;
      }
    }
    float tail = 0.0f;
    for (; i < e; ++i) {
      const float d = kSquares ? x[i] - mean : x[i];
      tail += kSquares ? d * d : d;
    }
    total += static_cast<double>(opsdk_vec::hsum((a0 + a1) + (a2 + a3))) + tail;
  }
  return total;
}

// y = (x - mean) * inv * scale + bias over one row, narrowed to T.
template <class T>
void normalize_row(const float* x, T* y, int64_t n, float mean, float inv, const float* scale,
                   const float* bias) {
  using namespace opsdk_vec;
  const f8 m = splat(mean), s = splat(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f8 v = (load(x + i) - m) * s * load(scale + i);
    if (bias) v += load(bias + i);
    store_f(y + i, v);
  }
  for (; i < n; ++i) {
    const float v = (x[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.0f);
    opsdk::from_float(v, &y[i]);
  }
}

// A parameter (Scale or B) as D contiguous floats, broadcast to X.shape[axis:]. Returns a
// pointer into the input when it already is exactly that; else fills `buf`.
template <class T>
const float* widen_param(const opsdk::Tensor& p, const std::vector<int64_t>& norm_shape,
                         int64_t d, std::vector<float>& buf) {
  const T* src = p.data<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (p.numel() == d) return src;
  }
  buf.resize(static_cast<size_t>(d));
  const int64_t r = static_cast<int64_t>(norm_shape.size());
  const int64_t shift = r - p.ndim();
  for (int64_t i = 0; i < d; ++i) {
    int64_t rem = i, off = 0;
    for (int64_t k = r - 1; k >= 0; --k) {
      const int64_t dim = norm_shape[static_cast<size_t>(k)];
      const int64_t idx = rem % dim;
      rem /= dim;
      if (k - shift >= 0 && p.size(k - shift) != 1) off += idx * p.stride(k - shift);
    }
    buf[static_cast<size_t>(i)] = opsdk::to_float(src[off]);
  }
  return buf.data();
}

template <class T>
void layer_norm(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const int64_t axis = x.norm_dim(ctx.attr<int64_t>("axis"));
  if (ctx.attr<int64_t>("stash_type") != 1)
    throw opsdk::OpError("attribute 'stash_type' must be 1 (float32 statistics)");
  const float eps = ctx.attr<float>("epsilon");
  std::vector<int64_t> norm_shape(x.shape().begin() + axis, x.shape().end());
  int64_t d = 1;
  for (int64_t v : norm_shape) d *= v;
  const int64_t rows = d ? x.numel() / d : 0;
  std::vector<float> sbuf, bbuf;
  const float* scale = widen_param<T>(ctx.input(1), norm_shape, d, sbuf);
  const float* bias = ctx.has_input(2) ? widen_param<T>(ctx.input(2), norm_shape, d, bbuf)
                                       : nullptr;
  const T* px = x.data<T>();
  T* py = ctx.output(0).template mutable_data<T>();
  float* pmean = ctx.output(1).mutable_data<float>();
  float* pinv = ctx.output(2).mutable_data<float>();
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(d, 1));
  ctx.parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<float> row;  // float32 copy of a float16/bfloat16 row, once per task
    if constexpr (!std::is_same_v<T, float>) row.resize(static_cast<size_t>(d) + 8);
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr;
      if constexpr (std::is_same_v<T, float>) {
        xr = px + r * d;
      } else {
        const T* src = px + r * d;
        int64_t i = 0;
        for (; i + 8 <= d; i += 8) opsdk_vec::store(row.data() + i, opsdk_vec::load_f(src + i));
        for (; i < d; ++i) row[static_cast<size_t>(i)] = opsdk::to_float(src[i]);
        xr = row.data();
      }
      const float mean = static_cast<float>(row_sum<false>(xr, d, 0.0f) / static_cast<double>(d));
      const double var = row_sum<true>(xr, d, mean) / static_cast<double>(d);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
      pmean[r] = mean;
      pinv[r] = inv;
      normalize_row(xr, py + r * d, d, mean, inv, scale, bias);
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("LayerNormalization")
    .Input(0, "X", "float16")
    .Input(1, "Scale", "float16")
    .OptionalInput(2, "B", "float16")
    .Output(0, "Y", "float16")
    .Output(1, "Mean", "float32")
    .Output(2, "InvStdDev", "float32")
    .Attr("axis", "int")
    .Attr("epsilon", "float")
    .Attr("stash_type", "int")
    .KernelFn(layer_norm<opsdk::half>);

REGISTER_CUSTOM_OP("LayerNormalization")
    .Input(0, "X", "float32")
    .Input(1, "Scale", "float32")
    .OptionalInput(2, "B", "float32")
    .Output(0, "Y", "float32")
    .Output(1, "Mean", "float32")
    .Output(2, "InvStdDev", "float32")
    .Attr("axis", "int")
    .Attr("epsilon", "float")
    .Attr("stash_type", "int")
    .KernelFn(layer_norm<float>);

REGISTER_CUSTOM_OP("LayerNormalization")
    .Input(0, "X", "bfloat16")
    .Input(1, "Scale", "bfloat16")
    .OptionalInput(2, "B", "bfloat16")
    .Output(0, "Y", "bfloat16")
    .Output(1, "Mean", "float32")
    .Output(2, "InvStdDev", "float32")
    .Attr("axis", "int")
    .Attr("epsilon", "float")
    .Attr("stash_type", "int")
    .KernelFn(layer_norm<opsdk::bfloat16>);
