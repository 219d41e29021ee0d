// STREAM-style memory bandwidth kernels for `opsdk bench` (copy, scale, add, triad).
//
// Built and run through opsdk's own machinery (the same compiler flags, thread pool and
// chunking as operator kernels), so the bandwidth the benchmark measures is the one an
// operator kernel can reach. As in STREAM, every loop is plain C++ with ordinary stores,
// compiled at the default -O3 -march=native; bytes are counted as STREAM does (copy and
// scale move 2 arrays, add and triad 3; write-allocate traffic is not counted).
#include <opsdk/custom_op.h>

#include <string>

namespace {

constexpr int64_t kGrain = 1 << 16;

void stream(const CustomOpKernelContext& ctx) {
  const std::string kind = ctx.attr<std::string>("kind");
  const float s = ctx.attr<float>("scalar");
  const float* __restrict a = ctx.input(0).data<float>();
  const float* __restrict b = ctx.has_input(1) ? ctx.input(1).data<float>() : nullptr;
  float* __restrict c = ctx.output(0).mutable_data<float>();
  const int64_t n = ctx.output(0).numel();
  if ((kind == "add" || kind == "triad") && b == nullptr)
    throw opsdk::OpError("Stream: kind '" + kind + "' needs input 'b'");
  ctx.parallel_for(n, kGrain, [&](int64_t lo, int64_t hi) {
    if (kind == "copy") {
#pragma GCC unroll 4
      for (int64_t i = lo; i < hi; ++i) c[i] = a[i];
    } else if (kind == "scale") {
      for (int64_t i = lo; i < hi; ++i) c[i] = s * a[i];
    } else if (kind == "add") {
      for (int64_t i = lo; i < hi; ++i) c[i] = a[i] + b[i];
    } else if (kind == "triad") {
      for (int64_t i = lo; i < hi; ++i) c[i] = a[i] + s * b[i];
    } else {
      throw opsdk::OpError("Stream: unknown kind '" + kind + "' (copy, scale, add, triad)");
    }
  });
}

}  // namespace

REGISTER_CUSTOM_OP("Stream")
    .Input(0, "a", "float32")
    .OptionalInput(1, "b", "float32")
    .Output(0, "c", "float32")
    .Attr("kind", "string")
    .Attr("scalar", "float")
    .KernelFn(stream);
