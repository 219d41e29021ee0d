// FusedConvBnRelu CPU kernel: y = relu(conv2d(x, w) + b), NCHW, BN folded into w and b.
//
// The convolution is a blocked GEMM per image and group:
//   Y[Mg, OH*OW] = W[Mg, K] * im2col(X)[K, OH*OW],   K = C/group * kH * kW.
// * The im2col matrix is never materialised: for each block of K rows (KC) and spatial
//   columns (NC) it is packed straight from x (padding, strides and dilations applied,
//   float16 widened to float32) into NR-wide column panels that the micro-kernel streams.
// * The weights need no packing: the micro-kernel broadcasts from MR rows of W in place
//   (W's layout [M][C/g][kH][kW] is already the GEMM's row-major A).
// * The register-blocked micro-kernel: with AVX-512, 6 rows x 32 columns (two panels) in
//   12 full-width accumulators; elsewhere 6 x 16 in 12 8-float vectors, written with
//   GCC/Clang vector extensions (AVX2 + FMA under -march=x86-64-v3, SSE or NEON
//   elsewhere). Bias is the accumulators' initial value and Relu is applied on the last K
//   block, in registers, before the one store.
// * Work is split over (image, group, column block, output-channel block) tasks that the
//   threads of ctx.parallel_for take one at a time from a shared counter; each thread
//   packs into its own reusable, aligned scratch, except that the channel blocks of one
//   column block share one packing when there are three or more of them (shared_gemm).
// * Direct paths skip the GEMM where its packing or per-group set-up dominates (small K):
//   depthwise and 2-per-group convolutions, dense ones with at most 4 input channels
//   (first layers), and dense ones larger than 1x1 with at most 16 on planes of 1024
//   output positions or more. The group's planes are copied zero-padded and split by
//   stride phase, and MB output channels x CW 16-wide vectors of output positions accumulate in
//   registers over the taps. Depthwise convolutions with output rows of at most 64 positions
//   (128 for 5-wide kernels) go in blocks of 16 channels (a [row][column][channel] copy,
//   transposed 16 x 16 at a time with AVX-512), 1x1 convolutions on planes
//   of fewer than 16 positions as dot products along C.
// float16: inputs widen to float32 while packing, accumulation is float32, and the
// output is rounded to float16 once.
#include <opsdk/custom_op.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__AVX__) || defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace {

using opsdk::half;

typedef float v8 __attribute__((vector_size(32)));

#if defined(__AVX512F__)
constexpr int MR = 6;          // output channels per micro-tile (12 accumulators)
constexpr int WIDE = 2;        // panels per micro-tile (one 16-float register each per row)
#else
constexpr int MR = 6;          // output channels per micro-tile (12 accumulators)
constexpr int WIDE = 1;        // panels per micro-tile (two 8-float vectors per row)
#endif
constexpr int NR = 16;         // output positions per packed panel
constexpr int64_t KC = 256;    // K rows per packed block
constexpr int64_t NC = 128;    // spatial columns per packed block (multiple of NR)
// Grouped convolutions with at most this many input channels per group take the direct
// path (measured: 2 per group 0.73x-0.83x ONNX Runtime's time direct, 1.32x as GEMM; at 4
// both paths are slower than ONNX Runtime, the GEMM less so).
constexpr int64_t DIRECT_MAX_CG = 2;
// Dense convolutions with at most this many input channels take the direct path too (the
// first layer of an image model: K = 27 or 147, where packing im2col dominated).
constexpr int64_t DIRECT_MAX_C = 4;
// And dense ones with at most DIRECT_MAX_C_PLANE input channels and a kernel larger than
// 1x1, on planes of at least DIRECT_MIN_P output positions: the GEMM's packed rows serve
// too few output channels there, and its 6-row tiles fit 16 channels badly. Direct against
// the GEMM (one process, interleaved), 1 thread / 2 threads: 16->16 80x80 3x3 0.41x /
// 0.80x, 16->32 160x160 s2 0.70x / 0.87x-0.96x, 16->96 80x80 0.83x / 0.95x, 8->16 80x80
// 0.30x at 1 thread. Not taken: 32 channels (32->32 40x40 0.69x / 1.17x, 24->72 56x56 0.84x /
// 1.14x), 1x1 (2x16->16 56x56 0.71x / 1.8x: the padded copy is all overhead and a
// second thread does not help it), small planes (32->32 10x10 2.1x, 16->16 7x7 2.5x at 2).
constexpr int64_t DIRECT_MAX_C_PLANE = 16;
constexpr int64_t DIRECT_MIN_P = 1024;

inline v8 load8(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, v8 v) { std::memcpy(p, &v, sizeof v); }
inline v8 splat(float s) { return v8{s, s, s, s, s, s, s, s}; }
inline v8 fmadd(v8 a, v8 b, v8 c) {
#if defined(__AVX__) && defined(__FMA__)
  return reinterpret_cast<v8>(_mm256_fmadd_ps(reinterpret_cast<__m256>(a),
                                              reinterpret_cast<__m256>(b),
                                              reinterpret_cast<__m256>(c)));
#else
  return a * b + c;
#endif
}
inline v8 relu(v8 v) {  // max(v, 0) that keeps NaN, as ONNX Relu and np.maximum do
  const v8 z = splat(0.0f);
  return v < z ? z : v;
}

inline float relu1(float v) { return v < 0.0f ? 0.0f : v; }

struct Geom {
  int64_t n, c, h, w;            // input
  int64_t m, cg, mg, kh, kw;     // weights
  int64_t oh, ow;                // output
  int64_t sh, sw, pt, pl, dh, dw, group;
  int64_t k() const { return cg * kh * kw; }
  int64_t p() const { return oh * ow; }
};

// Dense convolutions that take the direct path (DIRECT_MAX_C, DIRECT_MAX_C_PLANE).
inline bool direct_dense(const Geom& g) {
  if (g.group != 1) return false;
  if (g.c <= DIRECT_MAX_C) return true;
  if (g.p() < DIRECT_MIN_P) return false;
  return g.kh * g.kw > 1 && g.c <= DIRECT_MAX_C_PLANE;
}

// Per-thread scratch, grown on demand and reused across calls (64-byte aligned).
float* scratch(size_t floats, int slot) {
  thread_local std::vector<float> buf[2];
  std::vector<float>& b = buf[slot];
  if (b.size() < floats + 16) b.resize(floats + 16);
  const auto addr = reinterpret_cast<uintptr_t>(b.data());
  return reinterpret_cast<float*>((addr + 63) & ~static_cast<uintptr_t>(63));
}

// ------------------------------------------------------------------------ packing
// Widen n values (stride `stride` in src) to float32.
template <class T>
inline void widen(const T* src, int64_t stride, float* dst, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (stride == 1) {
      if (n == NR) {  // a whole panel row: two vector moves, no library call
        store8(dst, load8(src));
        store8(dst + 8, load8(src + 8));
        return;
      }
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
      return;
    }
  } else {
#if defined(__F16C__)
    if (stride == 1) {
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                      reinterpret_cast<const __m128i*>(src + i))));
      for (; i < n; ++i) dst[i] = opsdk::to_float(src[i]);
      return;
    }
#endif
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = opsdk::to_float(src[i * stride]);
}

// Where each packed value comes from, per kernel tap and block column: the offset in
// the input channel plane, or -1 for zero padding. Built once per column block and tap
// (it does not depend on the channel), then reused for every channel. Each NR-wide
// panel is classified so the common cases skip the per-element gather: all padding,
// one contiguous run of the input row, or a few runs (a panel that wraps from one output
// row to the next, or meets the padding): with column stride s (1 or 2), lanes `mask` of
// run r read src[base + s * lane]. Where AVX-512 has masked loads, a run costs one masked
// load (s = 1) or two and a permute (s = 2) instead of a gather.
enum PanelKind : uint8_t { kZero, kContiguous, kRuns, kGather };

constexpr int kMaxRuns = 4;
struct Runs {
  int32_t base[kMaxRuns];
  uint16_t mask[kMaxRuns];    // lanes of the panel row the run fills
  uint16_t lo[kMaxRuns];      // s = 2: the floats read from src + base (every other one)
  uint16_t hi[kMaxRuns];      // s = 2: the floats read from src + base + 16
  int n;
};

