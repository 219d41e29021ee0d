// Tests of the Python-free invocation core (opsdk/invoke.h, csrc/runtime.cpp), built by
// tests/package/test_cross_aarch64.py with the host compiler (and the aarch64 cross compiler).
// Prints one line per failed check and exits non-zero if any failed.
#include <opsdk/invoke.h>

#include <cstdio>
#include <string>
#include <vector>

using opsdk::DType;
using opsdk::RawTensor;

// y = scale * a + (b ? b : 0) + bias, elementwise over contiguous views.
REGISTER_CUSTOM_OP("AddScaled")
    .Input(0, "a", "float32")
    .OptionalInput(1, "b", "float32")
    .Output(0, "y", "float32")
    .Attr("scale", "float", 2.0)
    .Attr("bias", "int", 0)
    .Attr("fail", "bool", false)
    .KernelFn([](const CustomOpKernelContext& ctx) {
      if (ctx.attr<bool>("fail")) throw std::runtime_error("asked to fail");
      const auto& a = ctx.input(0);
      const float* pa = a.data<float>();
      const float* pb = ctx.has_input(1) ? ctx.input(1).data<float>() : nullptr;
      float* py = ctx.output(0).mutable_data<float>();
      const float s = ctx.attr<float>("scale");
      const auto bias = ctx.attr<int64_t>("bias");
      ctx.parallel_for(a.numel(), 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = s * pa[i] + (pb ? pb[i] : 0.f) + float(bias);
      });
    });

REGISTER_CUSTOM_OP("AddScaled")
    .Input(0, "a", "float16")
    .OptionalInput(1, "b", "float16")
    .Output(0, "y", "float16")
    .Attr("scale", "float", 2.0)
    .Attr("bias", "int", 0)
    .Attr("fail", "bool", false)
    .KernelFn([](const CustomOpKernelContext&) {});

REGISTER_CUSTOM_OP("NeedsAttr")
    .Input(0, "x", "int32")
    .Output(0, "y", "int32")
    .Attr("k", "int")
    .KernelFn([](const CustomOpKernelContext&) {});

// The short form: dtype columns only, names and attributes from the spec, declared here
// ahead of the kernels (opsdk writes this declaration from spec.py).
static const opsdk::SpecRegistration twice_spec({"Twice", {"T"}, {{"x", "T", false}},
                                                 {{"y", "T", false}},
                                                 {{"factor", "float", true, 2.0}}});

template <class T> void twice(const CustomOpKernelContext& ctx) {
  const T* px = ctx.input(0).data<T>();
  T* py = ctx.output(0).mutable_data<T>();
  const T f = static_cast<T>(ctx.attr<double>("factor"));
  for (int64_t i = 0; i < ctx.input(0).numel(); ++i) py[i] = f * px[i];
}

REGISTER_CUSTOM_OP("Twice").Kernels<float, double>(OPSDK_KERNEL_TEMPLATE(twice));
REGISTER_CUSTOM_OP("Undeclared").Kernels<float>([](const CustomOpKernelContext&, auto) {});

static int failures = 0;
static int checks = 0;

static void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAILED: %s\n", what.c_str());
  }
}

template <class F> static void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    expect(false, "no error, expected one containing: " + needle);
  } catch (const opsdk::OpError& e) {
    expect(std::string(e.what()).find(needle) != std::string::npos,
           "error '" + std::string(e.what()) + "' lacks '" + needle + "'");
  }
}

static RawTensor f32(std::vector<float>& v, std::vector<int64_t> shape,
                     std::vector<int64_t> strides = {}) {
  return RawTensor{v.data(), DType::Float32, std::move(shape), std::move(strides)};
}

