// GridSample CPU kernel (ONNX semantics; see reference.py for the rules step by step).
//
// The sampling positions depend only on the grid, not on the channel, so the kernel works
// on blocks of output points: for each block it first turns the grid into a table of
// K taps per point (K = 1 nearest, 2^r linear, 4^r cubic for r spatial axes) holding the
// flat input offset (or -1 for a zero-padded tap) and the weight; then, for every channel,
// each output is a K-term dot product of gathered input values. The coordinate math
// (unnormalise, round, clamp or reflect, Keys' cubic weights) runs once per point instead
// of once per point and channel, and the channel loop is branch-free gathers and FMAs
// (AVX2 masked gathers for float32 inputs). Blocks of (image, points) run in parallel.
// Coordinates and weights are computed in float64 (once per point, so it costs nothing
// measurable) and the weighted sums in float32; float16 inputs widen to float32.
#include <opsdk/custom_op.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace {

using opsdk::half;

enum class Mode { Nearest, Linear, Cubic };
enum class Pad { Zeros, Border, Reflection };

constexpr int64_t kBlock = 128;          // output points per table
constexpr double kFar = 1e9;  // |coordinate| cap: keeps NaN/Inf out of int casts

Mode parse_mode(const std::string& m) {
  if (m == "linear" || m == "bilinear") return Mode::Linear;
  if (m == "nearest") return Mode::Nearest;
  if (m == "cubic" || m == "bicubic") return Mode::Cubic;
  throw opsdk::OpError("GridSample: attribute 'mode' is '" + m +
                       "', expected linear (bilinear), nearest or cubic (bicubic)");
}

Pad parse_pad(const std::string& p) {
  if (p == "zeros") return Pad::Zeros;
  if (p == "border") return Pad::Border;
  if (p == "reflection") return Pad::Reflection;
  throw opsdk::OpError("GridSample: attribute 'padding_mode' is '" + p +
                       "', expected zeros, border or reflection");
}

// Reflect x by the borders lo/hi until it lies within them (ONNX's _gs_reflect).
inline double reflect(double x, double lo, double hi) {
  const double span = hi - lo;
  if (span <= 0.0) return lo;
  if (x < lo) {
    const double dx = lo - x, flips = std::floor(dx / span), r = dx - flips * span;
    return (static_cast<int64_t>(flips) & 1) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi, flips = std::floor(dx / span), r = dx - flips * span;
    return (static_cast<int64_t>(flips) & 1) == 0 ? hi - r : lo + r;
  }
  return x;
}

// Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2.
inline void cubic_weights(double t, float* w) {
  constexpr double a = -0.75;
  auto near = [](double s) { return ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0; };
  auto far = [](double s) { return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a; };
  w[0] = static_cast<float>(far(t + 1.0));
  w[1] = static_cast<float>(near(t));
  w[2] = static_cast<float>(near(1.0 - t));
  w[3] = static_cast<float>(far(2.0 - t));
}

// One spatial axis of size d: P taps (index within the axis, or -1 when zero padded)
// and weights for the normalised coordinate g.
template <int P>
struct AxisTaps {
  int32_t idx[P];
  float w[P];
};

struct Axis {
  int64_t size;
  double lo, hi;  // the coordinate range of the image: [0, d-1] or [-0.5, d-0.5]
  bool align;
  Pad pad;

  Axis(int64_t d, bool align_corners, Pad p)
      : size(d), lo(align_corners ? 0.0 : -0.5),
        hi(align_corners ? static_cast<double>(d) - 1.0 : static_cast<double>(d) - 0.5),
        align(align_corners), pad(p) {}

  double unnormalise(double g) const {
    const double d = static_cast<double>(size);
    const double x = align ? (g + 1.0) / 2.0 * (d - 1.0) : ((g + 1.0) * d - 1.0) / 2.0;
    return std::fmin(std::fmax(x, -kFar), kFar);  // NaN -> -kFar (far outside)
  }

  double fold(double x) const {  // a coordinate outside [lo, hi]: clamp or reflect
    if (x >= lo && x <= hi) return x;
    if (pad == Pad::Border) return std::fmin(std::fmax(x, 0.0), static_cast<double>(size - 1));
    if (pad == Pad::Reflection) return reflect(x, lo, hi);
    return x;
  }

  int32_t tap(double i) const {  // input index of an integral tap position, -1 if zero
    const double last = static_cast<double>(size - 1);
    if (pad == Pad::Zeros) return i >= 0.0 && i <= last ? static_cast<int32_t>(i) : -1;
    if (pad == Pad::Border) return static_cast<int32_t>(std::fmin(std::fmax(i, 0.0), last));
    return static_cast<int32_t>(std::trunc(reflect(i, lo, hi)));
  }