struct BlockPlan {
  int64_t panels = 0;
  std::vector<int32_t> off;     // taps * panels * NR
  std::vector<PanelKind> kind;  // taps * panels
  std::vector<Runs> runs;       // taps * panels (for kRuns panels)
  int64_t step = 1;             // column stride of the runs (the W stride)

  void build(const Geom& g, int64_t j0, int64_t nc) {
    const int64_t taps = g.kh * g.kw;
    panels = (nc + NR - 1) / NR;
    off.assign(static_cast<size_t>(taps * panels * NR), -1);
    kind.assign(static_cast<size_t>(taps * panels), kZero);
    runs.resize(static_cast<size_t>(taps * panels));
    step = g.sw;
    for (int64_t tap = 0; tap < taps; ++tap) {
      const int64_t ki = tap / g.kw, kj = tap % g.kw;
      int32_t* o = off.data() + tap * panels * NR;
      int64_t oh = j0 / g.ow, ow = j0 % g.ow;
      for (int64_t jp = 0; jp < nc; ++jp) {
        const int64_t ih = oh * g.sh - g.pt + ki * g.dh, iw = ow * g.sw - g.pl + kj * g.dw;
        if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) o[jp] = static_cast<int32_t>(ih * g.w + iw);
        if (++ow == g.ow) {
          ow = 0;
          ++oh;
        }
      }
      for (int64_t q = 0; q < panels; ++q) {
        const size_t i = static_cast<size_t>(tap * panels + q);
        kind[i] = classify(o + q * NR, step, runs[i]);
      }
    }
  }

  static PanelKind classify(const int32_t* o, int64_t step, Runs& r) {
    bool any = false, contiguous = o[0] >= 0;
    r.n = step == 1 || step == 2 ? 0 : kMaxRuns + 1;
    for (int l = 0; l < NR; ++l) {
      any = any || o[l] >= 0;
      contiguous = contiguous && o[l] == o[0] + l;
      if (o[l] < 0 || r.n > kMaxRuns) continue;
      const int64_t base = o[l] - step * l;
      int j = 0;
      while (j < r.n && r.base[j] != base) ++j;
      if (j == r.n && r.n++ < kMaxRuns) {
        r.base[j] = static_cast<int32_t>(base);
        r.mask[j] = r.lo[j] = r.hi[j] = 0;
      }
      if (j >= kMaxRuns) continue;
      r.mask[j] = static_cast<uint16_t>(r.mask[j] | (1u << l));
      if (l < NR / 2)
        r.lo[j] = static_cast<uint16_t>(r.lo[j] | (1u << (2 * l)));
      else
        r.hi[j] = static_cast<uint16_t>(r.hi[j] | (1u << (2 * l - NR)));
    }
    return !any ? kZero : contiguous ? kContiguous : r.n <= kMaxRuns ? kRuns : kGather;
  }
};

// One NR-wide panel row: dst[l] = src[o[l]], or 0 where o[l] < 0.
template <class T>
inline void gather_row(const T* src, const int32_t* o, float* dst) {
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) {
    const __m256i none = _mm256_set1_epi32(-1);
    for (int h = 0; h < NR; h += 8) {
      const __m256i idx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o + h));
      const __m256 mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, none));
      const __m256i safe = _mm256_and_si256(idx, _mm256_castps_si256(mask));
      _mm256_storeu_ps(dst + h, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), src, safe, mask, 4));
    }
    return;
  }
#endif
#if defined(__F16C__)
  if constexpr (std::is_same_v<T, half>) {  // gather the bits, widen 8 at a time
    alignas(16) uint16_t bits[NR];
    for (int l = 0; l < NR; ++l) bits[l] = o[l] >= 0 ? src[o[l]].bits : uint16_t{0};
    for (int h = 0; h < NR; h += 8)
      _mm256_storeu_ps(dst + h, _mm256_cvtph_ps(_mm_load_si128(
                                    reinterpret_cast<const __m128i*>(bits + h))));
    return;
  }
#endif
  for (int l = 0; l < NR; ++l) dst[l] = o[l] >= 0 ? opsdk::to_float(src[o[l]]) : 0.0f;
}

// One kRuns panel row: masked loads per run (AVX-512, float32), else the gather.
template <class T>
inline void runs_row(const T* src, int64_t step, const Runs& r, const int32_t* o, float* dst) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    // Lanes outside a run's masks are not read: its base may lie before src.
    const auto at = [src](int32_t i) {
      return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(src) + i * 4);
    };
    __m512 v = _mm512_setzero_ps();
    if (step == 1) {
      for (int j = 0; j < r.n; ++j) v = _mm512_mask_loadu_ps(v, r.mask[j], at(r.base[j]));
    } else {
      const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                             26, 28, 30);
      for (int j = 0; j < r.n; ++j) {
        const __m512 lo = _mm512_maskz_loadu_ps(r.lo[j], at(r.base[j]));
        const __m512 hi = _mm512_maskz_loadu_ps(r.hi[j], at(r.base[j] + NR));
        v = _mm512_mask_mov_ps(v, r.mask[j], _mm512_permutex2var_ps(lo, even, hi));
      }
    }
    _mm512_storeu_ps(dst, v);
    return;
  }
#endif
  (void)step;
  (void)r;
  gather_row(src, o, dst);
}

// Pack im2col rows [k0, k0 + kc) of the block's columns into NR-wide panels: panel q
// holds block columns q*NR .. q*NR+NR-1 as kc consecutive rows of NR floats; columns
// past the block are zero.
template <class T>
void pack_b(const T* xg, const Geom& g, const BlockPlan& plan, int64_t k0, int64_t kc,
            float* bp) {
  const int64_t taps = g.kh * g.kw, plane = g.h * g.w, panels = plan.panels;
  for (int64_t kk = 0; kk < kc; ++kk) {
    const int64_t k = k0 + kk, c = k / taps, tap = k % taps;
    const T* src = xg + c * plane;
    const int32_t* o = plan.off.data() + tap * panels * NR;
    const PanelKind* kind = plan.kind.data() + tap * panels;
    const Runs* runs = plan.runs.data() + tap * panels;
    for (int64_t q = 0; q < panels; ++q) {
      float* dst = bp + (q * kc + kk) * NR;
      switch (kind[q]) {
        case kZero: store8(dst, splat(0.0f)); store8(dst + 8, splat(0.0f)); break;
        case kContiguous: widen(src + o[q * NR], 1, dst, NR); break;
        case kRuns: runs_row(src, plan.step, runs[q], o + q * NR, dst); break;
        default: gather_row(src, o + q * NR, dst); break;
      }
    }
  }
}

// -------------------------------------------------------------------- micro-kernel
// Where a micro-tile's results go: partial sums (float) between K blocks, the final
// relu'd values (OutT) after the last one. For float32 both are the output itself.
template <class OutT>
struct Tile {
  float* acc;        // partial sums, row stride ldacc (unused when first && last)
  int64_t ldacc;
  OutT* y;           // final output, row stride ldy
  int64_t ldy;
  int ncols;         // valid columns (<= WIDE * NR)
  const float* bias; // MR values (nullptr: zero)
  bool first, last;
};

