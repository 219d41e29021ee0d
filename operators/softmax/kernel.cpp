// Softmax CPU kernel (ONNX Softmax, opset 13): y = exp(x - max) / sum(exp(x - max)) along
// one axis.
//
// The input is seen as (outer, D, inner) around the softmax axis. When the axis is the
// last one (inner == 1) each row takes three passes at the target's natural vector width
// (opsdk_vec::wide: 16 lanes on AVX-512, 8 elsewhere; the ragged tail masked): the
// maximum, exp(x - max) written to the output (float32) or a per-task float32 buffer
// (float16/bfloat16) while summing, and the scaling by 1/sum. A row stays in L1/L2 between
// the passes, so only the first reads x from memory. For an inner axis the same passes run
// over tiles of 16 neighbouring columns, so every load is a contiguous 64-byte run and
// nothing is transposed. exp is exp_softmax below (about 2 ulps, gradual underflow,
// exp(-Inf) == 0). Work is spread over the threads by rows (or column tiles).
#include <opsdk/custom_op.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <opsdk/vec.h>

namespace {

using opsdk_vec::f8;
using opsdk_vec::load;
using opsdk_vec::store;

constexpr int64_t kGrainElems = 1 << 16;  // elements per task (~50 us): smaller runs on one thread
constexpr int64_t kTile = 16;             // columns per tile when the axis is not last
constexpr int64_t kChunk = 1 << 14;       // elements per task when one row is split

// exp(r) on |r| <= ln2/2 as 1 + r + r^2 Q(r), Q of degree 3 (minimax).
template <class V>
inline V exp_poly(V r) {
  const V r2 = r * r;
  const V q = (r * 0.008312488465675089f + 0.04189005605662997f) * r2 +
              (r * 0.16667114593471047f + 0.49999232192424886f);
  return 1.0f + (r + r2 * q);
}

// exp(a) for a <= 0 tuned for softmax: as opsdk_vec::exp_nonpositive (gradual underflow,
// exp(-Inf) == 0, NaN kept) but with a one-constant reduction and a degree-5 polynomial:
// about 2 float32 ulps instead of 1.3, for 3 instructions fewer per vector.
inline f8 exp_softmax(f8 a) {
  using namespace opsdk_vec;
  a = max_keep_nan(a, splat(-104.0f));
  const f8 k = a * 1.44269504088896341f + 12582912.0f;
  const f8 n = k - 12582912.0f;
  const f8 p = exp_poly(opsdk_vec::fma(n, splat(-0.693147180559945309f), a));
  return (p * as_f((as_i(k) + (127 + 64 - 0x4B400000)) << 23)) * 5.42101086242752217e-20f;
}

#if defined(__AVX512F__)
// The same on 16 lanes: n = round(a / ln2) by VRNDSCALEPS and 2^n applied by VSCALEFPS,
// which rounds once into the subnormals (no integer exponent arithmetic).
inline opsdk_vec::v16 exp_softmax(opsdk_vec::v16 a) {
  using namespace opsdk_vec;
  a = max_keep_nan(a, splat16(-104.0f));
  const v16 n = (v16)_mm512_roundscale_ps((__m512)(a * 1.44269504088896341f),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const v16 p = exp_poly(opsdk_vec::fma(n, splat16(-0.693147180559945309f), a));
  return (v16)_mm512_scalef_ps((__m512)p, (__m512)n);
}
#endif

// The lanes of a vector past the first `n` set to `fill` (for a row's ragged tail).
inline opsdk_vec::wide::vf past(opsdk_vec::wide::vf v, int64_t n, float fill) {
  using namespace opsdk_vec::wide;
  alignas(64) static const int32_t kIota[16] = {0, 1, 2, 3, 4, 5, 6, 7,
                                                8, 9, 10, 11, 12, 13, 14, 15};
  vi lane;
  std::memcpy(&lane, kIota, sizeof lane);
  return select(lane < static_cast<int32_t>(n), v, splat(fill));
}

// The three passes over a contiguous run of n elements, kLanes wide (16 on AVX-512).
// max(x).
template <class T>
float run_max(const T* x, int64_t n) {
  using namespace opsdk_vec::wide;
  constexpr int64_t L = kLanes;
  vf m0 = splat(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    m0 = vmax(m0, load_f(x + i));
    m1 = vmax(m1, load_f(x + i + L));
    m2 = vmax(m2, load_f(x + i + 2 * L));
    m3 = vmax(m3, load_f(x + i + 3 * L));
  }
  for (; i + L <= n; i += L) m0 = vmax(m0, load_f(x + i));
  if (i < n) m1 = vmax(m1, past(load_partial(x + i, n - i), n - i, -INFINITY));
  return hmax(vmax(vmax(m0, m1), vmax(m2, m3)));
}

// sum(exp(x - max)), the terms stored to e (when not null).
template <class T>
float run_exp_sum(const T* x, float* e, int64_t n, float max) {
  using namespace opsdk_vec::wide;
  using opsdk_vec::wide::store;
  constexpr int64_t L = kLanes;
  const vf m = splat(max);
  vf s0 = splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const vf a = exp_softmax(load_f(x + i) - m);
    const vf b = exp_softmax(load_f(x + i + L) - m);
    const vf c = exp_softmax(load_f(x + i + 2 * L) - m);
    const vf d = exp_softmax(load_f(x + i + 3 * L) - m);
    if (e) {
      store(e + i, a);
      store(e + i + L, b);
      store(e + i + 2 * L, c);
      store(e + i + 3 * L, d);
    }
    s0 += a;
    s1 += b;
    s2 += c;
    s3 += d;
  }
  for (; i + L <= n; i += L) {
    const vf a = exp_softmax(load_f(x + i) - m);
    if (e) store(e + i, a);
    s0 += a;
  }
  if (i < n) {
    const vf a = past(exp_softmax(load_partial(x + i, n - i) - m), n - i, 0.0f);
    if (e) store_partial(e + i, a, n - i);
    s1 += a;
  }
  return hsum((s0 + s1) + (s2 + s3));
}

// y = e * inv (e: the stored exp terms, or null to compute exp(x - max) again).
template <class T>
void run_scale(const T* x, const float* e, T* y, int64_t n, float max, float inv) {
  using namespace opsdk_vec::wide;
  using opsdk_vec::wide::load;
  constexpr int64_t L = kLanes;
  const vf m = splat(max), s = splat(inv);
  auto term = [&](int64_t i) { return e ? load(e + i) : exp_softmax(load_f(x + i) - m); };
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const vf a = term(i) * s, b = term(i + L) * s;
    store_f(y + i, a);
    store_f(y + i + L, b);
  }
  for (; i + L <= n; i += L) store_f(y + i, term(i) * s);
  if (i < n) {
    const vf t = e ? load_partial(e + i, n - i) : exp_softmax(load_partial(x + i, n - i) - m);
    store_partial(y + i, t * s, n - i);
  }
}

