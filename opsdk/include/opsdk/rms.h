// Row helpers of RMS normalisation kernels (the llm:rms_norm starter, the
// onnx:RMSNormalization operator): the sum of squares of a row, and y = x * rstd * gamma,
// at the target's natural vector width (opsdk_vec::wide) for float, opsdk::half and
// opsdk::bfloat16 rows.
//
//   const double mean_sq = opsdk_rms::sum_squares(x_row, d) / d;
//   const float rstd = 1.0 / std::sqrt(mean_sq + eps);
//   opsdk_rms::scale_row(x_row, y_row, d, rstd, gamma);   // gamma: d floats
//   opsdk_rms::scale_row(x_row, y_row, d, rstd, gamma, true);   // non-temporal stores of y
#pragma once

#include <algorithm>
#include <cstdint>

#include "opsdk/vec.h"

namespace opsdk_rms {

// Elements summed in float32 vector lanes before a flush into a double: long rows keep
// float32 accuracy.
constexpr int64_t kBlock = 1024;

// sum(x[i]^2) over n elements of a row.
template <class T>
double sum_squares(const T* x, int64_t n) {
  using namespace opsdk_vec::wide;
  constexpr int64_t L = kLanes;
  double total = 0.0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    vf a0 = splat(0.0f), a1 = a0;
    int64_t i = b;
    for (; i + 2 * L <= e; i += 2 * L) {
      const vf v0 = load_f(x + i), v1 = load_f(x + i + L);
      a0 = fma(v0, v0, a0);
      a1 = fma(v1, v1, a1);
    }
    if (i + L <= e) {
      const vf v = load_f(x + i);
      a0 = fma(v, v, a0);
      i += L;
    }
    if (i < e) {
      const vf v = load_partial(x + i, e - i);
      a1 = fma(v, v, a1);
    }
    total += static_cast<double>(hsum(a0 + a1));
  }
  return total;
}

// y[i] = x[i] * rstd * gamma[i] over n elements, narrowed to T. With `streaming`, y is
// written with non-temporal stores from its first element aligned to a whole vector on (for
// outputs larger than the cache: no read of y's lines before they are written); the caller
// then ends each task with opsdk_vec::stream_fence().
template <class T>
void scale_row(const T* x, T* y, int64_t n, float rstd, const float* gamma,
               bool streaming = false) {
  using namespace opsdk_vec::wide;
  const vf s = splat(rstd);
  int64_t i = 0;
  if (streaming) {
    constexpr uintptr_t kAlign = kLanes * sizeof(T);
    const uintptr_t miss = (kAlign - reinterpret_cast<uintptr_t>(y) % kAlign) % kAlign;
    const int64_t head = std::min(n, static_cast<int64_t>(miss / sizeof(T)));
    if (head > 0) store_partial(y, load_partial(x, head) * s * load_partial(gamma, head), head);
    for (i = head; i + kLanes <= n; i += kLanes) stream_f(y + i, load_f(x + i) * s * load(gamma + i));
  }
  for (; i + kLanes <= n; i += kLanes) store_f(y + i, load_f(x + i) * s * load(gamma + i));
  if (i < n) {
    const int64_t k = n - i;
    store_partial(y + i, load_partial(x + i, k) * s * load_partial(gamma + i, k), k);
  }
}

}  // namespace opsdk_rms