template <class OutT>
inline void put_row(const Tile<OutT>& t, int i, v8 lo, v8 hi) {
  alignas(32) float tmp[NR];
  if (t.last) {
    lo = relu(lo);
    hi = relu(hi);
  }
  if (t.last && !std::is_same_v<OutT, float>) {
    OutT* y = t.y + i * t.ldy;
#if defined(__F16C__)
    if constexpr (std::is_same_v<OutT, half>) {  // round 8 at a time (to nearest even)
      alignas(16) uint16_t bits[NR];
      _mm_store_si128(reinterpret_cast<__m128i*>(bits),
                      _mm256_cvtps_ph(reinterpret_cast<__m256>(lo), _MM_FROUND_TO_NEAREST_INT));
      _mm_store_si128(reinterpret_cast<__m128i*>(bits + 8),
                      _mm256_cvtps_ph(reinterpret_cast<__m256>(hi), _MM_FROUND_TO_NEAREST_INT));
      std::memcpy(y, bits, static_cast<size_t>(t.ncols) * sizeof(uint16_t));
      return;
    }
#endif
    store8(tmp, lo);
    store8(tmp + 8, hi);
    for (int j = 0; j < t.ncols; ++j) opsdk::from_float(tmp[j], &y[j]);
    return;
  }
  float* dst = t.last ? reinterpret_cast<float*>(t.y) + i * t.ldy : t.acc + i * t.ldacc;
  if (t.ncols == NR) {
    store8(dst, lo);
    store8(dst + 8, hi);
  } else {
    store8(tmp, lo);
    store8(tmp + 8, hi);
    std::memcpy(dst, tmp, static_cast<size_t>(t.ncols) * sizeof(float));
  }
}

template <int R, class OutT>
void micro_kernel(int64_t kc, const float* a, int64_t lda, const float* bp, const Tile<OutT>& t) {
  v8 c0[R], c1[R];
  for (int i = 0; i < R; ++i) {
    if (t.first) {
      c0[i] = c1[i] = splat(t.bias ? t.bias[i] : 0.0f);
    } else if (t.ncols == NR) {
      c0[i] = load8(t.acc + i * t.ldacc);
      c1[i] = load8(t.acc + i * t.ldacc + 8);
    } else {
      alignas(32) float tmp[NR] = {};
      std::memcpy(tmp, t.acc + i * t.ldacc, static_cast<size_t>(t.ncols) * sizeof(float));
      c0[i] = load8(tmp);
      c1[i] = load8(tmp + 8);
    }
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const v8 b0 = load8(bp + k * NR), b1 = load8(bp + k * NR + 8);
    for (int i = 0; i < R; ++i) {
      const v8 ai = splat(a[i * lda + k]);
      c0[i] = fmadd(ai, b0, c0[i]);
      c1[i] = fmadd(ai, b1, c1[i]);
    }
  }
  for (int i = 0; i < R; ++i) put_row(t, i, c0[i], c1[i]);
}

#if defined(__AVX512F__)
// The AVX-512 micro-kernel: R (<= MR) rows x P (1 or 2) consecutive panels, one 16-float
// register per row and panel: a 6 x 32 tile keeps 12 accumulators and does 12 full-width
// FMAs per 6 broadcasts of w and 2 loads of the panels (the portable 6 x 16 kernel does 12
// half-width FMAs per 8 loads). Measured on Zen 4, taller tiles (8, 12 or 14 rows of w read
// in place) were 3-15% slower, wider ones (3 or 4 panels) 1-10% slower. Panel p of the
// tile starts at bp + p * pstride.
inline __mmask16 lanes(int n) { return static_cast<__mmask16>(n >= NR ? 0xFFFF : (1u << n) - 1); }

template <class OutT>
inline void put16(const Tile<OutT>& t, int i, int p, __m512 v) {
  const int n = std::min(NR, t.ncols - p * NR);
  if (n <= 0) return;
  if (t.last) v = _mm512_max_ps(_mm512_setzero_ps(), v);  // relu; max(0, NaN) keeps NaN
  if constexpr (std::is_same_v<OutT, half>) {
    if (t.last) {
      const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      half* y = t.y + i * t.ldy + p * NR;
      if (n == NR) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), h);
      } else {
        alignas(32) uint16_t bits[NR];
        _mm256_store_si256(reinterpret_cast<__m256i*>(bits), h);
        std::memcpy(y, bits, static_cast<size_t>(n) * sizeof(uint16_t));
      }
      return;
    }
  }
  float* dst = t.last ? reinterpret_cast<float*>(t.y) + i * t.ldy : t.acc + i * t.ldacc;
  _mm512_mask_storeu_ps(dst + p * NR, lanes(n), v);
}

template <int R, int P, class OutT>
void micro_kernel512(int64_t kc, const float* a, int64_t lda, const float* bp, int64_t pstride,
                     const Tile<OutT>& t) {
  // Every loop over rows and panels is unrolled so that the accumulators stay registers
  // (GCC keeps a partly unrolled array of them on the stack).
  __m512 c[R][P];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p) {
      if (t.first)
        c[i][p] = _mm512_set1_ps(t.bias ? t.bias[i] : 0.0f);
      else
        c[i][p] = _mm512_maskz_loadu_ps(lanes(t.ncols - p * NR), t.acc + i * t.ldacc + p * NR);
    }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    __m512 b[P];
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p) b[p] = _mm512_loadu_ps(bp + p * pstride + k * NR);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i * lda + k]);
#pragma GCC unroll 2
      for (int p = 0; p < P; ++p) c[i][p] = _mm512_fmadd_ps(ai, b[p], c[i][p]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p) put16(t, i, p, c[i][p]);
}

template <int R, class OutT>
void micro_tile(int panels, int64_t kc, const float* a, int64_t lda, const float* bp,
                const Tile<OutT>& t) {
  static_assert(WIDE == 2, "micro_tile dispatches 1 or 2 panels");
  if (panels == 2)
    micro_kernel512<R, 2>(kc, a, lda, bp, kc * NR, t);
  else
    micro_kernel512<R, 1>(kc, a, lda, bp, kc * NR, t);
}

template <class OutT, int... R>
void run_tile_rows(int rows, int panels, int64_t kc, const float* a, int64_t lda,
                   const float* bp, const Tile<OutT>& t, std::integer_sequence<int, R...>) {
  ((rows == R + 1 ? micro_tile<R + 1>(panels, kc, a, lda, bp, t) : void()), ...);
}

// Rows x panels micro-tile: `panels` (1 or 2) consecutive packed panels.
template <class OutT>
void run_tile(int rows, int panels, int64_t kc, const float* a, int64_t lda, const float* bp,
              const Tile<OutT>& t) {
  run_tile_rows(rows, panels, kc, a, lda, bp, t, std::make_integer_sequence<int, MR>{});
}
#else
// Rows x one panel micro-tile.
template <class OutT>
void run_tile(int rows, int, int64_t kc, const float* a, int64_t lda, const float* bp,
              const Tile<OutT>& t) {
  switch (rows) {
    case 6: micro_kernel<6>(kc, a, lda, bp, t); break;
    case 5: micro_kernel<5>(kc, a, lda, bp, t); break;
    case 4: micro_kernel<4>(kc, a, lda, bp, t); break;
    case 3: micro_kernel<3>(kc, a, lda, bp, t); break;
    case 2: micro_kernel<2>(kc, a, lda, bp, t); break;
    default: micro_kernel<1>(kc, a, lda, bp, t); break;
  }
}
#endif

// Rows of the next micro-tile when `rem` output channels are left: MR, except that a
// remainder of at most MR / 2 rows is merged with the previous tile and split in two
// (MR = 6: 7 -> 4 + 3, 9 -> 5 + 4), since narrow tiles waste most of the FMA throughput.
inline int64_t tile_rows(int64_t rem) {
  if (rem <= MR) return rem;
  const int64_t r = rem % MR;
  if (r == 0 || r > MR / 2 || rem > MR + r) return MR;
  return (rem + 1) / 2;
}

// ---------------------------------------------------------------------- one task
struct Task {
  int64_t n, grp, j0, nc, m0, m1;  // image, group, columns [j0, j0+nc), channels [m0, m1)
};