int main() {
  std::vector<float> a = {1, 2, 3, 4}, b = {10, 20, 30, 40}, y(4);
  // Defaults, an explicit attribute, an int given for a float attribute.
  opsdk::invoke("AddScaled", {f32(a, {4})}, {f32(y, {4})}, {});
  expect(y == std::vector<float>({2, 4, 6, 8}), "registered defaults (scale 2, bias 0)");
  opsdk::invoke("AddScaled", {f32(a, {2, 2}), f32(b, {2, 2})}, {f32(y, {2, 2})},
                {{"scale", int64_t{3}}, {"bias", int64_t{1}}});
  expect(y == std::vector<float>({14, 27, 40, 53}), "optional input given, int for float");
  RawTensor absent;
  absent.present = false;
  opsdk::invoke("AddScaled", {f32(a, {4}), absent}, {f32(y, {4})}, {{"scale", 1.0}});
  expect(y == std::vector<float>({1, 2, 3, 4}), "optional input marked absent");

  // Strided input (every other element) and strided output (every third): gathered into
  // and scattered back from contiguous buffers, since the kernel is not AcceptsStrided.
  std::vector<float> wide = {1, -1, 2, -1, 3, -1}, out(9, -7.f);
  opsdk::invoke("AddScaled", {f32(wide, {3}, {2})}, {f32(out, {3}, {3})}, {{"scale", 1.0}});
  expect(out == std::vector<float>({1, -7, -7, 2, -7, -7, 3, -7, -7}), "strided in and out");
  std::vector<float> m = {1, 2, 3, 4, 5, 6}, t(6);  // a 2x3 read as its 3x2 transpose
  opsdk::invoke("AddScaled", {f32(m, {3, 2}, {1, 3})}, {f32(t, {3, 2})}, {{"scale", 1.0}});
  expect(t == std::vector<float>({1, 4, 2, 5, 3, 6}), "transposed input");

  // Issue 23 item 10: an output one element past its input in one buffer (y = buf[1:],
  // a = buf[:-1]) is computed apart and copied back: NumPy's result, not a cascade.
  std::vector<float> buf(1001);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i % 7);
  std::vector<float> want(buf.begin(), buf.end() - 1);
  for (auto& v : want) v += 1;
  opsdk::invoke("AddScaled", {RawTensor{buf.data(), DType::Float32, {1000}}},
                {RawTensor{buf.data() + 1, DType::Float32, {1000}}},
                {{"scale", 1.0}, {"bias", int64_t{1}}});
  expect(std::vector<float>(buf.begin() + 1, buf.end()) == want, "output overlapping its input");

  std::vector<double> d(4);
  RawTensor f64{d.data(), DType::Float64, {4}};
  expect_error([&] { opsdk::invoke("Nope", {f32(a, {4})}, {f32(y, {4})}, {}); },
               "Nope: no such operator is registered in this library (registered: AddScaled");
  expect_error([&] { opsdk::invoke("AddScaled", {f64}, {f32(y, {4})}, {}); },
               "AddScaled: input 'a' has dtype float64, expected float32 or float16");
  expect_error([&] { opsdk::invoke("AddScaled", {f32(a, {4})}, {f64}, {}); },
               "AddScaled: output 'y' has dtype float64, expected float32 or float16");
  expect_error([&] { opsdk::invoke("AddScaled", {f32(a, {4}), f32(b, {4}), f32(b, {4})},
                                   {f32(y, {4})}, {}); },
               "AddScaled: 3 inputs given, the operator declares 2");
  expect_error([&] { opsdk::invoke("AddScaled", {f32(a, {4})}, {}, {}); },
               "AddScaled: 0 outputs given, expected 1");
  expect_error([&] { opsdk::invoke("AddScaled", {absent}, {f32(y, {4})}, {}); },
               "AddScaled: required input 'a' (index 0) was not given");
  expect_error([&] { opsdk::invoke("AddScaled", {f32(a, {4})}, {f32(y, {4})}, {{"scal", 1.0}}); },
               "AddScaled: unknown attribute 'scal'; declared: scale, bias, fail");
  expect_error([&] { opsdk::invoke("AddScaled", {f32(a, {4})}, {f32(y, {4})},
                                   {{"scale", std::string("big")}}); },
               "AddScaled: attribute 'scale' is declared float (REGISTER_CUSTOM_OP .Attr), "
               "got a value of type string");
  expect_error([&] { opsdk::invoke("AddScaled", {f32(a, {4})}, {f32(y, {4})}, {{"fail", true}}); },
               "AddScaled: asked to fail");
  expect_error([&] { opsdk::invoke("AddScaled", {RawTensor{nullptr, DType::Float32, {4}}},
                                   {f32(y, {4})}, {}); },
               "AddScaled: input 'a' of shape (4,) has no data (null pointer)");
  expect_error([&] { opsdk::invoke("AddScaled", {f32(a, {2, 2}, {2})}, {f32(y, {4})}, {}); },
               "AddScaled: input 'a' has 2 dims but 1 strides");
  std::vector<int32_t> xi(2), yi(2);
  expect_error([&] { opsdk::invoke("NeedsAttr", {RawTensor{xi.data(), DType::Int32, {2}}},
                                   {RawTensor{yi.data(), DType::Int32, {2}}}, {}); },
               "NeedsAttr: required attribute 'k' (int) was not given and has no registered "
               "default");
  // Kernels<float, double>: one registration per column, declared from the spec.
  std::vector<float> yt(4);
  opsdk::invoke("Twice", {f32(a, {4})}, {f32(yt, {4})}, {});
  expect(yt == std::vector<float>({2, 4, 6, 8}), "short form: the spec's default factor");
  std::vector<double> xd = {1, 2}, yd(2);
  opsdk::invoke("Twice", {RawTensor{xd.data(), DType::Float64, {2}}},
                {RawTensor{yd.data(), DType::Float64, {2}}}, {{"factor", 3.0}});
  expect(yd == std::vector<double>({3, 6}), "short form: the float64 column");
  expect_error([&] { opsdk::invoke("Twice", {RawTensor{xi.data(), DType::Int32, {2}}},
                                   {f32(y, {2})}, {}); },
               "Twice: input 'x' has dtype int32, expected float32 or float64");
  expect_error([&] { opsdk::invoke("Undeclared", {f32(a, {4})}, {f32(y, {4})}, {}); },
               "Undeclared: the kernels registered with Kernels<...> have no declared spec");
  expect_error([&] { opsdk::declare_spec({"Undeclared", {"T", "T2"}, {}, {}, {}}); },
               "Undeclared: a Kernels<...> column names 1 type(s) (float32) but spec.py has 2 "
               "type variable(s) (T, T2)");
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
