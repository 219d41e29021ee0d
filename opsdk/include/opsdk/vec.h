// Portable float SIMD helpers for opsdk's shipped operators.
//
// Written with GCC/Clang vector extensions, so the same code becomes AVX2 on x86-64
// (-march=native), NEON on AArch64 and SSE elsewhere; exact FMA and float16 conversions
// use the x86 intrinsics (FMA, F16C) when the target has them, portable code otherwise.
// Part of the opsdk C++ API (shipped with the package): any operator may include it as
// <opsdk/vec.h>. Gelu, LayerNormalization and Softmax use it.
//
// Two APIs share the lane-wise functions (select, fma, exp_nonpositive, ...):
//   opsdk_vec::        8 lanes everywhere: f8 / i8, load, store, load_f, map, ...
//   opsdk_vec::wide::  the target's natural width: vf / vi with kLanes = 16 where the
//                      compiler targets AVX-512F (x86-64-v4, -march=native on such CPUs),
//                      8 elsewhere (where vf is f8). The same names: write the kernel once
//                      with `using namespace opsdk_vec::wide;` and it runs 16 lanes wide
//                      on AVX-512 and 8 lanes wide on AVX2, SSE and NEON.
#pragma once

#include <opsdk/custom_op.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__FMA__) || defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace opsdk_vec {

constexpr int64_t kLanes = 8;

typedef float f8 __attribute__((vector_size(32)));
typedef int32_t i8 __attribute__((vector_size(32)));
typedef uint32_t u8 __attribute__((vector_size(32)));
typedef uint16_t h8 __attribute__((vector_size(16)));

inline f8 splat(float v) { return f8{v, v, v, v, v, v, v, v}; }
inline f8 as_f(i8 v) {
  f8 r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}
inline i8 as_i(f8 v) {
  i8 r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}
inline f8 load(const float* p) {
  f8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, f8 v) { std::memcpy(p, &v, sizeof v); }

// Lane-wise m ? a : b for a comparison mask m (all ones or all zeros per lane).
inline f8 select(i8 m, f8 a, f8 b) {
#if defined(__AVX__)
  return (f8)_mm256_blendv_ps((__m256)b, (__m256)a, (__m256)as_f(m));
#else
  return as_f((as_i(a) & m) | (as_i(b) & ~m));
#endif
}
// min/max that return `a` when `a` is NaN (NaN propagates through clamping). x86
// MINPS/MAXPS return their second operand when either is NaN, hence the operand order.
inline f8 min_keep_nan(f8 a, f8 b) {
#if defined(__AVX__)
  return (f8)_mm256_min_ps((__m256)b, (__m256)a);
#else
  return select(a > b, b, a);
#endif
}
inline f8 max_keep_nan(f8 a, f8 b) {
#if defined(__AVX__)
  return (f8)_mm256_max_ps((__m256)b, (__m256)a);
#else
  return select(a < b, b, a);
#endif
}
// Plain max for reductions: a > b ? a : b (NaN handling is up to the caller).
inline f8 vmax(f8 a, f8 b) {
#if defined(__AVX__)
  return (f8)_mm256_max_ps((__m256)a, (__m256)b);
#else
  return select(a > b, a, b);
#endif
}
inline f8 vabs(f8 a) { return as_f(as_i(a) & 0x7fffffff); }

// a * b + c with a single rounding.
inline f8 fma(f8 a, f8 b, f8 c) {
#if defined(__FMA__) && defined(__AVX__)
  return (f8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
  f8 r;
  for (int i = 0; i < 8; ++i) r[i] = std::fma(a[i], b[i], c[i]);
  return r;
#endif
}

// Horizontal sum and max of the 8 lanes.
inline float hsum(f8 v) {
#if defined(__AVX__)
  __m128 a = _mm_add_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
  a = _mm_add_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_add_ss(a, _mm_movehdup_ps(a)));
#else
  float s = 0.0f;
  for (int i = 0; i < 8; ++i) s += v[i];
  return s;
#endif
}
inline float hmax(f8 v) {
#if defined(__AVX__)
  __m128 a = _mm_max_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
  a = _mm_max_ps(a, _mm_movehl_ps(a, a));
  return _mm_cvtss_f32(_mm_max_ss(a, _mm_movehdup_ps(a)));
#else
  float m = v[0];
  for (int i = 1; i < 8; ++i) m = v[i] > m ? v[i] : m;
  return m;
#endif
}

