// Portable 8-lane float SIMD helpers for opsdk's shipped operators.
//
// Written with GCC/Clang vector extensions, so the same code becomes AVX2 on x86-64
// (-march=native), NEON on AArch64 and SSE elsewhere; exact FMA and float16 conversions
// use the x86 intrinsics (FMA, F16C) when the target has them, portable code otherwise.
// Part of the opsdk C++ API (shipped with the package): any operator may include it as
// <opsdk/vec.h>. Gelu, LayerNormalization and Softmax use it.
#pragma once

#include <opsdk/custom_op.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__FMA__) || defined(__F16C__)
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

// exp(a) for a <= 0 (or NaN), to about 1.3 float32 ulps, with gradual underflow through
// the subnormals to 0 (exp(-Inf) == 0 exactly) and NaN in -> NaN out. The exponents of
// softmax and Gelu are never positive, so there is no overflow to handle. exp(r) on
// |r| <= ln2/2 is 1 + r + r^2 Q(r), Q a degree-4 minimax polynomial (relative error
// 3.1e-9 in exact arithmetic) evaluated in Estrin's scheme (a short dependency chain);
// 2^n is applied as 2^(n+64) * 2^-64 so n in [-150, 0] stays normal until the last
// product, which rounds once into the subnormals.
inline f8 exp_nonpositive(f8 a) {
  a = max_keep_nan(a, splat(-104.0f));
  const f8 k = a * 1.44269504088896341f + 12582912.0f;  // round(a / ln2) in the low bits
  const f8 n = k - 12582912.0f;
  f8 r = a - n * 0.693145751953125f;  // Cody-Waite: ln2 = hi + lo, n * hi exact
  r = r - n * 1.428606765330187e-06f;
  const f8 r2 = r * r;
  const f8 q01 = r * 0.16666520741272536f + 0.49999993453366953f;
  const f8 q23 = r * 0.008368703736289378f + 0.04166838746525876f;
  const f8 q = (r2 * 0.0013814573099541119f + q23) * r2 + q01;
  const f8 p = 1.0f + (r + r2 * q);
  const f8 scale = as_f((as_i(k) + (127 + 64 - 0x4B400000)) << 23);
  return (p * scale) * 5.42101086242752217e-20f;  // 2^-64
}

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

}  // namespace opsdk_vec