// Compute output channels [m0, m1) (within the group) x columns [j0, j0 + nc) of one
// image and group, over all of K in KC blocks; packed(k0, kc) gives the packed im2col
// rows [k0, k0 + kc) of the task's columns.
template <class T, class Packed>
void compute_task(const Task& tk, const Geom& g, const float* wf, const float* bf, T* y,
                  Packed&& packed) {
  const int64_t kdim = g.k(), p = g.p();
  const int64_t panels = (tk.nc + NR - 1) / NR;
  float* acc = nullptr;
  std::vector<float> acc_buf;
  if (!std::is_same_v<T, float> && kdim > KC) {
    acc_buf.resize(static_cast<size_t>((tk.m1 - tk.m0) * panels * NR));
    acc = acc_buf.data();
  }
  const int64_t mbase = tk.grp * g.mg;
  T* yb = y + (tk.n * g.m + mbase) * p + tk.j0;
  for (int64_t k0 = 0; k0 < kdim; k0 += KC) {
    const int64_t kc = std::min(KC, kdim - k0);
    const float* bp = packed(k0, kc);
    for (int64_t m = tk.m0, rows = 0; m < tk.m1; m += rows) {
      rows = tile_rows(tk.m1 - m);
      for (int64_t q = 0, step = 0; q < panels; q += step) {
        step = std::min<int64_t>(WIDE, panels - q);
        const int ncols = static_cast<int>(std::min<int64_t>(step * NR, tk.nc - q * NR));
        Tile<T> t;
        t.y = yb + m * p + q * NR;
        t.ldy = p;
        if constexpr (std::is_same_v<T, float>) {
          t.acc = t.y;
          t.ldacc = p;
        } else {
          t.acc = acc ? acc + (m - tk.m0) * panels * NR + q * NR : nullptr;
          t.ldacc = panels * NR;
        }
        t.ncols = ncols;
        t.bias = bf ? bf + mbase + m : nullptr;
        t.first = k0 == 0;
        t.last = k0 + kc >= kdim;
        run_tile(static_cast<int>(rows), static_cast<int>(step), kc,
                 wf + (mbase + m) * kdim + k0, kdim, bp + q * kc * NR, t);
      }
    }
  }
}

// The same, packing each K block into this thread's scratch just before it is used.
template <class T>
void run_task(const Task& tk, const Geom& g, const T* x, const float* wf, const float* bf,
              T* y) {
  const int64_t panels = (tk.nc + NR - 1) / NR;
  float* bp = scratch(static_cast<size_t>(std::min(KC, g.k()) * panels * NR), 0);
  thread_local BlockPlan plan;
  plan.build(g, tk.j0, tk.nc);
  const T* xg = x + (tk.n * g.c + tk.grp * g.cg) * g.h * g.w;
  compute_task(tk, g, wf, bf, y, [&](int64_t k0, int64_t kc) {
    pack_b(xg, g, plan, k0, kc, bp);
    return static_cast<const float*>(bp);
  });
}

// Split the work into tasks: column blocks of NC, and output-channel blocks when there
// are too few column blocks to keep every thread busy.
std::vector<Task> make_tasks(const Geom& g, int threads) {
  const int64_t p = g.p();
  const int64_t nc = std::min<int64_t>(NC, (p + NR - 1) / NR * NR);
  const int64_t jblocks = (p + nc - 1) / nc;
  const int64_t base = g.n * g.group * jblocks;
  int64_t msplit = 1;
  if (threads > 1 && base < 4 * threads) {
    const int64_t want = (4 * threads + base - 1) / base;
    msplit = std::max<int64_t>(1, std::min(want, g.mg / (4 * MR)));
  }
  const int64_t mchunk = ((g.mg + msplit - 1) / msplit + MR - 1) / MR * MR;
  std::vector<Task> tasks;
  tasks.reserve(static_cast<size_t>(base * msplit));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t grp = 0; grp < g.group; ++grp)
      for (int64_t jb = 0; jb < jblocks; ++jb)
        for (int64_t m0 = 0; m0 < g.mg; m0 += mchunk)
          tasks.push_back({n, grp, jb * nc, std::min(nc, p - jb * nc), m0,
                           std::min(g.mg, m0 + mchunk)});
  return tasks;
}

// Run f(0) .. f(n-1) on the context's threads, each thread taking the next task from a
// shared counter: a thread that is descheduled or starts late holds up no one else.
// At most one worker per this many multiply-adds: waking a thread costs more than it
// saves on less (the squeeze-excitation 1x1 convs of MobileNetV3 on 1x1 planes).
constexpr int64_t MIN_MACS_PER_WORKER = 1 << 18;

template <class F>
void run_tasks(const CustomOpKernelContext& ctx, int64_t n, F&& f, int64_t macs = INT64_MAX) {
  std::atomic<int64_t> next{0};
  const int64_t workers = std::min<int64_t>(
      {ctx.num_threads(), n, std::max<int64_t>(1, macs / MIN_MACS_PER_WORKER)});
  ctx.parallel_for(workers, 1, [&](int64_t, int64_t) {
    for (int64_t t = next.fetch_add(1); t < n; t = next.fetch_add(1)) f(t);
  });
}

// When the output channels are split (too few column blocks for the threads), every
// channel chunk of a column block would pack the same im2col rows: here each (column block,
// K block) is packed once, by whichever thread takes it, into the calling thread's scratch,
// and the chunks then read it. At 2 threads, against each chunk packing its own (one
// process, interleaved): 0.58x-0.65x the time on 128->128 20x20 3x3 s2 (5 chunks), 0.65x-0.71x
// on 128->256 20x20 s2, 0.73x-0.76x on 256->512 14x14 s2, 0.82x-0.88x on 512->512 7x7.
// Not above this many floats of packed rows (64 MB); beyond, each chunk packs its own.
constexpr int64_t SHARED_PACK_MAX_FLOATS = int64_t{16} << 20;
// Two chunks per column block pack in parallel at no cost in time, and the extra pass (one
// more parallel_for, packed rows read from another core's cache) measured 1.13x-1.19x
// slower on 64->64 10x10 and 20x20 3x3 and 192->192 20x20 1x1: shared from three.
constexpr int64_t SHARED_PACK_MIN_CHUNKS = 3;

// Tasks of one column block are consecutive (make_tasks): count where a new one starts.
inline int64_t column_blocks(const std::vector<Task>& tasks) {
  int64_t blocks = 0;
  for (size_t i = 0; i < tasks.size(); ++i)
    blocks += i == 0 || tasks[i].j0 != tasks[i - 1].j0 || tasks[i].grp != tasks[i - 1].grp ||
              tasks[i].n != tasks[i - 1].n;
  return blocks;
}

template <class T>
bool shared_gemm(const CustomOpKernelContext& ctx, const Geom& g, const std::vector<Task>& tasks,
                 const T* x, const float* wf, const float* bf, T* y) {
  const int64_t ntasks = static_cast<int64_t>(tasks.size());
  const int64_t blocks = column_blocks(tasks);
  if (blocks == 0 || ntasks % blocks != 0 || ntasks / blocks < SHARED_PACK_MIN_CHUNKS)
    return false;
  const int64_t per = ntasks / blocks, kdim = g.k(), kblocks = (kdim + KC - 1) / KC;
  const int64_t stride = kdim * ((tasks[0].nc + NR - 1) / NR) * NR;  // the widest block
  if (blocks * stride > SHARED_PACK_MAX_FLOATS) return false;
  float* packed = scratch(static_cast<size_t>(blocks * stride), 1);
  run_tasks(ctx, blocks * kblocks, [&](int64_t i) {
    const Task& tk = tasks[static_cast<size_t>((i / kblocks) * per)];
    const int64_t k0 = (i % kblocks) * KC, panels = (tk.nc + NR - 1) / NR;
    thread_local BlockPlan plan;
    plan.build(g, tk.j0, tk.nc);
    const T* xg = x + (tk.n * g.c + tk.grp * g.cg) * g.h * g.w;
    pack_b(xg, g, plan, k0, std::min(KC, kdim - k0),
           packed + (i / kblocks) * stride + k0 * panels * NR);
  });
  run_tasks(ctx, ntasks, [&](int64_t i) {
    const Task& tk = tasks[static_cast<size_t>(i)];
    const int64_t panels = (tk.nc + NR - 1) / NR;
    const float* base = packed + (i / per) * stride;
    compute_task(tk, g, wf, bf, y, [&](int64_t k0, int64_t) { return base + k0 * panels * NR; });
  }, g.n * g.m * g.p() * g.k());
  return true;
}