// exp(a) for a <= 0 (or NaN), within 1.02 float32 ulps (1.019 measured over every float32
// in [-104, 0]: benchmarks/vec_accuracy.py), with gradual underflow through
// the subnormals to 0 (exp(-Inf) == 0 exactly) and NaN in -> NaN out. The exponents of
// softmax and Gelu are never positive, so there is no overflow to handle. exp(r) on
// |r| <= ln2/2 is 1 + r + r^2 Q(r), Q a degree-4 minimax polynomial (relative error
// 3.1e-9 in exact arithmetic) evaluated in Estrin's scheme (a short dependency chain);
// 2^n is applied as 2^(n+64) * 2^-64 so n in [-150, 0] stays normal until the last
// product, which rounds once into the subnormals.
// With a second argument: exp(a + lo) for a tail lo with |lo| <= ulp(a) (the rounding
// error of a, e.g. from an FMA), added to the reduced argument, so it costs one addition.
inline f8 exp_nonpositive(f8 a, f8 lo) {
  a = max_keep_nan(a, splat(-104.0f));
  const f8 k = a * 1.44269504088896341f + 12582912.0f;  // round(a / ln2) in the low bits
  const f8 n = k - 12582912.0f;
  f8 r = a - n * 0.693145751953125f;  // Cody-Waite: ln2 = hi + lo, n * hi exact
  r = (r - n * 1.428606765330187e-06f) + lo;
  const f8 r2 = r * r;
  const f8 q01 = r * 0.16666520741272536f + 0.49999993453366953f;
  const f8 q23 = r * 0.008368703736289378f + 0.04166838746525876f;
  const f8 q = (r2 * 0.0013814573099541119f + q23) * r2 + q01;
  const f8 p = 1.0f + (r + r2 * q);
  const f8 scale = as_f((as_i(k) + (127 + 64 - 0x4B400000)) << 23);
  return (p * scale) * 5.42101086242752217e-20f;  // 2^-64
}
inline f8 exp_nonpositive(f8 a) { return exp_nonpositive(a, splat(-0.0f)); }  // r + -0 == r

// ------------------------------------------------------------ dtype block conversion
// Load 8 elements of T widened to float, and store 8 floats narrowed to T (round to
// nearest even; NaN stays NaN).
template <class T> inline f8 load_f(const T* p);
template <class T> inline void store_f(T* p, f8 v);

template <> inline f8 load_f<float>(const float* p) { return load(p); }
template <> inline void store_f<float>(float* p, f8 v) { store(p, v); }

template <> inline f8 load_f<opsdk::half>(const opsdk::half* p) {
#if defined(__F16C__) && defined(__AVX__)
  return (f8)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
  f8 r;
  for (int i = 0; i < 8; ++i) r[i] = opsdk::half_to_float(p[i]);
  return r;
#endif
}
template <> inline void store_f<opsdk::half>(opsdk::half* p, f8 v) {
#if defined(__F16C__) && defined(__AVX__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  for (int i = 0; i < 8; ++i) p[i] = opsdk::float_to_half(v[i]);
#endif
}

template <> inline f8 load_f<opsdk::bfloat16>(const opsdk::bfloat16* p) {
  h8 h;
  std::memcpy(&h, p, sizeof h);
  const u8 w = __builtin_convertvector(h, u8) << 16;
  f8 r;
  std::memcpy(&r, &w, sizeof r);
  return r;
}
template <> inline void store_f<opsdk::bfloat16>(opsdk::bfloat16* p, f8 v) {
  u8 b;
  std::memcpy(&b, &v, sizeof b);
  const i8 nan = as_i(vabs(v)) > 0x7f800000;
  const u8 rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
  const u8 quiet = (b >> 16) | 0x40u;
  const u8 out = (quiet & (u8)nan) | (rounded & ~(u8)nan);
  const h8 h = __builtin_convertvector(out, h8);
  std::memcpy(p, &h, sizeof h);
}