  template <Mode M, int P>
  AxisTaps<P> taps(double g) const {
    AxisTaps<P> t;
    double x = unnormalise(g);
    if constexpr (M == Mode::Nearest) {
      x = fold(std::nearbyint(x));
      t.idx[0] = tap(std::trunc(x));
      t.w[0] = 1.0f;
    } else {
      x = fold(x);
      const double x0 = std::floor(x), f = x - x0;
      if constexpr (M == Mode::Linear) {
        t.w[0] = static_cast<float>(1.0 - f);
        t.w[1] = static_cast<float>(f);
        t.idx[0] = tap(x0);
        t.idx[1] = tap(x0 + 1.0);
      } else {
        cubic_weights(f, t.w);
        for (int k = 0; k < 4; ++k) t.idx[k] = tap(x0 - 1.0 + static_cast<double>(k));
      }
    }
    return t;
  }
};

// The per-block table: for tap k of point p, the flat offset in the channel plane (-1:
// reads zero) and the weight; stored tap-major so the channel loop streams along p.
template <int R, int P>
struct Table {
  static constexpr int K = R == 2 ? P * P : P * P * P;
  alignas(64) int32_t off[K][kBlock];
  alignas(64) float w[K][kBlock];
};

struct Geometry {
  int64_t n, c, points;        // batch, channels, output points per image
  int64_t in[3];               // input spatial sizes (D, H, W or H, W)
  int64_t plane;               // input points per channel
};

template <Mode M, int R, int P, class G>
void build_table(const G* grid, const std::array<Axis, 3>& axes, const Geometry& geo,
                 int64_t count, Table<R, P>& tab) {
  for (int64_t p = 0; p < count; ++p) {
    // grid's last axis is (x, y[, z]) = (W, H[, D]): reversed spatial order
    AxisTaps<P> t[R];
    for (int a = 0; a < R; ++a)
      t[a] = axes[static_cast<size_t>(a)].template taps<M, P>(
          static_cast<double>(opsdk::to_float(grid[p * R + (R - 1 - a)])));
    int k = 0;
    if constexpr (R == 2) {
      for (int i = 0; i < P; ++i)
        for (int j = 0; j < P; ++j, ++k) {
          const bool ok = t[0].idx[i] >= 0 && t[1].idx[j] >= 0;
          tab.off[k][p] = ok ? static_cast<int32_t>(t[0].idx[i] * geo.in[1] + t[1].idx[j]) : -1;
          tab.w[k][p] = t[0].w[i] * t[1].w[j];
        }
    } else {
      for (int i = 0; i < P; ++i)
        for (int j = 0; j < P; ++j)
          for (int l = 0; l < P; ++l, ++k) {
            const bool ok = t[0].idx[i] >= 0 && t[1].idx[j] >= 0 && t[2].idx[l] >= 0;
            tab.off[k][p] = ok ? static_cast<int32_t>((t[0].idx[i] * geo.in[1] + t[1].idx[j]) *
                                                          geo.in[2] + t[2].idx[l])
                               : -1;
            tab.w[k][p] = t[0].w[i] * t[1].w[j] * t[2].w[l];
          }
    }
  }
}

// acc[p] += w[p] * (off[p] >= 0 ? src[off[p]] : 0) for p < count.
template <class T>
inline void accumulate(const T* src, const int32_t* off, const float* w, int64_t count,
                       float* acc) {
  int64_t p = 0;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) {
    const __m256i none = _mm256_set1_epi32(-1);
    for (; p + 8 <= count; p += 8) {
      const __m256i idx = _mm256_load_si256(reinterpret_cast<const __m256i*>(off + p));
      const __m256 mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, none));
      const __m256i safe = _mm256_and_si256(idx, _mm256_castps_si256(mask));
      const __m256 v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), src, safe, mask, 4);
      _mm256_store_ps(acc + p, _mm256_fmadd_ps(_mm256_load_ps(w + p), v,
                                               _mm256_load_ps(acc + p)));
    }
  }
#endif
  for (; p < count; ++p)
    acc[p] += w[p] * (off[p] >= 0 ? opsdk::to_float(src[off[p]]) : 0.0f);
}

