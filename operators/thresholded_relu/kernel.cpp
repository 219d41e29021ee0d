// ThresholdedRelu CPU kernel: y = x if x > alpha else 0.
#include <opsdk/custom_op.h>

namespace {

constexpr int64_t kGrain = 1 << 15;  // elements per task: tiny tensors stay single-threaded

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
  ctx.parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      for (int64_t i = begin; i < end; ++i) py[i] = px[i] > alpha ? px[i] : 0.0f;
    } else {
      // float16: widen blocks to float32 (F16C), compare, narrow back.
      constexpr int64_t B = 256;
      float buf[B];
      for (int64_t b = begin; b < end; b += B) {
        const int64_t n = std::min(B, end - b);
        for (int64_t i = 0; i < n; ++i) buf[i] = opsdk::to_float(px[b + i]);
        for (int64_t i = 0; i < n; ++i) buf[i] = buf[i] > alpha ? buf[i] : 0.0f;
        for (int64_t i = 0; i < n; ++i) opsdk::from_float(buf[i], &py[b + i]);
      }
    }
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