// Widen n <= 8 elements into a zero-padded block / narrow the first n lanes back.
template <class T> inline f8 load_partial(const T* p, int64_t n) {
  alignas(32) float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t i = 0; i < n; ++i) buf[i] = opsdk::to_float(p[i]);
  return load(buf);
}
template <class T> inline void store_partial(T* p, f8 v, int64_t n) {
  alignas(32) float buf[8];
  store(buf, v);
  for (int64_t i = 0; i < n; ++i) opsdk::from_float(buf[i], &p[i]);
}

// Non-temporal (streaming) store of 8 lanes: bypasses the cache and skips the read of
// the destination line a normal store costs. p must be 32-byte aligned for float and
// 16-byte aligned for float16/bfloat16. Falls back to an ordinary store.
template <class T> inline void stream_f(T* p, f8 v) {
#if defined(__AVX__)
  if constexpr (std::is_same_v<T, float>) {
    _mm256_stream_ps(p, (__m256)v);
  } else {
    alignas(16) T tmp[8];
    store_f(tmp, v);
    __m128i bits;
    std::memcpy(&bits, tmp, sizeof bits);
    _mm_stream_si128(reinterpret_cast<__m128i*>(p), bits);
  }
#else
  store_f(p, v);
#endif
}

// Orders the streaming stores of this thread before whatever follows (call once per task).
inline void stream_fence() {
#if defined(__AVX__)
  _mm_sfence();
#endif
}

// Outputs at least this large are written with streaming stores by map(): they do not fit
// in the cache anyway, and streaming saves the read-for-ownership of every line.
constexpr int64_t kStreamBytes = int64_t{16} << 20;

// y[i] = f(x[i]) over [0, n), 8 lanes at a time, the ragged tail through a padded block.
// With `streaming`, y is written with non-temporal stores once aligned.
template <class T, class F> inline void map(const T* x, T* y, int64_t n, F&& f,
                                            bool streaming = false) {
  int64_t i = 0;
  if (streaming) {
    const auto addr = reinterpret_cast<uintptr_t>(y);
    const int64_t peel = static_cast<int64_t>(((32 - (addr & 31)) & 31) / sizeof(T));
    if (addr % sizeof(T) == 0 && peel + 16 <= n) {
      for (; i + 8 <= peel; i += 8) store_f(y + i, f(load_f(x + i)));
      if (i < peel) store_partial(y + i, f(load_partial(x + i, peel - i)), peel - i);
      i = peel;
      for (; i + 16 <= n; i += 16) {
        const f8 a = load_f(x + i), b = load_f(x + i + 8);
        stream_f(y + i, f(a));
        stream_f(y + i + 8, f(b));
      }
      stream_fence();
    }
  }
  for (; i + 16 <= n; i += 16) {
    const f8 a = load_f(x + i), b = load_f(x + i + 8);
    store_f(y + i, f(a));
    store_f(y + i + 8, f(b));
  }
  for (; i + 8 <= n; i += 8) store_f(y + i, f(load_f(x + i)));
  if (i < n) store_partial(y + i, f(load_partial(x + i, n - i)), n - i);
}

// 1 / d, correctly rounded on 8 lanes (a division).
inline f8 recip(f8 d) { return 1.0f / d; }

#if defined(__AVX512F__)
// ------------------------------------------------------------------ 16 lanes (AVX-512F)
// The lane-wise functions above, for 16 lanes. Comparisons of v16 give i16 masks (all ones
// or all zeros per lane), as with 8 lanes.
typedef float v16 __attribute__((vector_size(64)));
typedef int32_t i16 __attribute__((vector_size(64)));

inline v16 splat16(float v) { return (v16)_mm512_set1_ps(v); }

inline v16 as_f(i16 v) { return (v16)v; }
inline i16 as_i(v16 v) { return (i16)v; }
inline v16 select(i16 m, v16 a, v16 b) {
  return (v16)_mm512_mask_blend_ps(_mm512_test_epi32_mask((__m512i)m, (__m512i)m), (__m512)b,
                                   (__m512)a);
}
// Lane-wise m ? a : b for an AVX-512 mask register (from wide::gt / wide::lt): no
// round trip of the comparison through a vector register.
inline v16 select(__mmask16 m, v16 a, v16 b) {
  return (v16)_mm512_mask_blend_ps(m, (__m512)b, (__m512)a);
}
inline v16 min_keep_nan(v16 a, v16 b) { return (v16)_mm512_min_ps((__m512)b, (__m512)a); }
inline v16 max_keep_nan(v16 a, v16 b) { return (v16)_mm512_max_ps((__m512)b, (__m512)a); }
inline v16 vmax(v16 a, v16 b) { return (v16)_mm512_max_ps((__m512)a, (__m512)b); }
inline v16 vabs(v16 a) { return as_f(as_i(a) & 0x7fffffff); }
inline v16 fma(v16 a, v16 b, v16 c) {
  return (v16)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
}
inline float hsum(v16 v) { return _mm512_reduce_add_ps((__m512)v); }
inline float hmax(v16 v) { return _mm512_reduce_max_ps((__m512)v); }

