// GridSample CPU kernel (ONNX GridSample with PyTorch's grid_sample numerics; see
// reference.py for the rules step by step).
//
// The sampling positions depend only on the grid, not on the channel. So the kernel works
// on chunks of output points: it first turns the grid into a table of taps per point --
// per spatial axis, P input positions (1 nearest, 2 linear, 4 cubic) premultiplied by the
// axis stride, and P weights -- in parallel over points; then, in parallel over
// (channel, point range) tasks, each output is the separable weighted sum of its taps.
// The coordinate math (unnormalise, round, clamp or reflect, Keys' cubic weights) thus
// runs once per point rather than once per point and channel, and the channel loop is
// loads and FMAs with no branches: points whose taps all lie inside the image are sampled
// first with no checks (2-D linear ones from a 16-byte entry: corner offset and two
// fractions), the others (zero padding only) with bit-mask selects. Scalar loads: on
// the CPUs measured, AVX2 gathers were slower. Each channel
// streams the chunk's table while its own plane stays in cache.
// Coordinates and weights are computed in float32 with PyTorch's formulas and order of
// operations (so rounding, reflection of huge coordinates and NaN/Inf handling agree);
// the weighted sums are float32; float16 inputs and grids widen to float32.
#include <opsdk/custom_op.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>


namespace {

using opsdk::half;

enum class Mode { Nearest, Linear, Cubic };
enum class Pad { Zeros, Border, Reflection };

constexpr int ipow(int b, int e) { return e == 0 ? 1 : b * ipow(b, e - 1); }

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

// Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2.
inline void cubic_weights(float t, float* w) {
  constexpr float a = -0.75f;
  auto near = [](float v) { return ((a + 2.0f) * v - (a + 3.0f)) * v * v + 1.0f; };
  auto far = [](float v) { return ((a * v - 5.0f * a) * v + 8.0f * a) * v - 4.0f * a; };
  w[0] = far(t + 1.0f);
  w[1] = near(t);
  w[2] = near(1.0f - t);
  w[3] = far(2.0f - t);
}

// One spatial axis of size d: P taps (index within the axis, or -1 when zero padded)
// and weights for the normalised coordinate g. `poison`: the output is NaN (a NaN or
// infinite coordinate where PyTorch's interpolation weights become NaN).
template <int P>
struct AxisTaps {
  int32_t idx[P];
  float w[P];
  bool poison = false;
};

// PyTorch's grid_sample coordinate rules, in float32 as it computes them. 4-D inputs
// follow its vectorised CPU kernel, 5-D ones its scalar kernel (`vol`); they differ only
// for NaN, infinite and huge coordinates (see README.md). `volatile` keeps the compiler
// from fusing a product and a sum into one FMA, which would round differently.
struct Axis {
  int64_t size;
  bool align, vol;
  Pad pad;
  float max_val;  // size - 1

  Axis(int64_t d, bool align_corners, Pad p, bool volumetric)
      : size(d), align(align_corners), vol(volumetric), pad(p),
        max_val(static_cast<float>(d - 1)) {}

  float unnormalise(float g) const {
    const float d = static_cast<float>(size);
    if (!vol) {  // (g + 1) * scale (- 0.5)
      volatile float scaled = (g + 1.0f) * (align ? (d - 1.0f) / 2.0f : d / 2.0f);
      return align ? scaled : scaled - 0.5f;
    }
    if (align) return (g + 1.0f) / 2.0f * (d - 1.0f);
    volatile float scaled = (g + 1.0f) * d;
    return (scaled - 1.0f) / 2.0f;
  }

  // Clamp to [0, d-1]. 4-D: NaN goes to 0; 5-D (std::min/std::max): NaN goes to d-1.
  float clip(float x) const {
    if (!vol) return x == x ? std::min(std::max(x, 0.0f), max_val) : 0.0f;
    const float lo = x < 0.0f ? 0.0f : x;
    return lo < max_val ? lo : max_val;
  }

