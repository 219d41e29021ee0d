// Probe: reports what the kernel received, or fails on purpose, to test the C++ API.
#include <opsdk/custom_op.h>

#include <stdexcept>

namespace {

template <class T>
void probe(const CustomOpKernelContext& ctx) {
  const opsdk::Tensor& x = ctx.input(0);
  int64_t* out = ctx.output(0).mutable_data<int64_t>();
  const std::string mode = ctx.attr<std::string>("mode");
  static int thrown = 0;  // how many times mode "throw" ran (read back with mode "thrown")
  if (mode == "throw") {
    ++thrown;
    throw std::runtime_error("boom on purpose");
  }
  if (mode == "thrown") {
    out[0] = thrown;
    return;
  }
  if (mode == "bounds") out[0] = static_cast<int64_t>(x.at<T>({1000000}));
  if (mode == "wrong_type") out[0] = static_cast<int64_t>(x.data<int8_t>()[0]);
  if (mode == "absent") out[0] = ctx.input(1).numel();
  if (mode == "write_input") x.mutable_data<T>()[0] = T(1);
  out[0] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(x.raw()));
  out[1] = x.ndim();
  out[2] = x.ndim() ? x.stride(-1) : 0;
  out[3] = x.numel();
  out[4] = ctx.has_input(1) ? 1 : 0;
  out[5] = ctx.attr<bool>("flag") ? 1 : 0;
  out[6] = ctx.attr<int64_t>("count");
  out[7] = static_cast<int64_t>(ctx.attr<std::vector<int64_t>>("axes").size());
  if (ctx.attr<std::vector<float>>("weights").empty() || ctx.attr<double>("scale") < 0)
    throw opsdk::OpError("unexpected attribute values");
}

}  // namespace

REGISTER_CUSTOM_OP("Probe")
    .Input(0, "x", "float32")
    .OptionalInput(1, "bias", "float32")
    .Output(0, "info", "int64")
    .Attr("mode", "string")
    .Attr("scale", "float")
    .Attr("axes", "ints")
    .Attr("flag", "bool")
    .Attr("count", "int")
    .Attr("weights", "floats")
    .AcceptsStrided()
    .KernelFn(probe<float>);

REGISTER_CUSTOM_OP("Probe")
    .Input(0, "x", "float64")
    .OptionalInput(1, "bias", "float64")
    .Output(0, "info", "int64")
    .Attr("mode", "string")
    .Attr("scale", "float")
    .Attr("axes", "ints")
    .Attr("flag", "bool")
    .Attr("count", "int")
    .Attr("weights", "floats")
    .KernelFn(probe<double>);