// 1 / d for finite d with |d| in [2^-126, 2^126]: a 14-bit estimate (VRCP14PS) refined by
// one Newton step, for a third of a division's cost; within 0.527 ulps (every float32
// mantissa, benchmarks/vec_accuracy.py; the division is within 0.5).
inline v16 recip(v16 d) {
  const v16 r = (v16)_mm512_rcp14_ps((__m512)d);
  return fma(r, fma(-d, r, splat16(1.0f)), r);
}

// exp(a) for a <= 0 (or NaN), as the 8-lane exp_nonpositive (same reduction and
// polynomial, same results) but with VSCALEFPS applying 2^n: one instruction that
// rounds once into the subnormals, instead of building 2^(n+64) from integer bits.
inline v16 exp_nonpositive(v16 a, v16 lo) {
  a = max_keep_nan(a, splat16(-104.0f));
  const v16 n = (v16)_mm512_roundscale_ps((__m512)(a * 1.44269504088896341f),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v16 r = fma(n, splat16(-0.693145751953125f), a);
  r = fma(n, splat16(-1.428606765330187e-06f), r) + lo;
  const v16 r2 = r * r;
  const v16 q01 = r * 0.16666520741272536f + 0.49999993453366953f;
  const v16 q23 = r * 0.008368703736289378f + 0.04166838746525876f;
  const v16 q = (r2 * 0.0013814573099541119f + q23) * r2 + q01;
  const v16 p = 1.0f + (r + r2 * q);
  return (v16)_mm512_scalef_ps((__m512)p, (__m512)n);
}
inline v16 exp_nonpositive(v16 a) { return exp_nonpositive(a, splat16(-0.0f)); }
#endif

// ------------------------------------------------------------ the target's natural width
namespace wide {

using opsdk_vec::exp_nonpositive;
using opsdk_vec::fma;
using opsdk_vec::hmax;
using opsdk_vec::hsum;
using opsdk_vec::max_keep_nan;
using opsdk_vec::min_keep_nan;
using opsdk_vec::recip;
using opsdk_vec::select;
using opsdk_vec::vabs;
using opsdk_vec::vmax;
using opsdk_vec::kStreamBytes;
using opsdk_vec::stream_fence;

#if defined(__AVX512F__)
constexpr int64_t kLanes = 16;
using vf = v16;
using vi = i16;
using vm = __mmask16;  // a lane mask, for select: from gt / lt

// a > b and a < b per lane (ordered: false where either is NaN).
inline vm gt(vf a, vf b) { return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_GT_OQ); }
inline vm lt(vf a, vf b) { return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_LT_OQ); }

inline vf splat(float v) { return splat16(v); }
inline vf load(const float* p) { return (vf)_mm512_loadu_ps(p); }
inline void store(float* p, vf v) { _mm512_storeu_ps(p, (__m512)v); }

// 16 float16 / bfloat16 values (as 16-bit lanes) widened to float, and back (round to
// nearest even; NaN stays NaN).
template <class T> inline vf widen16(__m256i h) {
  if constexpr (std::is_same_v<T, opsdk::half>) {
    return (vf)_mm512_cvtph_ps(h);
  } else {
    static_assert(std::is_same_v<T, opsdk::bfloat16>, "half or bfloat16");
    return (vf)_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
  }
}
template <class T> inline __m256i narrow16(vf v) {
  if constexpr (std::is_same_v<T, opsdk::half>) {
    return _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  } else {
    static_assert(std::is_same_v<T, opsdk::bfloat16>, "half or bfloat16");
    typedef uint32_t u16v __attribute__((vector_size(64)));
    const u16v b = (u16v)v;
    const vi nan = as_i(vabs(v)) > 0x7f800000;
    const u16v rounded = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
    const u16v quiet = (b >> 16) | 0x40u;
    const u16v out = (quiet & (u16v)nan) | (rounded & ~(u16v)nan);
    return _mm512_cvtepi32_epi16((__m512i)out);
  }
}