// All channels of one image over the block's points.
template <int R, int P, class T>
void sample_channels(const T* x, T* y, const Table<R, P>& tab, const Geometry& geo,
                     int64_t count) {
  constexpr int K = Table<R, P>::K;
  alignas(64) float acc[kBlock];
  for (int64_t c = 0; c < geo.c; ++c) {
    const T* src = x + c * geo.plane;
    std::fill(acc, acc + count, 0.0f);
    for (int k = 0; k < K; ++k) accumulate(src, tab.off[k], tab.w[k], count, acc);
    T* dst = y + c * geo.points;
    for (int64_t p = 0; p < count; ++p) opsdk::from_float(acc[p], &dst[p]);
  }
}

template <Mode M, int R, int P, class T, class G>
void run(const CustomOpKernelContext& ctx, const Geometry& geo, const std::array<Axis, 3>& axes) {
  const T* x = ctx.input(0).data<T>();
  const G* grid = ctx.input(1).data<G>();
  T* y = ctx.output(0).mutable_data<T>();
  const int64_t blocks = (geo.points + kBlock - 1) / kBlock;
  constexpr int K = Table<R, P>::K;
  // Enough work per task that tiny inputs stay on one thread.
  const int64_t grain = std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, kBlock * geo.c * K));
  ctx.parallel_for(geo.n * blocks, grain, [&](int64_t begin, int64_t end) {
    auto tab = std::make_unique<Table<R, P>>();
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / blocks, p0 = (t % blocks) * kBlock;
      const int64_t count = std::min(kBlock, geo.points - p0);
      build_table<M, R, P>(grid + (n * geo.points + p0) * R, axes, geo, count, *tab);
      sample_channels<R, P>(x + n * geo.c * geo.plane, y + n * geo.c * geo.points + p0, *tab,
                            geo, count);
    }
  });
}

template <class T, class G>
void grid_sample(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const opsdk::Tensor& grid = ctx.input(1);
  const int r = static_cast<int>(x.ndim()) - 2;
  if (r != 2 && r != 3)
    throw opsdk::OpError(opsdk::detail::cat("GridSample: input 'x' has rank ", x.ndim(),
                                            ", expected 4 or 5"));
  Geometry geo{};
  geo.n = x.size(0);
  geo.c = x.size(1);
  geo.plane = 1;
  for (int a = 0; a < r; ++a) {
    geo.in[a] = x.size(2 + a);
    geo.plane *= geo.in[a];
  }
  geo.points = 1;
  for (int a = 0; a < r; ++a) geo.points *= grid.size(1 + a);
  if (geo.plane > INT32_MAX)
    throw opsdk::OpError(opsdk::detail::cat("GridSample: input 'x' has ", geo.plane,
                                            " points per channel; at most ", INT32_MAX,
                                            " are supported (int32 offsets)"));
  if (geo.n * geo.c * geo.points == 0) return;
  const Mode mode = parse_mode(ctx.attr<std::string>("mode"));
  const Pad pad = parse_pad(ctx.attr<std::string>("padding_mode"));
  const bool align = ctx.attr<int64_t>("align_corners") != 0;
  std::array<Axis, 3> axes{Axis(geo.in[0], align, pad), Axis(r > 1 ? geo.in[1] : 1, align, pad),
                           Axis(r > 2 ? geo.in[2] : 1, align, pad)};
  if (r == 2) {
    if (mode == Mode::Nearest) run<Mode::Nearest, 2, 1, T, G>(ctx, geo, axes);
    else if (mode == Mode::Linear) run<Mode::Linear, 2, 2, T, G>(ctx, geo, axes);
    else run<Mode::Cubic, 2, 4, T, G>(ctx, geo, axes);
  } else {
    if (mode == Mode::Nearest) run<Mode::Nearest, 3, 1, T, G>(ctx, geo, axes);
    else if (mode == Mode::Linear) run<Mode::Linear, 3, 2, T, G>(ctx, geo, axes);
    else run<Mode::Cubic, 3, 4, T, G>(ctx, geo, axes);
  }
}

}  // namespace

#define OPSDK_GRID_SAMPLE(TX, TG, CX, CG)    \
  REGISTER_CUSTOM_OP("GridSample")           \
      .Input(0, "x", TX)                     \
      .Input(1, "grid", TG)                  \
      .Output(0, "y", TX)                    \
      .Attr("mode", "string")                \
      .Attr("padding_mode", "string")        \
      .Attr("align_corners", "int")          \
      .KernelFn(grid_sample<CX, CG>)

OPSDK_GRID_SAMPLE("float32", "float32", float, float);
OPSDK_GRID_SAMPLE("float32", "float16", float, half);
OPSDK_GRID_SAMPLE("float16", "float32", half, float);
OPSDK_GRID_SAMPLE("float16", "float16", half, half);
