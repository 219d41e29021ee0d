// VecProbe: one <opsdk/vec.h> function over the input, so its tests can check the
// natural-width API (opsdk_vec::wide) and the 8-lane one against float64.
#include <opsdk/custom_op.h>

#include <string>

#include <opsdk/vec.h>

namespace {

template <class T>
void vec_probe(const CustomOpKernelContext& ctx) {
  namespace w = opsdk_vec::wide;
  const std::string fn = ctx.attr<std::string>("fn");
  const T* x = ctx.input(0).data<T>();
  T* y = ctx.output(0).mutable_data<T>();
  const int64_t n = ctx.input(0).numel();
  if (fn == "copy" || fn == "copy_stream") {
    w::map(x, y, n, [](w::vf v) { return v; }, fn == "copy_stream");
  } else if (fn == "exp") {
    w::map(x, y, n, [](w::vf v) { return w::exp_nonpositive(v); });
  } else if (fn == "recip") {
    w::map(x, y, n, [](w::vf v) { return w::recip(v); });
  } else if (fn == "exp8" || fn == "recip8") {
    const bool exp = fn == "exp8";
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const opsdk_vec::f8 v = opsdk_vec::load_f(x + i);
      opsdk_vec::store_f(y + i, exp ? opsdk_vec::exp_nonpositive(v) : opsdk_vec::recip(v));
    }
    if (i < n) {
      const opsdk_vec::f8 v = opsdk_vec::load_partial(x + i, n - i);
      opsdk_vec::store_partial(y + i, exp ? opsdk_vec::exp_nonpositive(v) : opsdk_vec::recip(v),
                               n - i);
    }
  } else if (fn == "lanes") {
    for (int64_t i = 0; i < n; ++i) opsdk::from_float(static_cast<float>(w::kLanes), &y[i]);
  } else {
    throw opsdk::OpError("attribute 'fn' is '" + fn + "', expected copy, copy_stream, exp, " +
                         "exp8, recip, recip8 or lanes");
  }
}

}  // namespace

REGISTER_CUSTOM_OP("VecProbe")
    .Input(0, "x", "float32")
    .Output(0, "y", "float32")
    .Attr("fn", "string")
    .KernelFn(vec_probe<float>);

REGISTER_CUSTOM_OP("VecProbe")
    .Input(0, "x", "float16")
    .Output(0, "y", "float16")
    .Attr("fn", "string")
    .KernelFn(vec_probe<opsdk::half>);

REGISTER_CUSTOM_OP("VecProbe")
    .Input(0, "x", "bfloat16")
    .Output(0, "y", "bfloat16")
    .Attr("fn", "string")
    .KernelFn(vec_probe<opsdk::bfloat16>);