template <class T> inline vf load_f(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return load(p);
  } else {
    return widen16<T>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
}

template <class T> inline void store_f(T* p, vf v) {
  if constexpr (std::is_same_v<T, float>) {
    store(p, v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow16<T>(v));
  }
}

// Load n < 16 elements (the rest of the lanes 0) / store the first n lanes: AVX-512 masked
// loads and stores, so the tail touches no memory past p + n.
template <class T> inline vf load_partial(const T* p, int64_t n) {
  const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
  if constexpr (std::is_same_v<T, float>) {
    return (vf)_mm512_maskz_loadu_ps(m, p);
  } else {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
#else
    alignas(32) T buf[16] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(T));
    const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(buf));
#endif
    return widen16<T>(h);
  }
}
template <class T> inline void store_partial(T* p, vf v, int64_t n) {
  const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, m, (__m512)v);
  } else {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    _mm256_mask_storeu_epi16(p, m, narrow16<T>(v));
#else
    alignas(32) T buf[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(buf), narrow16<T>(v));
    std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(T));
#endif
  }
}

// Non-temporal store of 16 lanes; p must be aligned to 16 * sizeof(T) bytes.
template <class T> inline void stream_f(T* p, vf v) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_stream_ps(p, (__m512)v);
  } else {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p), narrow16<T>(v));
  }
}
#else
constexpr int64_t kLanes = opsdk_vec::kLanes;
using vf = f8;
using vi = i8;
using vm = i8;

inline vm gt(vf a, vf b) { return a > b; }
inline vm lt(vf a, vf b) { return a < b; }

inline vf splat(float v) { return opsdk_vec::splat(v); }
inline vf load(const float* p) { return opsdk_vec::load(p); }
inline void store(float* p, vf v) { opsdk_vec::store(p, v); }
template <class T> inline vf load_f(const T* p) { return opsdk_vec::load_f(p); }
template <class T> inline void store_f(T* p, vf v) { opsdk_vec::store_f(p, v); }
template <class T> inline vf load_partial(const T* p, int64_t n) {
  return opsdk_vec::load_partial(p, n);
}
template <class T> inline void store_partial(T* p, vf v, int64_t n) {
  opsdk_vec::store_partial(p, v, n);
}
template <class T> inline void stream_f(T* p, vf v) { opsdk_vec::stream_f(p, v); }
#endif

// y[i] = f(x[i]) over [0, n), kLanes at a time, the ragged tail through load_partial /
// store_partial (masked on AVX-512). With `streaming`, y is written with non-temporal
// stores from the first element aligned to a whole vector of T on.
template <class T, class F> inline void map(const T* x, T* y, int64_t n, F&& f,
                                            bool streaming = false) {
  constexpr int64_t kL = kLanes;
  int64_t i = 0;
  if (streaming) {
    constexpr uintptr_t kAlign = kL * sizeof(T);
    const auto addr = reinterpret_cast<uintptr_t>(y);
    const int64_t peel = static_cast<int64_t>(((kAlign - addr % kAlign) % kAlign) / sizeof(T));
    if (addr % sizeof(T) == 0 && peel + 2 * kL <= n) {
      if (peel > 0) store_partial(y, f(load_partial(x, peel)), peel);
      for (i = peel; i + 2 * kL <= n; i += 2 * kL) {
        const vf a = load_f(x + i), b = load_f(x + i + kL);
        stream_f(y + i, f(a));
        stream_f(y + i + kL, f(b));
      }
      stream_fence();
    }
  }
  for (; i + 2 * kL <= n; i += 2 * kL) {
    const vf a = load_f(x + i), b = load_f(x + i + kL);
    store_f(y + i, f(a));
    store_f(y + i + kL, f(b));
  }
  for (; i + kL <= n; i += kL) store_f(y + i, f(load_f(x + i)));
  if (i < n) store_partial(y + i, f(load_partial(x + i, n - i)), n - i);
}

}  // namespace wide
}  // namespace opsdk_vec