// Softmax of one contiguous row of n elements into y: exp(x - max) goes to y itself for
// float32, else to buf (>= n floats), and is scaled by 1 / sum from there.
template <class T>
void softmax_row(const T* x, T* y, int64_t n, float* buf) {
  float* e = nullptr;
  if constexpr (std::is_same_v<T, float>) e = y; else e = buf;
  const float m = run_max(x, n);
  const float inv = 1.0f / run_exp_sum(x, e, n, m);
  run_scale(x, e, y, n, m, inv);
}

// Softmax of one long row split over the threads in chunks: the chunks' maxima, their
// sums of exp(x - max), then the scaling. float16/bfloat16 compute exp again in the last
// pass instead of holding the whole row in a float32 buffer.
template <class T>
void softmax_long_row(const CustomOpKernelContext& ctx, const T* x, T* y, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<float> part(static_cast<size_t>(chunks));
  auto each = [&](auto&& f) {
    ctx.parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) f(c * kChunk, std::min(kChunk, n - c * kChunk), c);
    });
  };
  each([&](int64_t b, int64_t len, int64_t c) { part[c] = run_max(x + b, len); });
  float m = part[0];
  for (float v : part) m = v > m ? v : m;
  float* e = nullptr;
  if constexpr (std::is_same_v<T, float>) e = y;
  each([&](int64_t b, int64_t len, int64_t c) {
    part[c] = run_exp_sum(x + b, e ? e + b : nullptr, len, m);
  });
  double sum = 0.0;
  for (float v : part) sum += v;
  const float inv = static_cast<float>(1.0 / sum);
  each([&](int64_t b, int64_t len, int64_t) {
    run_scale(x + b, e ? e + b : nullptr, y + b, len, m, inv);
  });
}