  // Reflect by the image borders (-0.5 and d-0.5, or 0 and d-1 with align_corners).
  float reflect(float x) const {
    const float d = static_cast<float>(size);
    if (!vol) {
      if (align && size <= 1) return 0.0f;
      const float low = align ? 0.0f : -0.5f, span2 = align ? 2.0f * (d - 1.0f) : 2.0f * d;
      const float a = std::fabs(x - low);
      volatile float whole = std::trunc(a / span2) * span2;
      const float extra = a - whole;
      const float back = span2 - extra;
      return (extra != extra ? extra : back < extra ? back : extra) + low;
    }
    const int64_t twice_low = align ? 0 : -1, twice_high = align ? 2 * (size - 1) : 2 * size - 1;
    if (twice_low == twice_high) return 0.0f;
    const float mn = static_cast<float>(twice_low) / 2.0f;
    const float span = static_cast<float>(twice_high - twice_low) / 2.0f;
    const float a = std::fabs(x - mn);
    const float extra = std::fmod(a, span), f = std::floor(a / span);
    // PyTorch's out-of-range float -> int conversion gives INT_MIN on x86: even, like 0
    const int64_t flips = f >= -2147483648.0f && f < 2147483648.0f ? static_cast<int64_t>(f) : 0;
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
  }

  // PyTorch's compute_coordinates: clamp or reflect (zeros: as is); the 5-D kernel then
  // sends NaN, infinite and out-of-int-range coordinates far outside (-100).
  float fold(float x) const {
    if (pad == Pad::Border) x = clip(x);
    else if (pad == Pad::Reflection) x = clip(reflect(x));
    if (vol && (!std::isfinite(x) || x > 2147483646.0f || x < -2147483648.0f)) x = -100.0f;
    return x;
  }

  int32_t tap(float i) const {  // input index of an integral tap position, -1 if outside
    return i >= 0.0f && i <= max_val ? static_cast<int32_t>(i) : -1;
  }