// ---------------------------------------------------------------------- direct
// Convolutions with few input channels per group (depthwise, 2 per group, and dense ones
// with at most DIRECT_MAX_C input channels: the first layer of an image model) skip the
// GEMM, whose packing dominates when K is small. The group's input planes are copied
// zero-padded, split by stride phase, with the output's row pitch `wq`: phase (pr, pc)
// holds the padded input at rows r * sh + pr and columns q * sw + pc, so that output
// (oy, ox) under tap (i, j) reads one phase at the flat position (oy + i*dh/sh) * wq + ox +
// j*dw/sw. The output is computed over flat positions oy * wq + ox (the wq - ow columns
// past each row are computed and dropped, which keeps small planes in long vectors): 16
// positions per vector, MB output channels x CW vectors of accumulators in registers, each
// loaded input vector feeding MB multiply-adds; bias first, Relu before the one store.
typedef float v16 __attribute__((vector_size(64)));

inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Direct {
  int64_t hq, wq, phase, phases, chan;  // rows, pitch, floats per phase / per channel
  int64_t kdim;                          // cg * kh * kw
  static constexpr int64_t kSlack = 160; // floats read past the last channel (<= 16 * CW)
  Direct(const Geom& g)
      : hq(g.oh + (g.kh - 1) * g.dh / g.sh), wq(g.ow + (g.kw - 1) * g.dw / g.sw),
        phase(hq * wq), phases(g.sh * g.sw), chan(phases * hq * wq), kdim(g.k()) {}
  int64_t floats(const Geom& g) const { return g.cg * chan + kSlack; }
  // Where tap k = (c, i, j) reads, relative to the output's flat position.
  void offsets(const Geom& g, std::vector<int64_t>& off) const {
    off.resize(static_cast<size_t>(kdim));
    for (int64_t c = 0, k = 0; c < g.cg; ++c)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j, ++k) {
          const int64_t oi = i * g.dh, oj = j * g.dw;
          off[static_cast<size_t>(k)] = c * chan + (oi % g.sh * g.sw + oj % g.sw) * phase +
                                        oi / g.sh * wq + oj / g.sw;
        }
  }
};

// row[q] = src[2 q] for q in [q0, q1): the even floats, 16 at a time from 32.
inline void deinterleave2(const float* src, float* row, int64_t q0, int64_t q1) {
  int64_t q = q0;
#if defined(__AVX512F__)
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                         28, 30);
  for (; q + 16 < q1; q += 16) {  // reads src[2q .. 2q + 31], all below 2 (q1 - 1) + 1
    const __m512 lo = _mm512_loadu_ps(src + 2 * q), hi = _mm512_loadu_ps(src + 2 * q + 16);
    _mm512_storeu_ps(row + q, _mm512_permutex2var_ps(lo, even, hi));
  }
#endif
  for (; q < q1; ++q) row[q] = src[2 * q];
}

// One channel plane of x into its stride phases, zero-padded (rows [r0, r1) of each phase).
template <class T>
void pad_phases(const Geom& g, const Direct& d, const T* xp, float* dst, int64_t r0, int64_t r1) {
  for (int64_t pr = 0; pr < g.sh; ++pr)
    for (int64_t pc = 0; pc < g.sw; ++pc) {
      float* ph = dst + (pr * g.sw + pc) * d.phase;
      // the phase's columns q whose input column q * sw + pc - pl is inside [0, w)
      const int64_t off = pc - g.pl;
      const int64_t q0 = std::min(d.wq, off >= 0 ? 0 : (-off + g.sw - 1) / g.sw);
      const int64_t q1 = std::max(q0, std::min(d.wq, g.w - 1 - off < 0 ? 0
                                                        : (g.w - 1 - off) / g.sw + 1));
      for (int64_t r = r0; r < r1; ++r) {
        float* row = ph + r * d.wq;
        const int64_t iy = r * g.sh + pr - g.pt;
        if (iy < 0 || iy >= g.h) {
          std::fill(row, row + d.wq, 0.0f);
          continue;
        }
        std::fill(row, row + q0, 0.0f);
        const T* xr = xp + iy * g.w + off;
        if (g.sw == 1 && std::is_same_v<T, float>)
          std::memcpy(row + q0, xr + q0, static_cast<size_t>(q1 - q0) * sizeof(float));
        else if (g.sw == 1)
          for (int64_t q = q0; q < q1; ++q) row[q] = opsdk::to_float(xr[q]);
        else if (g.sw == 2 && std::is_same_v<T, float>)
          deinterleave2(reinterpret_cast<const float*>(xr), row, q0, q1);
        else
          for (int64_t q = q0; q < q1; ++q) row[q] = opsdk::to_float(xr[q * g.sw]);
        std::fill(row + q1, row + d.wq, 0.0f);
      }
    }
}

// Output rows [oy0, oy1) of MB channels (weights w, MB rows of kdim; bias b or null) from
// the padded group `pad`, into planes y, y + p, ... (T), through the flat scratch `tmp`.
constexpr int64_t DIRECT_MB = 8;  // output channels per direct block, at most

template <int MB, int CW, class T>
void direct_block(const Geom& g, const Direct& d, const int64_t* off, const float* pad,
                  const float* w, const float* b, T* y, int64_t oy0, int64_t oy1, float* tmp) {
  constexpr int64_t STEP = 16 * CW;
  static_assert(STEP <= 128 && MB <= DIRECT_MB, "direct_channels sizes tmp for this");
  const int64_t p0 = oy0 * d.wq, p1 = (oy1 - 1) * d.wq + g.ow;
  const int64_t ld = (p1 - p0 + STEP - 1) / STEP * STEP;
  for (int64_t pos = p0; pos < p1; pos += STEP) {
    v16 acc[MB][CW];
    for (int mb = 0; mb < MB; ++mb)
      for (int cw = 0; cw < CW; ++cw) acc[mb][cw] = v16{} + (b ? b[mb] : 0.0f);
    const float* base = pad + pos;
    for (int64_t k = 0; k < d.kdim; ++k) {
      const float* src = base + off[k];
      v16 v[CW];
      for (int cw = 0; cw < CW; ++cw) v[cw] = load16(src + 16 * cw);
      for (int mb = 0; mb < MB; ++mb) {
        const float wk = w[mb * d.kdim + k];
        for (int cw = 0; cw < CW; ++cw) acc[mb][cw] += wk * v[cw];
      }
    }
    for (int mb = 0; mb < MB; ++mb)
      for (int cw = 0; cw < CW; ++cw) {
        const v16 z = v16{};
        const v16 r = acc[mb][cw] < z ? z : acc[mb][cw];  // relu that keeps NaN
        std::memcpy(tmp + mb * ld + (pos - p0) + 16 * cw, &r, sizeof r);
      }
  }
  const int64_t p = g.p();
  for (int mb = 0; mb < MB; ++mb)
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      const float* src = tmp + mb * ld + (oy * d.wq - p0);
      T* dst = y + mb * p + oy * g.ow;
      if constexpr (std::is_same_v<T, float>)
        std::memcpy(dst, src, static_cast<size_t>(g.ow) * sizeof(float));
      else
        for (int64_t ox = 0; ox < g.ow; ++ox) opsdk::from_float(src[ox], &dst[ox]);
    }
}

// Channels [m0, m0 + rows) of the group (rows <= 8): 8 to 24 accumulators, so that each
// tap's loads (CW input vectors, `rows` weights) feed at least 8 multiply-adds.
template <class T>
void direct_rows(int rows, const Geom& g, const Direct& d, const int64_t* off, const float* pad,
                 const float* w, const float* b, T* y, int64_t oy0, int64_t oy1, float* tmp) {
  switch (rows) {
    case 8: direct_block<8, 3>(g, d, off, pad, w, b, y, oy0, oy1, tmp); break;
    case 7: direct_block<7, 3>(g, d, off, pad, w, b, y, oy0, oy1, tmp); break;
    case 6: direct_block<6, 4>(g, d, off, pad, w, b, y, oy0, oy1, tmp); break;
    case 5: direct_block<5, 4>(g, d, off, pad, w, b, y, oy0, oy1, tmp); break;
    case 4: direct_block<4, 4>(g, d, off, pad, w, b, y, oy0, oy1, tmp); break;
    case 3: direct_block<3, 6>(g, d, off, pad, w, b, y, oy0, oy1, tmp); break;
    case 2: direct_block<2, 8>(g, d, off, pad, w, b, y, oy0, oy1, tmp); break;
    default: direct_block<1, 8>(g, d, off, pad, w, b, y, oy0, oy1, tmp); break;
  }
}