// Softmax along a strided axis for a tile of w <= kTile contiguous columns starting at
// x / y (stride between axis steps: `inner` elements). buf holds d * kTile floats.
template <class T>
void softmax_tile(const T* x, T* y, int64_t d, int64_t inner, int64_t w, float* buf) {
  using namespace opsdk_vec;
  f8 m0 = splat(-INFINITY), m1 = splat(-INFINITY);
  for (int64_t k = 0; k < d; ++k) {
    float* row = buf + k * kTile;
    const T* src = x + k * inner;
    if (w == kTile) {
      store(row, load_f(src));
      store(row + 8, load_f(src + 8));
    } else {
      for (int64_t j = 0; j < w; ++j) row[j] = opsdk::to_float(src[j]);
      for (int64_t j = w; j < kTile; ++j) row[j] = 0.0f;
    }
    m0 = vmax(m0, load(row));
    m1 = vmax(m1, load(row + 8));
  }
  f8 s0 = {}, s1 = {};
  for (int64_t k = 0; k < d; ++k) {
    float* row = buf + k * kTile;
    const f8 a = exp_softmax(load(row) - m0);
    const f8 b = exp_softmax(load(row + 8) - m1);
    store(row, a);
    store(row + 8, b);
    s0 += a;
    s1 += b;
  }
  const f8 i0 = 1.0f / s0, i1 = 1.0f / s1;
  for (int64_t k = 0; k < d; ++k) {
    const float* row = buf + k * kTile;
    T* dst = y + k * inner;
    const f8 a = load(row) * i0, b = load(row + 8) * i1;
    if (w == kTile) {
      store_f(dst, a);
      store_f(dst + 8, b);
    } else {
      alignas(32) float tmp[kTile];
      store(tmp, a);
      store(tmp + 8, b);
      for (int64_t j = 0; j < w; ++j) opsdk::from_float(tmp[j], &dst[j]);
    }
  }
}

template <class T>
void softmax(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const int64_t axis = x.norm_dim(ctx.attr<int64_t>("axis"));
  const int64_t d = x.size(axis);
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= x.size(k);
  for (int64_t k = axis + 1; k < x.ndim(); ++k) inner *= x.size(k);
  if (x.numel() == 0) return;
  const T* px = x.data<T>();
  T* py = ctx.output(0).template mutable_data<T>();
  if (inner == 1 && d >= 4 * kChunk && ctx.num_threads() > 1 &&
      outer < 4 * ctx.num_threads()) {  // few long rows: each split over the threads
    for (int64_t r = 0; r < outer; ++r) softmax_long_row(ctx, px + r * d, py + r * d, d);
    return;
  }
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainElems / d);
    ctx.parallel_for(outer, grain, [&](int64_t r0, int64_t r1) {
      std::vector<float> buf;
      if constexpr (!std::is_same_v<T, float>) buf.resize(static_cast<size_t>(d) + 16);
      for (int64_t r = r0; r < r1; ++r) softmax_row(px + r * d, py + r * d, d, buf.data());
    });
    return;
  }
  const int64_t tiles = (inner + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, kGrainElems / (d * kTile));
  ctx.parallel_for(outer * tiles, grain, [&](int64_t t0, int64_t t1) {
    std::vector<float> buf(static_cast<size_t>(d * kTile));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / tiles, c = (t % tiles) * kTile;
      const int64_t off = o * d * inner + c;
      softmax_tile(px + off, py + off, d, inner, std::min(kTile, inner - c), buf.data());
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("Softmax").Kernels<opsdk::half, float, opsdk::bfloat16>(OPSDK_KERNEL_TEMPLATE(softmax));