  template <Mode M, int P>
  AxisTaps<P> taps(float g) const {
    AxisTaps<P> t;
    const float u = unnormalise(g);
    if constexpr (M == Mode::Nearest) {
      t.idx[0] = tap(std::nearbyint(fold(u)));
      t.w[0] = 1.0f;
    } else if constexpr (M == Mode::Linear) {
      const float x = fold(u), x0 = std::floor(x), f = x - x0;
      t.poison = !std::isfinite(x);  // 4-D zero padding: NaN weights
      t.w[0] = 1.0f - f;
      t.w[1] = f;
      t.idx[0] = tap(x0);
      t.idx[1] = tap(x0 + 1.0f);
    } else {  // cubic: the coordinate as is, each tap clamped or reflected
      const float x0 = std::floor(u), f = u - x0;
      t.poison = !std::isfinite(u);
      cubic_weights(f, t.w);
      for (int k = 0; k < 4; ++k) t.idx[k] = tap(fold(x0 + static_cast<float>(k - 1)));
    }
    return t;
  }
};

// The taps of one output point, per spatial axis (outermost first): P input positions
// premultiplied by the axis stride (-1: the tap reads zero) and P weights; `inside` when
// no tap reads zero.
template <int R, int P>
struct PointTaps {
  int32_t idx[R][P];
  float w[R][P];
  int32_t inside;   // no tap reads zero
  int32_t outside;  // every tap reads zero: the output is 0
};

struct Geometry {
  int64_t n, c, points;        // batch, channels, output points per image
  int64_t in[3];               // input spatial sizes (D, H, W or H, W)
  int64_t plane;               // input points per channel
};

// Fill the taps of points [p0, p1) of the chunk whose grid starts at `grid`.
template <Mode M, int R, int P, class G>
void build_table(const G* grid, const std::array<Axis, 3>& axes, const Geometry& geo,
                 int64_t p0, int64_t p1, PointTaps<R, P>* tab) {
  int64_t stride[R];
  stride[R - 1] = 1;
  for (int a = R - 2; a >= 0; --a) stride[a] = stride[a + 1] * geo.in[a + 1];
  for (int64_t p = p0; p < p1; ++p) {
    PointTaps<R, P>& t = tab[p];
    t.inside = 1;
    t.outside = 0;
    bool poison = false;
    for (int a = 0; a < R; ++a) {
      // grid's last axis is (x, y[, z]) = (W, H[, D]): reversed spatial order
      const AxisTaps<P> at = axes[static_cast<size_t>(a)].template taps<M, P>(
          opsdk::to_float(grid[p * R + (R - 1 - a)]));
      poison = poison || at.poison;
      for (int i = 0; i < P; ++i) {
        t.idx[a][i] = at.idx[i] >= 0 ? static_cast<int32_t>(at.idx[i] * stride[a]) : -1;
        t.w[a][i] = at.w[i];
        t.inside &= at.idx[i] >= 0 ? 1 : 0;
      }
      bool none = true;
      for (int i = 0; i < P; ++i) none = none && at.idx[i] < 0;
      t.outside |= none ? 1 : 0;
    }
    if (poison) {  // read pixel 0 with NaN weights: the output is NaN, as in PyTorch
      for (int a = 0; a < R; ++a)
        for (int i = 0; i < P; ++i) t.idx[a][i] = 0, t.w[a][i] = std::nanf("");
      t.inside = 1;
      t.outside = 0;
    }
  }
}

// The weighted sum of one point's taps in `src`. Checked (zero padding): a tap with
// index -1 contributes exactly 0, chosen by selects rather than branches (a zero weight
// alone would turn an Inf or NaN read elsewhere into NaN).
inline int32_t keep_mask(int32_t i) { return ~(i >> 31); }  // all ones if i >= 0, else 0

inline float masked(float v, int32_t mask) {  // v, or +0.0 when mask is 0: bit ops, no branch
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  b &= static_cast<uint32_t>(mask);
  std::memcpy(&v, &b, sizeof v);
  return v;
}

template <bool Checked, class T>
inline float tap_value(const T* s, int32_t i) {
  if constexpr (Checked) {
    const int32_t m = keep_mask(i);
    return masked(opsdk::to_float(s[i & m]), m);
  } else {
    return opsdk::to_float(s[i]);
  }
}

template <bool Checked, int R, int P, class T>
inline float interpolate(const T* src, const PointTaps<R, P>& t) {
  auto row = [&](const T* s) {  // innermost axis
    float acc = 0.0f;
    for (int j = 0; j < P; ++j) acc += t.w[R - 1][j] * tap_value<Checked>(s, t.idx[R - 1][j]);
    return acc;
  };
  auto offset = [](int32_t i) { return Checked ? i & keep_mask(i) : i; };
  auto keep = [](int32_t i, float v) { return Checked ? masked(v, keep_mask(i)) : v; };
  float acc = 0.0f;
  if constexpr (R == 2) {
    for (int i = 0; i < P; ++i)
      acc += t.w[0][i] * keep(t.idx[0][i], row(src + offset(t.idx[0][i])));
  } else {
    for (int d = 0; d < P; ++d) {
      float plane = 0.0f;
      const T* sd = src + offset(t.idx[0][d]);
      for (int i = 0; i < P; ++i)
        plane += t.w[1][i] * keep(t.idx[1][i], row(sd + offset(t.idx[1][i])));
      acc += t.w[0][d] * keep(t.idx[0][d], plane);
    }
  }
  return acc;
}

// dst[p] for the points p = order[q], q in [q0, q1), of one channel plane `src`.
template <bool Checked, int R, int P, class T>
void sample_plane(const T* src, const PointTaps<R, P>* tab, const int32_t* order, int64_t q0,
                  int64_t q1, T* dst) {
  for (int64_t q = q0; q < q1; ++q) {
    const int32_t p = order[q];
    opsdk::from_float(interpolate<Checked>(src, tab[p]), &dst[p]);
  }
}

// 2-D linear sampling of a point whose four taps are the 2x2 neighbourhood at `base`,
// all inside the image (most points of most grids): 16 bytes instead of a full PointTaps.
struct Bilinear {
  int32_t p, base;
  float fx, fy;
};

// Prefetch: for planes that do not fit in L1, the corners of the point 16 entries ahead
// are requested early (random grids read random spots; measured 1.3x on 1 MB planes).
template <bool Prefetch, class T>
void sample_bilinear(const T* src, int64_t width, const Bilinear* pts, int64_t q0, int64_t q1,
                     T* dst) {
  constexpr int64_t ahead = 16;
  for (int64_t q = q0; q < q1; ++q) {
    if (Prefetch && q + ahead < q1) {
      const T* f = src + pts[q + ahead].base;
      __builtin_prefetch(f);
      __builtin_prefetch(f + width);
    }
    const Bilinear& b = pts[q];
    const T* s = src + b.base;
    const float p00 = opsdk::to_float(s[0]), p01 = opsdk::to_float(s[1]);
    const float p10 = opsdk::to_float(s[width]), p11 = opsdk::to_float(s[width + 1]);
    const float top = p00 + b.fx * (p01 - p00), bottom = p10 + b.fx * (p11 - p10);
    opsdk::from_float(top + b.fy * (bottom - top), &dst[b.p]);
  }
}

// The chunk's points sorted by how they are sampled: `bilinear` (2-D linear, 2x2
// neighbourhood inside the image), then in `order` the other points with every tap
// inside (no checks), then the rest (zero padding checks); `zero` lists the points
// whose taps all read zero padding.
struct Plan {
  std::vector<Bilinear> bilinear;
  std::vector<int32_t> order;
  std::vector<int32_t> zero;  // points whose every tap reads zero
  int64_t inside = 0;         // leading entries of `order` that need no checks
};

template <Mode M, int R, int P>
void partition(const PointTaps<R, P>* tab, int64_t count, int64_t width, Plan& plan) {
  plan.bilinear.clear();
  plan.zero.clear();
  plan.order.resize(static_cast<size_t>(count));
  int64_t front = 0, back = count;
  for (int64_t p = 0; p < count; ++p) {
    const PointTaps<R, P>& t = tab[p];
    if constexpr (M == Mode::Linear && R == 2) {
      if (t.inside && t.idx[0][1] == t.idx[0][0] + width && t.idx[1][1] == t.idx[1][0] + 1) {
        plan.bilinear.push_back({static_cast<int32_t>(p), t.idx[0][0] + t.idx[1][0], t.w[1][1],
                                 t.w[0][1]});
        continue;
      }
    }
    if (t.inside) plan.order[static_cast<size_t>(front++)] = static_cast<int32_t>(p);
    else if (t.outside) plan.zero.push_back(static_cast<int32_t>(p));
    else plan.order[static_cast<size_t>(--back)] = static_cast<int32_t>(p);
  }
  // close the gap left by the bilinear and zero points
  const int64_t rest = count - back;
  std::copy(plan.order.begin() + back, plan.order.end(), plan.order.begin() + front);
  plan.order.resize(static_cast<size_t>(front + rest));
  plan.inside = front;
}

// Work is done in chunks whose tap tables stay within ~2 MB: whole images when they fit
// (a batch is one parallel section), else ranges of one image's points. Each chunk's
// table is built once, then streamed once per channel while that channel's plane stays
// in cache.
constexpr int64_t kTableBytes = 1 << 21;
constexpr int64_t kRange = 2048;       // points per sampling task (one channel)
constexpr int64_t kBuildRange = 4096;  // points per table-building task

// Sample every channel of one image's points [q0, q1) (work positions, see Plan).
template <int R, int P, class T>
void sample_range(const T* src, T* dst, const PointTaps<R, P>* tab, const Plan& plan,
                  int64_t width, int64_t plane_bytes, int64_t q0, int64_t q1) {
  // work positions: [0, nb) bilinear, [nb, nu) unchecked, [nu, nc) checked, then zero
  const int64_t nb = static_cast<int64_t>(plan.bilinear.size()), nu = nb + plan.inside;
  const int64_t nc = nb + static_cast<int64_t>(plan.order.size());
  const int32_t* order = plan.order.data() - nb;  // indexed by work position
  const int64_t a = std::min(q1, nb), u = std::clamp(nu, q0, q1), v = std::clamp(nc, q0, q1);
  if (q0 < a && plane_bytes > (32 << 10))
    sample_bilinear<true>(src, width, plan.bilinear.data(), q0, a, dst);
  else if (q0 < a)
    sample_bilinear<false>(src, width, plan.bilinear.data(), q0, a, dst);
  if (std::max(q0, nb) < u) sample_plane<false>(src, tab, order, std::max(q0, nb), u, dst);
  if (std::max(q0, nu) < v) sample_plane<true>(src, tab, order, std::max(q0, nu), v, dst);
  for (int64_t q = std::max(q0, nc); q < q1; ++q)
    opsdk::from_float(0.0f, &dst[plan.zero[static_cast<size_t>(q - nc)]]);
}

// Run f(0) .. f(n-1) (on all threads when `parallel`), each thread taking the next task
// from a shared counter: a thread that is descheduled or starts late holds up no one.
template <class F>
void run_tasks(const CustomOpKernelContext& ctx, int64_t n, bool parallel, F&& f) {
  std::atomic<int64_t> next{0};
  const int64_t workers = parallel ? std::min<int64_t>(ctx.num_threads(), n) : 1;
  ctx.parallel_for(workers, 1, [&](int64_t, int64_t) {
    for (int64_t t = next.fetch_add(1); t < n; t = next.fetch_add(1)) f(t);
  });
}

template <Mode M, int R, int P, class T, class G>
void run(const CustomOpKernelContext& ctx, const Geometry& geo, const std::array<Axis, 3>& axes) {
  using Taps = PointTaps<R, P>;
  const T* x = ctx.input(0).data<T>();
  const G* grid = ctx.input(1).data<G>();
  T* y = ctx.output(0).mutable_data<T>();
  constexpr int64_t bytes = static_cast<int64_t>(sizeof(Taps));
  const int64_t budget = std::max<int64_t>(kRange, kTableBytes / bytes) / kRange * kRange;
  const int64_t span = std::min(geo.points, budget);      // points of one image per chunk
  const int64_t imgs = std::max<int64_t>(1, std::min(geo.n, budget / geo.points));
  std::vector<Taps> tab(static_cast<size_t>(imgs * span));
  std::vector<Plan> plans(static_cast<size_t>(imgs));
  constexpr int64_t taps = static_cast<int64_t>(ipow(P, R));
  const int64_t task_grain = std::max<int64_t>(1, (1 << 15) / (kRange * taps));
  const int64_t width = geo.in[R - 1];
  for (int64_t n0 = 0; n0 < geo.n; n0 += imgs) {
    const int64_t ni = std::min(imgs, geo.n - n0);
    for (int64_t c0 = 0; c0 < geo.points; c0 += span) {
      const int64_t count = std::min(span, geo.points - c0);
      // One parallel section per chunk: the build tasks (ranges of one image's points;
      // whoever finishes an image's last range sorts its points) come first in the
      // shared counter, so a thread that takes a sampling task waits at most for builds
      // already running on other threads.
      const int64_t branges = (count + kBuildRange - 1) / kBuildRange, nbuild = ni * branges;
      const int64_t ranges = (count + kRange - 1) / kRange, nsample = ni * geo.c * ranges;
      std::vector<std::atomic<int64_t>> built(static_cast<size_t>(ni));
      std::vector<std::atomic<int>> ready(static_cast<size_t>(ni));
      std::atomic<bool> failed{false};
      run_tasks(ctx, nbuild + nsample, nsample >= task_grain, [&](int64_t t) {
        if (t < nbuild) {
          const int64_t i = t / branges, b = (t % branges) * kBuildRange;
          const size_t si = static_cast<size_t>(i);
          try {
            build_table<M, R, P>(grid + ((n0 + i) * geo.points + c0) * R, axes, geo, b,
                                 std::min(count, b + kBuildRange), tab.data() + i * span);
            if (built[si].fetch_add(1, std::memory_order_acq_rel) + 1 == branges) {
              partition<M>(tab.data() + i * span, count, width, plans[si]);
              ready[si].store(1, std::memory_order_release);
            }
          } catch (...) {  // let waiting threads go, then report the error
            failed.store(true);
            for (auto& r : ready) r.store(1, std::memory_order_release);
            throw;
          }
          return;
        }
        t -= nbuild;
        const int64_t i = t / (geo.c * ranges), c = t / ranges % geo.c;
        while (!ready[static_cast<size_t>(i)].load(std::memory_order_acquire))
          std::this_thread::yield();
        if (failed.load()) return;
        const int64_t q0 = (t % ranges) * kRange, q1 = std::min(count, q0 + kRange);
        const int64_t nc = (n0 + i) * geo.c + c;
        sample_range(x + nc * geo.plane, y + nc * geo.points + c0, tab.data() + i * span,
                     plans[static_cast<size_t>(i)], width,
                     geo.plane * static_cast<int64_t>(sizeof(T)), q0, q1);
      });
    }
  }
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
  const bool vol = r == 3;
  std::array<Axis, 3> axes{Axis(geo.in[0], align, pad, vol),
                           Axis(r > 1 ? geo.in[1] : 1, align, pad, vol),
                           Axis(r > 2 ? geo.in[2] : 1, align, pad, vol)};
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

// Columns bind (T, T2): the dtypes of x and of grid.
REGISTER_CUSTOM_OP("GridSample")
    .Kernels<opsdk::Types<float, float>, opsdk::Types<float, half>, opsdk::Types<half, float>,
             opsdk::Types<half, half>>(OPSDK_KERNEL_TEMPLATE(grid_sample));