// Output channels [m0, m1) of the group, rows [oy0, oy1), in blocks of DIRECT_MB channels.
template <class T>
void direct_channels(const Geom& g, const Direct& d, const int64_t* off, const float* pad,
                     int64_t n, int64_t grp, int64_t m0, int64_t m1, int64_t oy0, int64_t oy1,
                     const float* wf, const float* bf, T* y) {
  // direct_block's rows of tmp: the flat span rounded up to its step (at most 128 floats)
  float* tmp = scratch(static_cast<size_t>(DIRECT_MB * ((oy1 - oy0) * d.wq + 128)), 1);
  for (int64_t m = m0; m < m1; m += DIRECT_MB) {
    const int64_t oc = grp * g.mg + m;
    const int rows = static_cast<int>(std::min(DIRECT_MB, m1 - m));
    direct_rows(rows, g, d, off, pad, wf + oc * d.kdim, bf ? bf + oc : nullptr,
                y + (n * g.m + oc) * g.p(), oy0, oy1, tmp);
  }
}

// Many (image, group) units (depthwise): one task per unit or a few small ones, each
// padding its own group. Few units (a dense first layer): per unit, the padding in parallel
// over channels, then tasks of DIRECT_MB channels x a block of rows.
template <class T>
void direct_conv(const CustomOpKernelContext& ctx, const Geom& g, const T* x, const float* wf,
                 const float* bf, T* y) {
  const Direct d(g);
  std::vector<int64_t> off;
  d.offsets(g, off);
  const int64_t units = g.n * g.group, threads = ctx.num_threads();
  const T* xg0 = x;
  if (units >= 2 * threads) {
    const int64_t per = std::max<int64_t>(1, 4096 / std::max<int64_t>(1, g.mg * g.p() * d.kdim));
    run_tasks(ctx, (units + per - 1) / per, [&](int64_t t) {
      float* pad = scratch(static_cast<size_t>(d.floats(g)), 0);
      for (int64_t u = t * per; u < std::min(units, (t + 1) * per); ++u) {
        const int64_t n = u / g.group, grp = u % g.group;
        const T* xg = xg0 + (n * g.c + grp * g.cg) * g.h * g.w;
        for (int64_t c = 0; c < g.cg; ++c)
          pad_phases(g, d, xg + c * g.h * g.w, pad + c * d.chan, 0, d.hq);
        std::fill(pad + g.cg * d.chan, pad + d.floats(g), 0.0f);
        direct_channels(g, d, off.data(), pad, n, grp, 0, g.mg, 0, g.oh, wf, bf, y);
      }
    }, g.n * g.m * g.p() * g.k());
    return;
  }
  // Every unit padded at once, then every unit's blocks computed at once: two parallel
  // sections, not two per image, in the calling thread's scratch (no allocation per call;
  // pad_phases writes every row of every phase, so only the slack past them is zeroed).
  // Against a zeroed vector and two sections per image, at 2 threads: 0.78x-0.87x the time
  // on 2x3x224x224 3x3 s2, 0.82x on 1x3x320x320 3x3 s2; 1 thread unchanged (0.95x-1.00x).
  const int64_t floats = d.floats(g);
  float* pad = scratch(static_cast<size_t>(units * floats), 0);
  for (int64_t u = 0; u < units; ++u)
    std::fill(pad + u * floats + g.cg * d.chan, pad + (u + 1) * floats, 0.0f);
  const int64_t mblocks = (g.mg + DIRECT_MB - 1) / DIRECT_MB;
  const int64_t want = std::max<int64_t>(1, (4 * threads + units * mblocks - 1) /
                                                (units * mblocks));
  const int64_t rblock = std::max<int64_t>(1, (g.oh + want - 1) / want);
  const int64_t rblocks = (g.oh + rblock - 1) / rblock;
  const int64_t rows_per = std::max<int64_t>(1, (d.hq + 3) / 4);
  const int64_t chunks = (d.hq + rows_per - 1) / rows_per;
  run_tasks(ctx, units * g.cg * chunks, [&](int64_t t) {
    const int64_t u = t / (g.cg * chunks), c = t % g.cg, r0 = t / g.cg % chunks * rows_per;
    const int64_t n = u / g.group, grp = u % g.group;
    const T* xg = xg0 + (n * g.c + grp * g.cg) * g.h * g.w;
    pad_phases(g, d, xg + c * g.h * g.w, pad + u * floats + c * d.chan, r0,
               std::min(d.hq, r0 + rows_per));
  }, units * g.cg * d.chan * 4);  // a second worker only for copies of 64k floats or more
  run_tasks(ctx, units * mblocks * rblocks, [&](int64_t t) {
    const int64_t u = t / (mblocks * rblocks), n = u / g.group, grp = u % g.group;
    const int64_t m0 = t % mblocks * DIRECT_MB, oy0 = t / mblocks % rblocks * rblock;
    direct_channels(g, d, off.data(), pad + u * floats, n, grp, m0,
                    std::min(g.mg, m0 + DIRECT_MB), oy0, std::min(g.oh, oy0 + rblock), wf,
                    bf, y);
  }, g.n * g.m * g.p() * g.k());
}

// ------------------------------------------------- depthwise on small planes
// On small planes (MobileNet's 7x7 to 28x28) a plane in 16-wide vectors is mostly border and
// garbage columns, so depthwise convolutions (one input and one output channel per group)
// take blocks of CB = 16 channels instead: the block is transposed into a zero-padded
// [row][column][16 channels] copy (the weights and bias likewise), each output position is
// a 16-channel vector, and runs of up to OB positions of a row (of equal length) accumulate
// at once in registers (each tap one weight vector, up to OB loads and multiply-adds),
// Relu'd into a [position][16 channels] buffer and transposed back into the planes. With
// AVX-512 both transposes go 16 channels x 16 positions at a time (16 masked loads, a 16x16
// register transpose, 16 stores), else one value at a time.
constexpr int64_t CB = 16;
constexpr int64_t OB = 8;
// Output rows of at most this many positions take the channel blocks, and of at most
// CHANNEL_BLOCK_MAX_OW5 with kernels 5 wide or wider; wider rows the planes. Measured on the
// corpus's depthwise convs (one thread, against ONNX Runtime, blocks vs planes): 3x3 rows of
// 28 to 56 positions 0.95x-1.19x vs 1.11x-2.25x (stride 2: 48x80x80 1.01x vs 1.52x, 96x40x40
// 1.19x vs 2.25x), rows of 80 to 160 positions 0.70x-1.30x vs 0.43x-1.26x (the planes' row
// vectors full); 5x5 on every corpus plane (7x7 to 3x96) 0.73x-1.74x vs 1.08x-3.38x.
constexpr int64_t CHANNEL_BLOCK_MAX_OW = 64;
constexpr int64_t CHANNEL_BLOCK_MAX_OW5 = 128;

inline bool channel_blocks(const Geom& g) {
  return g.group == g.c && g.group == g.m && g.group > 1 &&
         (g.ow <= CHANNEL_BLOCK_MAX_OW || (g.kw >= 5 && g.ow <= CHANNEL_BLOCK_MAX_OW5));
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define OPSDK_BLOCK_TRANSPOSE 1
// r[i][j] <- r[j][i] for 16 registers of 16 floats.
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xDD);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xDD);
  }
}

