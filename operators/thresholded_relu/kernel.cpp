// ThresholdedRelu CPU kernel: y = x if x > alpha else 0 (ONNX ThresholdedRelu).
//
// A pure streaming kernel, so its speed is memory bandwidth: 8 floats per AVX step (the
// compiler vectorises the float32 loop by itself), float16 widened and narrowed 8 at a
// time with F16C, every thread busy on large tensors, and outputs of 16 MiB or more
// written with streaming (non-temporal) stores, which skip reading each output cache line
// before overwriting it. NaN > alpha is false, so NaN gives 0, as in ONNX's formula.
#include <opsdk/custom_op.h>

#include <cstdint>
#include <type_traits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace {

constexpr int64_t kGrain = 1 << 17;                 // elements per task (~30 us)
constexpr int64_t kStreamBytes = int64_t{16} << 20;  // stream outputs at least this large

template <class T>
void scalar_range(const T* px, T* py, int64_t b, int64_t e, float alpha) {
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t i = b; i < e; ++i) py[i] = px[i] > alpha ? px[i] : 0.0f;
  } else {
    for (int64_t i = b; i < e; ++i) {
      const float v = opsdk::to_float(px[i]);
      opsdk::from_float(v > alpha ? v : 0.0f, &py[i]);
    }
  }
}

#if defined(__AVX__) && defined(__F16C__)
// 8 elements -> 8 results, as a float32 vector (float16 widened with F16C).
template <class T> inline __m256 relu8(const T* p, __m256 alpha) {
  __m256 v;
  if constexpr (std::is_same_v<T, float>) {
    v = _mm256_loadu_ps(p);
  } else {
    v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  return _mm256_and_ps(v, _mm256_cmp_ps(v, alpha, _CMP_GT_OQ));
}

template <class T, bool kStream> inline void put8(T* p, __m256 v) {
  if constexpr (std::is_same_v<T, float>) {
    if constexpr (kStream) _mm256_stream_ps(p, v); else _mm256_storeu_ps(p, v);
  } else {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if constexpr (kStream) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(p), h);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
    }
  }
}

template <class T, bool kStream>
int64_t vector_range(const T* px, T* py, int64_t b, int64_t e, __m256 alpha) {
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    const __m256 u = relu8(px + i, alpha), v = relu8(px + i + 8, alpha);
    put8<T, kStream>(py + i, u);
    put8<T, kStream>(py + i + 8, v);
  }
  for (; i + 8 <= e; i += 8) put8<T, kStream>(py + i, relu8(px + i, alpha));
  if constexpr (kStream) _mm_sfence();
  return i;
}
#endif

template <class T>
void thresholded_relu(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  opsdk::Tensor& y = ctx.output(0);
  // Compare in T, as ONNX does: alpha is first rounded to the input's dtype.
  T alpha_t;
  opsdk::from_float(ctx.attr<float>("alpha"), &alpha_t);
  const float alpha = opsdk::to_float(alpha_t);
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  const int64_t n = x.numel();
  [[maybe_unused]] const bool streaming = n * static_cast<int64_t>(sizeof(T)) >= kStreamBytes;
  ctx.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    int64_t i = begin;
#if defined(__AVX__) && defined(__F16C__)
    const __m256 a = _mm256_set1_ps(alpha);
    if (streaming) {
      // Peel up to the first 32-byte aligned output element, then stream.
      const auto addr = reinterpret_cast<uintptr_t>(py + begin);
      const int64_t peel = static_cast<int64_t>(((32 - (addr & 31)) & 31) / sizeof(T));
      if (addr % sizeof(T) == 0 && begin + peel <= end) {
        scalar_range(px, py, begin, begin + peel, alpha);
        i = vector_range<T, true>(px, py, begin + peel, end, a);
      }
    }
    if (!streaming || i == begin) i = vector_range<T, false>(px, py, i, end, a);
#endif
    scalar_range(px, py, i, end, alpha);
  });
}

}  // namespace

REGISTER_CUSTOM_OP("ThresholdedRelu")
    .Input(0, "x", "float32")
    .Output(0, "y", "float32")
    .Attr("alpha", "float")
    .KernelFn(thresholded_relu<float>);

REGISTER_CUSTOM_OP("ThresholdedRelu")
    .Input(0, "x", "float16")
    .Output(0, "y", "float16")
    .Attr("alpha", "float")
    .KernelFn(thresholded_relu<opsdk::half>);
