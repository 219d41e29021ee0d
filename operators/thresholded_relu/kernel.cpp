// ThresholdedRelu CPU kernel: y = x if x > alpha else 0 (ONNX ThresholdedRelu).
//
// A pure streaming kernel, so its speed is memory bandwidth: one compare and one masked
// move per vector of <opsdk/vec.h>'s natural width (16 floats on AVX-512, 8 on AVX2, SSE
// and NEON), float16 widened and narrowed a vector at a time (F16C), the ragged tail with
// masked loads and stores on AVX-512, every thread busy on large tensors, and outputs of
// 16 MiB or more written with streaming (non-temporal) stores, which skip reading each
// output cache line before overwriting it. NaN > alpha is false, so NaN gives 0, as in
// ONNX's formula.
#include <opsdk/custom_op.h>

#include <cstdint>

#include <opsdk/vec.h>

namespace {

namespace w = opsdk_vec::wide;

constexpr int64_t kGrain = 1 << 14;  // elements per task (~2 us in cache)

template <class T>
void thresholded_relu(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  opsdk::Tensor& y = ctx.output(0);
  // Compare in T, as ONNX does: alpha is first rounded to the input's dtype.
  T alpha_t;
  opsdk::from_float(ctx.attr<float>("alpha"), &alpha_t);
  const w::vf alpha = w::splat(opsdk::to_float(alpha_t));
  const w::vf zero = w::splat(0.0f);
  const T* px = x.data<T>();
  T* py = y.mutable_data<T>();
  const int64_t n = x.numel();
  const bool streaming = n * static_cast<int64_t>(sizeof(T)) >= w::kStreamBytes;
  ctx.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    w::map(px + begin, py + begin, end - begin,
           [alpha, zero](w::vf v) { return w::select(w::gt(v, alpha), v, zero); }, streaming);
  });
}

}  // namespace

REGISTER_CUSTOM_OP("ThresholdedRelu").Kernels<float, opsdk::half>(OPSDK_KERNEL_TEMPLATE(thresholded_relu));