// The values of p in the lanes of mask m, as float32; the other lanes 0.
inline __m512 load_lanes(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load_lanes(const half* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
inline void store_lanes(float* p, __m512 v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
inline void store_lanes(half* p, __m512 v, __mmask16 m) {  // rounded to nearest even
  _mm256_mask_storeu_epi16(p, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#endif

// cnt (at most 16) consecutive positions of the block's nl planes (plane l at planes + l *
// stride) into the channel-last copy: position k goes to dst[k] (CB floats, lanes past nl 0).
template <class T>
void block_in(const T* planes, int64_t stride, int64_t nl, int64_t cnt, float* const* dst) {
#if defined(OPSDK_BLOCK_TRANSPOSE)
  __m512 r[CB];
  const __mmask16 m = lanes(static_cast<int>(cnt));
  for (int64_t l = 0; l < CB; ++l)
    r[l] = l < nl ? load_lanes(planes + l * stride, m) : _mm512_setzero_ps();
  transpose16(r);
  for (int64_t k = 0; k < cnt; ++k) _mm512_storeu_ps(dst[k], r[k]);
#else
  for (int64_t l = 0; l < nl; ++l)
    for (int64_t k = 0; k < cnt; ++k) dst[k][l] = opsdk::to_float(planes[l * stride + k]);
#endif
}

// cnt (at most 16) positions of the [position][CB] results src into nl planes of y (plane l
// at y + l * stride).
template <class T>
void block_out(const float* src, int64_t nl, int64_t cnt, T* y, int64_t stride) {
#if defined(OPSDK_BLOCK_TRANSPOSE)
  __m512 r[CB];
  for (int64_t k = 0; k < CB; ++k)
    r[k] = k < cnt ? _mm512_loadu_ps(src + k * CB) : _mm512_setzero_ps();
  transpose16(r);
  const __mmask16 m = lanes(static_cast<int>(cnt));
  for (int64_t l = 0; l < nl; ++l) store_lanes(y + l * stride, r[l], m);
#else
  for (int64_t l = 0; l < nl; ++l)
    for (int64_t k = 0; k < cnt; ++k) opsdk::from_float(src[k * CB + l], &y[l * stride + k]);
#endif
}

// acc[o] += sum over one kernel row's taps j of w[j] * src[(o * sw + j * dw) * CB], o < NB.
// With the kernel width and column stride known (and dilation 1) the NB x KW products read
// each of the (NB - 1) * SW + KW input vectors once (5x5, 8 positions: 12 loads for 40
// multiply-adds, not 40).
template <int KW, int SW, int NB>
inline void block_taps(v16 (&acc)[NB], const float* src, const float* w, const Geom& g) {
  if constexpr (KW > 0) {
    constexpr int NV = (NB - 1) * SW + KW;
    v16 v[NV];
    for (int q = 0; q < NV; ++q) v[q] = load16(src + q * CB);
    for (int j = 0; j < KW; ++j) {
      const v16 wv = load16(w + j * CB);
      for (int o = 0; o < NB; ++o) acc[o] += wv * v[o * SW + j];
    }
  } else {
    for (int64_t j = 0; j < g.kw; ++j) {
      const v16 wv = load16(w + j * CB);
      for (int64_t o = 0; o < NB; ++o) acc[o] += wv * load16(src + (o * g.sw + j * g.dw) * CB);
    }
  }
}

// NB positions (ox0 .. ox0 + NB - 1) of output row oy over kernel rows [i0, i1), Relu'd into
// out[(oy * ow + ox) * CB + lane].
template <int KW, int SW, int NB>
void block_run(const Geom& g, int64_t wp, const float* pad, const float* wt, v16 b, int64_t oy,
               int64_t i0, int64_t i1, int64_t ox0, float* out) {
  v16 acc[NB];
  for (int o = 0; o < NB; ++o) acc[o] = b;
  for (int64_t i = i0; i < i1; ++i)
    block_taps<KW, SW, NB>(acc, pad + ((oy * g.sh + i * g.dh) * wp + ox0 * g.sw) * CB,
                           wt + i * g.kw * CB, g);
  for (int o = 0; o < NB; ++o) {
    const v16 z = v16{};
    const v16 r = acc[o] < z ? z : acc[o];  // relu that keeps NaN
    std::memcpy(out + (oy * g.ow + ox0 + o) * CB, &r, sizeof r);
  }
}

// The block's outputs from its padded copy (row pitch wp), each row in runs of at most OB
// positions of equal length (a row of 10: 5 + 5, not 8 + 2 of which 6 computed and dropped).
template <int KW, int SW>
void block_conv(const Geom& g, int64_t wp, const float* pad, const float* wt, const float* bias,
                float* out) {
  const v16 b = load16(bias);
  const int64_t runs = (g.ow + OB - 1) / OB, len = g.ow / runs, longer = g.ow % runs;
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    // the kernel rows i whose input row oy * sh + i * dh - pt is inside the plane: the
    // others read only zero padding (3x96 5x5: 10 of the 15 row products)
    int64_t i0 = 0, i1 = g.kh;
    while (i0 < i1 && oy * g.sh + i0 * g.dh < g.pt) ++i0;
    while (i1 > i0 && oy * g.sh + (i1 - 1) * g.dh - g.pt >= g.h) --i1;
    for (int64_t r = 0, ox0 = 0; r < runs; ++r) {
      const int64_t nb = len + (r < longer ? 1 : 0);
      switch (nb) {
        case 8: block_run<KW, SW, 8>(g, wp, pad, wt, b, oy, i0, i1, ox0, out); break;
        case 7: block_run<KW, SW, 7>(g, wp, pad, wt, b, oy, i0, i1, ox0, out); break;
        case 6: block_run<KW, SW, 6>(g, wp, pad, wt, b, oy, i0, i1, ox0, out); break;
        case 5: block_run<KW, SW, 5>(g, wp, pad, wt, b, oy, i0, i1, ox0, out); break;
        case 4: block_run<KW, SW, 4>(g, wp, pad, wt, b, oy, i0, i1, ox0, out); break;
        case 3: block_run<KW, SW, 3>(g, wp, pad, wt, b, oy, i0, i1, ox0, out); break;
        case 2: block_run<KW, SW, 2>(g, wp, pad, wt, b, oy, i0, i1, ox0, out); break;
        default: block_run<KW, SW, 1>(g, wp, pad, wt, b, oy, i0, i1, ox0, out); break;
      }
      ox0 += nb;
    }
  }
}

template <class T>
void depthwise_block(const Geom& g, int64_t n, int64_t c0, const T* x, const float* wf,
                     const float* bf, T* y) {
  const int64_t nl = std::min(CB, g.c - c0), taps = g.kh * g.kw, p = g.p();
  const int64_t hp = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  const int64_t wp = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  const int64_t padded = (hp * wp + OB * g.sw) * CB;
  float* wt = scratch(static_cast<size_t>((taps + 1) * CB + padded + p * CB), 0);
  float* bias = wt + taps * CB;
  float* pad = bias + CB;
  float* out = pad + padded;  // [position][CB] results
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t l = 0; l < CB; ++l) wt[t * CB + l] = l < nl ? wf[(c0 + l) * taps + t] : 0.0f;
  for (int64_t l = 0; l < CB; ++l) bias[l] = l < nl && bf ? bf[c0 + l] : 0.0f;
  // the input rows and columns inside the padded copy; zeros only where the copy does not
  // write (the padding rows and columns, and the slack)
  const int64_t rows = std::max<int64_t>(0, std::min(g.h, hp - g.pt));
  const int64_t cols = std::max<int64_t>(0, std::min(g.w, wp - g.pl));
  if (rows == 0 || cols == 0) {
    std::fill(pad, pad + padded, 0.0f);
  } else {
    std::fill(pad, pad + g.pt * wp * CB, 0.0f);
    for (int64_t r = g.pt; r < g.pt + rows; ++r) {
      std::fill(pad + r * wp * CB, pad + (r * wp + g.pl) * CB, 0.0f);
      std::fill(pad + (r * wp + g.pl + cols) * CB, pad + (r + 1) * wp * CB, 0.0f);
    }
    std::fill(pad + (g.pt + rows) * wp * CB, pad + padded, 0.0f);
  }
  // the copy, 16 positions at a time: along the flat plane where whole rows are copied,
  // else along each row
  const int64_t run = cols == g.w ? rows * cols : cols, runs = cols == g.w ? 1 : rows;
  const T* xb = x + (n * g.c + c0) * g.h * g.w;
  float* dst[CB];
  for (int64_t r = 0; r < runs && rows > 0 && cols > 0; ++r)
    for (int64_t j0 = 0; j0 < run; j0 += CB) {
      const int64_t cnt = std::min(CB, run - j0);
      for (int64_t k = 0; k < cnt; ++k) {
        const int64_t iy = r + (j0 + k) / cols, ix = (j0 + k) % cols;
        dst[k] = pad + ((iy + g.pt) * wp + g.pl + ix) * CB;
      }
      block_in(xb + r * g.w + j0, g.h * g.w, nl, cnt, dst);
    }
  const bool unit = g.dw == 1;
  if (unit && g.kw == 3 && g.sw == 1) block_conv<3, 1>(g, wp, pad, wt, bias, out);
  else if (unit && g.kw == 3 && g.sw == 2) block_conv<3, 2>(g, wp, pad, wt, bias, out);
  else if (unit && g.kw == 5 && g.sw == 1) block_conv<5, 1>(g, wp, pad, wt, bias, out);
  else if (unit && g.kw == 5 && g.sw == 2) block_conv<5, 2>(g, wp, pad, wt, bias, out);
  else block_conv<0, 0>(g, wp, pad, wt, bias, out);
  T* yb = y + (n * g.m + c0) * p;
  for (int64_t j0 = 0; j0 < p; j0 += CB)
    block_out(out + j0 * CB, nl, std::min(CB, p - j0), yb + j0, p);
}

template <class T>
void depthwise_blocks(const CustomOpKernelContext& ctx, const Geom& g, const T* x,
                      const float* wf, const float* bf, T* y) {
  const int64_t blocks = (g.c + CB - 1) / CB;
  run_tasks(ctx, g.n * blocks, [&](int64_t t) {
    depthwise_block(g, t / blocks, t % blocks * CB, x, wf, bf, y);
  }, g.n * g.m * g.p() * g.k());
}

// ------------------------------------------------------------ small pointwise
// 1x1 convolutions (stride 1, no padding, one group) on planes of fewer than NR positions,
// such as squeeze-excitation blocks on 1x1 planes: a GEMM panel would be mostly empty, so
// each output position is M dot products of K = C, vectorised along C, four channels at once.
inline float hsum(v16 v) {
  float s = 0.0f;
  for (int l = 0; l < 16; ++l) s += v[l];
  return s;
}

template <class T>
void small_pointwise(const CustomOpKernelContext& ctx, const Geom& g, const T* x,
                     const float* wf, const float* bf, T* y) {
  const int64_t p = g.p(), kdim = g.c;
  run_tasks(ctx, g.n * p, [&](int64_t t) {
    const int64_t n = t / p, j = t % p;
    float* xc = scratch(static_cast<size_t>(kdim + 16), 0);
    for (int64_t c = 0; c < kdim; ++c) xc[c] = opsdk::to_float(x[(n * g.c + c) * p + j]);
    for (int64_t m0 = 0; m0 < g.m; m0 += 4) {
      const int rows = static_cast<int>(std::min<int64_t>(4, g.m - m0));
      v16 acc[4] = {};
      int64_t c = 0;
      for (; c + 16 <= kdim; c += 16) {
        const v16 xv = load16(xc + c);
        for (int r = 0; r < 4; ++r)
          if (r < rows) acc[r] += load16(wf + (m0 + r) * kdim + c) * xv;
      }
      for (int r = 0; r < rows; ++r) {
        float sum = hsum(acc[r]) + (bf ? bf[m0 + r] : 0.0f);
        for (int64_t k = c; k < kdim; ++k) sum += wf[(m0 + r) * kdim + k] * xc[k];
        opsdk::from_float(relu1(sum), &y[(n * g.m + m0 + r) * p + j]);
      }
    }
  }, g.n * p * g.m * kdim);
}

// ------------------------------------------------------------------------ entry
Geom geometry(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  const opsdk::Tensor& w = ctx.input(1);
  const auto strides = ctx.attr<std::vector<int64_t>>("strides");
  const auto pads = ctx.attr<std::vector<int64_t>>("pads");
  const auto dil = ctx.attr<std::vector<int64_t>>("dilations");
  if (strides.size() != 2 || pads.size() != 4 || dil.size() != 2)
    throw opsdk::OpError("FusedConvBnRelu: strides/dilations need 2 values and pads 4");
  Geom g{};
  g.n = x.size(0); g.c = x.size(1); g.h = x.size(2); g.w = x.size(3);
  g.m = w.size(0); g.cg = w.size(1); g.kh = w.size(2); g.kw = w.size(3);
  g.sh = strides[0]; g.sw = strides[1];
  g.pt = pads[0]; g.pl = pads[1];
  g.dh = dil[0]; g.dw = dil[1];
  g.group = ctx.attr<int64_t>("group");
  g.mg = g.group > 0 ? g.m / g.group : 0;
  const opsdk::Tensor& y = ctx.output(0);
  g.oh = y.size(2);
  g.ow = y.size(3);
  if (g.group < 1 || g.cg * g.group != g.c || g.mg * g.group != g.m)
    throw opsdk::OpError(opsdk::detail::cat("FusedConvBnRelu: w has shape (", g.m, ", ", g.cg,
                                            ", ...) which does not fit C=", g.c,
                                            " and group=", g.group));
  if (g.h * g.w > INT32_MAX)
    throw opsdk::OpError(opsdk::detail::cat("FusedConvBnRelu: input 'x' has ", g.h, "x", g.w,
                                            " = ", g.h * g.w, " pixels per channel; the kernel "
                                            "indexes a channel plane with int32 (at most ",
                                            INT32_MAX, "); tile the image"));
  return g;
}

// float32 copies of the weights and bias (for float16 inputs), converted in parallel.
template <class T>
const float* as_float(const CustomOpKernelContext& ctx, const T* src, int64_t n,
                      std::vector<float>& store) {
  if constexpr (std::is_same_v<T, float>) {
    return src;
  } else {
    store.resize(static_cast<size_t>(n));
    float* dst = store.data();
    ctx.parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = opsdk::to_float(src[i]);
    });
    return dst;
  }
}

template <class T>
void fused_conv_bn_relu(const CustomOpKernelContext& ctx) {
  const Geom g = geometry(ctx);
  T* y = ctx.output(0).mutable_data<T>();
  const int64_t total = g.n * g.m * g.p();
  if (total == 0) return;
  std::vector<float> wstore, bstore;
  const float* bf = nullptr;
  if (ctx.has_input(2)) {
    const opsdk::Tensor& b = ctx.input(2);
    if (b.numel() != g.m)
      throw opsdk::OpError(opsdk::detail::cat("FusedConvBnRelu: b has ", b.numel(),
                                              " values, expected M=", g.m));
    bf = as_float(ctx, b.data<T>(), g.m, bstore);
  }
  if (g.k() == 0) {  // no input channels: y = relu(b)
    ctx.parallel_for(total, 1 << 15, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        opsdk::from_float(bf ? relu1(bf[(i / g.p()) % g.m]) : 0.0f, &y[i]);
    });
    return;
  }
  const float* wf = as_float(ctx, ctx.input(1).data<T>(), g.m * g.k(), wstore);
  const T* x = ctx.input(0).data<T>();
  if (channel_blocks(g)) {
    depthwise_blocks(ctx, g, x, wf, bf, y);
    return;
  }
  if ((g.group > 1 && g.cg <= DIRECT_MAX_CG) || direct_dense(g)) {
    direct_conv(ctx, g, x, wf, bf, y);
    return;
  }
  if (g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 &&
      g.oh == g.h && g.ow == g.w && g.group == 1 && g.p() < NR) {
    small_pointwise(ctx, g, x, wf, bf, y);
    return;
  }
  const std::vector<Task> tasks = make_tasks(g, ctx.num_threads());
  if (shared_gemm(ctx, g, tasks, x, wf, bf, y)) return;
  run_tasks(ctx, static_cast<int64_t>(tasks.size()),
            [&](int64_t i) { run_task(tasks[static_cast<size_t>(i)], g, x, wf, bf, y); },
            g.n * g.m * g.p() * g.k());
}

}  // namespace

REGISTER_CUSTOM_OP("FusedConvBnRelu").Kernels<half, float>(OPSDK_KERNEL_TEMPLATE(fused_conv_bn_relu));
