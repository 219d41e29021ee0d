// opsdk custom operator API.
//
// A kernel registers its dtype columns in one line; input and output names, optionality
// and attributes come from spec.py when opsdk loads the module:
//
//   template <class T> void threshold(const opsdk::CustomOpKernelContext& ctx) {
//     const auto& x = ctx.input(0);
//     auto& y = ctx.output(0);
//     const float t = ctx.attr<float>("threshold");
//     const T* px = x.data<T>();
//     T* py = y.mutable_data<T>();
//     ctx.parallel_for(x.numel(), 1 << 14, [&](int64_t b, int64_t e) {
//       for (int64_t i = b; i < e; ++i) py[i] = opsdk::to_float(px[i]) > t ? px[i] : T{};
//     });
//   }
//   REGISTER_CUSTOM_OP("MyOp").Kernels<opsdk::half, float>(OPSDK_KERNEL_TEMPLATE(threshold));
//
// A column is one C++ type per type variable of the spec (in the order the inputs first
// use them): `float` for a spec with one, `opsdk::Types<float, opsdk::half>` for two. The
// kernel is a function template (through OPSDK_KERNEL_TEMPLATE) or a generic lambda taking
// the context and one opsdk::type_tag per type variable:
//
//   .Kernels<float, opsdk::half>([](const opsdk::CustomOpKernelContext& ctx, auto t) {
//     using T = typename decltype(t)::type;  ...
//   });
//
// The long form spells one registration per dtype out; opsdk checks it against spec.py:
//
//   REGISTER_CUSTOM_OP("MyOp")
//       .Input(0, "x", "float32")
//       .Output(0, "y", "float32")
//       .Attr("threshold", "float")
//       .KernelFn(threshold<float>);
//
// Programs that call kernels without Python (opsdk::invoke) declare the spec once with
// opsdk::declare_spec; opsdk writes that declaration for the AI CPU adapter and the
// cross-build harness.
//
// This header has no Python or pybind11 dependency, so kernels compile in about a second.
// Outputs are allocated by opsdk from the spec's shape inference (destination passing).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

// float16 conversions use the compiler's half type where it has one: _Float16 on x86-64
// (F16C instructions under -mf16c / -march=native), the ACLE __fp16 on AArch64 (FCVT; an
// IEEE half there), and portable bit manipulation elsewhere.
#if defined(__aarch64__)
#define OPSDK_HAVE_FLOAT16 1
#define OPSDK_FLOAT16_TYPE __fp16
#elif defined(__FLT16_MAX__) && defined(__x86_64__)
#define OPSDK_HAVE_FLOAT16 1
#define OPSDK_FLOAT16_TYPE _Float16
#endif

namespace opsdk {

// ------------------------------------------------------------------------- dtypes
enum class DType : int {
  Float16, BFloat16, Float32, Float64, Int8, Int16, Int32, Int64, UInt8, Bool, Invalid
};

inline const char* dtype_name(DType d) {
  static const char* names[] = {"float16", "bfloat16", "float32", "float64", "int8",
                                "int16",   "int32",    "int64",   "uint8",   "bool",
                                "invalid"};
  return names[static_cast<int>(d)];
}

inline DType dtype_from_name(const std::string& s) {
  for (int i = 0; i < static_cast<int>(DType::Invalid); ++i) {
    if (s == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  return DType::Invalid;
}

inline size_t dtype_size(DType d) {
  static const size_t sizes[] = {2, 2, 4, 8, 1, 2, 4, 8, 1, 1, 0};
  return sizes[static_cast<int>(d)];
}

// IEEE half precision storage with fast conversions (F16C where the CPU has it).
struct half {
  uint16_t bits;
};

// bfloat16 storage: the upper 16 bits of a float32.
struct bfloat16 {
  uint16_t bits;
};

inline float half_to_float(half h) {
#if defined(OPSDK_HAVE_FLOAT16)
  OPSDK_FLOAT16_TYPE v;
  std::memcpy(&v, &h.bits, 2);
  return static_cast<float>(v);
#else
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t man = h.bits & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (man == 0) {
      out = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((man & 0x400u) == 0) { man <<= 1; --exp; }
      man &= 0x3ffu;
      out = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 0x1f) {
    out = sign | 0x7f800000u | (man << 13);
  } else {
    out = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
#endif
}

inline half float_to_half(float f) {
#if defined(OPSDK_HAVE_FLOAT16)
  const OPSDK_FLOAT16_TYPE v = static_cast<OPSDK_FLOAT16_TYPE>(f);
  half h;
  std::memcpy(&h.bits, &v, 2);
  return h;
#else
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // Inf or NaN
    return half{static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u))};
  }
  if (absx >= 0x477ff000u) return half{static_cast<uint16_t>(sign | 0x7c00u)};  // overflow
  if (absx < 0x38800000u) {  // subnormal or zero in half: round via float arithmetic
    float a;
    std::memcpy(&a, &absx, 4);
    const float scaled = a * 16777216.0f;  // 2^24: one half subnormal ulp == 1.0
    const uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return half{static_cast<uint16_t>(sign | m)};
  }
  const uint32_t mant_odd = (absx >> 13) & 1u;
  const uint32_t rounded = absx + 0xfffu + mant_odd;  // round to nearest even
  return half{static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13))};
#endif
}

inline float bf16_to_float(bfloat16 b) {
  const uint32_t x = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline bfloat16 float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return bfloat16{static_cast<uint16_t>((x >> 16) | 0x40u)};
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;  // round to nearest even
  return bfloat16{static_cast<uint16_t>(x >> 16)};
}

// Load/store any supported element type as float (float16 and bfloat16 widen to float).
inline float to_float(half v) { return half_to_float(v); }
inline float to_float(bfloat16 v) { return bf16_to_float(v); }
inline float to_float(float v) { return v; }
template <class T> inline void from_float(float v, T* dst);
template <> inline void from_float<half>(float v, half* dst) { *dst = float_to_half(v); }
template <> inline void from_float<bfloat16>(float v, bfloat16* dst) { *dst = float_to_bf16(v); }
template <> inline void from_float<float>(float v, float* dst) { *dst = v; }

template <class T> struct dtype_of { static constexpr DType value = DType::Invalid; };
template <> struct dtype_of<half> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };

// ------------------------------------------------------------------------ errors
// Thrown by the context's checks; any std::exception thrown by a kernel reaches Python
// as opsdk.errors.KernelError naming the operator. The process never aborts. The messages
// do not repeat the operator's name: whoever runs the kernel puts it in front, once.
class OpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
inline void append(std::string& s, const std::string& v) { s += v; }
inline void append(std::string& s, const char* v) { s += v; }
inline void append(std::string& s, char v) { s += v; }
inline void append(std::string& s, bool v) { s += v ? "true" : "false"; }
template <class T>
inline std::enable_if_t<std::is_arithmetic_v<T>> append(std::string& s, T v) {
  s += std::to_string(v);
}
// Build a message from strings and numbers: cat("dim ", 3, " of ", name).
template <class... A> std::string cat(const A&... a) {
  std::string s;
  (append(s, a), ...);
  return s;
}
inline std::string shape_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() == 1) s += ",";
  return s + ")";
}
}  // namespace detail

// ------------------------------------------------------------------------ tensors
// A typed, bounds-checked view of one input or output. Strides are in elements.
class Tensor {
 public:
  Tensor() = default;
  Tensor(void* data, DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides,
         std::string name, bool writable)
      : data_(data), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)),
        name_(std::move(name)), writable_(writable) {}

  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t size(int64_t dim) const { return shape_.at(static_cast<size_t>(norm_dim(dim))); }
  int64_t stride(int64_t dim) const { return strides_.at(static_cast<size_t>(norm_dim(dim))); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape_) n *= d;
    return n;
  }
  bool is_contiguous() const {
    int64_t expect = 1;
    for (int64_t i = ndim() - 1; i >= 0; --i) {
      if (shape_[static_cast<size_t>(i)] != 1 && strides_[static_cast<size_t>(i)] != expect)
        return false;
      expect *= shape_[static_cast<size_t>(i)];
    }
    return true;
  }
  int64_t norm_dim(int64_t dim) const {
    const int64_t r = ndim();
    const int64_t d = dim < 0 ? dim + r : dim;
    if (d < 0 || d >= r)
      throw OpError(detail::cat("tensor '", name_, "': dim ", dim, " out of range for rank ", r));
    return d;
  }

  template <class T> const T* data() const {
    check_type<T>();
    return static_cast<const T*>(data_);
  }
  template <class T> T* mutable_data() const {
    check_type<T>();
    if (!writable_)
      throw OpError(detail::cat("tensor '", name_, "' is an input and is read-only"));
    return static_cast<T*>(data_);
  }
  const void* raw() const { return data_; }

  // Bounds-checked element access by multi-index (slow path, for tests and edge code).
  template <class T> const T& at(std::initializer_list<int64_t> index) const {
    return data<T>()[offset(index)];
  }
  template <class T> T& at_mut(std::initializer_list<int64_t> index) const {
    return mutable_data<T>()[offset(index)];
  }
  int64_t offset(std::initializer_list<int64_t> index) const {
    if (static_cast<int64_t>(index.size()) != ndim())
      throw OpError(detail::cat("tensor '", name_, "': index of rank ", index.size(),
                                " for a tensor of rank ", ndim()));
    int64_t off = 0;
    size_t k = 0;
    for (int64_t i : index) {
      if (i < 0 || i >= shape_[k])
        throw OpError(detail::cat("tensor '", name_, "': index ", i, " out of range for dim ", k,
                                  " of size ", shape_[k], " (shape ", detail::shape_str(shape_),
                                  ")"));
      off += i * strides_[k];
      ++k;
    }
    return off;
  }

 private:
  template <class T> void check_type() const {
    if (dtype_of<std::remove_cv_t<T>>::value != dtype_)
      throw OpError(detail::cat("tensor '", name_, "' has dtype ", dtype_name(dtype_),
                                ", accessed as ", dtype_name(dtype_of<std::remove_cv_t<T>>::value)));
  }
  void* data_ = nullptr;
  DType dtype_ = DType::Invalid;
  std::vector<int64_t> shape_, strides_;
  std::string name_;
  bool writable_ = false;
};

// --------------------------------------------------------------------- attributes
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
                               std::vector<double>>;

inline const char* attr_value_type(const AttrValue& v) {
  static const char* names[] = {"int", "float", "bool", "string", "ints", "floats"};
  return names[v.index()];
}

// --------------------------------------------------------------------- threading
// The thread pool lives in opsdk's runtime (csrc/runtime.cpp, linked next to every kernel),
// so kernels compile without <thread>/<mutex>.
namespace detail {
using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);
// Runs fn(ctx, begin, end) over [0, n) in ranges of at least `grain` on the pool.
void parallel_run(int64_t n, int64_t grain, RangeFn fn, void* ctx);
}  // namespace detail

// The number of threads kernels may use (default: all cores, or $OPSDK_NUM_THREADS).
int& num_threads_setting();

// Run f(begin, end) over [0, n) on up to num_threads threads. Ranges are at least `grain`
// long, so tiny tensors run on the calling thread with no overhead. An exception thrown
// by f on any thread reaches the caller.
template <class F> void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  if (n <= grain) {
    f(int64_t{0}, n);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  detail::parallel_run(
      n, grain, [](void* c, int64_t b, int64_t e) { (*static_cast<Fn*>(c))(b, e); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

// ------------------------------------------------------------------------ context
class CustomOpKernelContext {
 public:
  CustomOpKernelContext(std::string op, std::vector<Tensor> inputs, std::vector<bool> present,
                        std::vector<Tensor> outputs, const std::vector<std::string>* attr_names,
                        std::vector<AttrValue> attr_values)
      : op_(std::move(op)), inputs_(std::move(inputs)), present_(std::move(present)),
        outputs_(std::move(outputs)), attr_names_(attr_names),
        attr_values_(std::move(attr_values)) {}

  const std::string& op_name() const { return op_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  // False for an optional input the caller did not pass.
  bool has_input(size_t i) const { return i < present_.size() && present_[i]; }

  const Tensor& input(size_t i) const {
    if (i >= inputs_.size())
      throw OpError(detail::cat("input index ", i, " out of range (", inputs_.size(),
                                " inputs)"));
    if (!present_[i])
      throw OpError(detail::cat("optional input '", inputs_[i].name(),
                                "' was not given; check ctx.has_input(", i, ") first"));
    return inputs_[i];
  }
  Tensor& output(size_t i) const {
    if (i >= outputs_.size())
      throw OpError(detail::cat("output index ", i, " out of range (", outputs_.size(),
                                " outputs)"));
    return outputs_[i];
  }

  bool has_attr(const std::string& name) const { return find(name) != nullptr; }

  // Typed attribute access: int -> any integral, float -> float/double, bool, std::string,
  // ints -> std::vector<int64_t>, floats -> std::vector<double>.
  template <class T> T attr(const std::string& name) const {
    const AttrValue* v = find(name);
    if (!v) throw OpError(detail::cat("attribute '", name, "' is not declared"));
    return convert<T>(name, *v);
  }
  template <class T> T attr(const std::string& name, T default_value) const {
    const AttrValue* v = find(name);
    return v ? convert<T>(name, *v) : default_value;
  }

  int num_threads() const { return std::max(1, num_threads_setting()); }
  template <class F> void parallel_for(int64_t n, int64_t grain, F&& f) const {
    opsdk::parallel_for(n, grain, std::forward<F>(f));
  }

 private:
  const AttrValue* find(const std::string& name) const {
    for (size_t i = 0; i < attr_values_.size(); ++i)
      if ((*attr_names_)[i] == name) return &attr_values_[i];
    return nullptr;
  }
  template <class T> T convert(const std::string& name, const AttrValue& v) const {
    if constexpr (std::is_same_v<T, bool>) {
      if (auto p = std::get_if<bool>(&v)) return *p;
    } else if constexpr (std::is_integral_v<T>) {
      if (auto p = std::get_if<int64_t>(&v)) return static_cast<T>(*p);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (auto p = std::get_if<double>(&v)) return static_cast<T>(*p);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (auto p = std::get_if<std::string>(&v)) return *p;
    } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
      if (auto p = std::get_if<std::vector<int64_t>>(&v)) return *p;
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      if (auto p = std::get_if<std::vector<double>>(&v)) return *p;
    } else if constexpr (std::is_same_v<T, std::vector<float>>) {
      if (auto p = std::get_if<std::vector<double>>(&v)) return T(p->begin(), p->end());
    }
    throw OpError(detail::cat("attribute '", name, "' is of type ", attr_value_type(v),
                              " and cannot be read as the requested C++ type"));
  }

  std::string op_;
  std::vector<Tensor> inputs_;
  std::vector<bool> present_;
  mutable std::vector<Tensor> outputs_;
  const std::vector<std::string>* attr_names_;  // owned by the caller, outlives the call
  std::vector<AttrValue> attr_values_;
};

// ------------------------------------------------------------------- registration
// A kernel: any callable taking the context (a function, or a lambda with or without
// captures), stored type-erased without <functional>.
class KernelFunc {
 public:
  KernelFunc() = default;
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, KernelFunc>>>
  KernelFunc(F&& f)  // NOLINT(google-explicit-constructor): REGISTER_...KernelFn(f)
      : obj_(new std::decay_t<F>(std::forward<F>(f)),
             [](void* p) { delete static_cast<std::decay_t<F>*>(p); }),
        call_([](void* p, const CustomOpKernelContext& c) {
          (*static_cast<std::decay_t<F>*>(p))(c);
        }) {}
  void operator()(const CustomOpKernelContext& c) const { call_(obj_.get(), c); }
  explicit operator bool() const { return call_ != nullptr; }

 private:
  std::shared_ptr<void> obj_;
  void (*call_)(void*, const CustomOpKernelContext&) = nullptr;
};

// The C++ types of one dtype column of Kernels<...>, one per type variable of the spec.
template <class... Ts> struct Types {};
// Handed to a generic kernel for each type variable: typename decltype(tag)::type.
template <class T> struct type_tag {
  using type = T;
};

namespace detail {
template <class C> struct column {
  using types = Types<C>;
};
template <class... Ts> struct column<Types<Ts...>> {
  using types = Types<Ts...>;
};
}  // namespace detail

struct ArgDecl {
  int index;
  std::string name;
  std::string dtype;
  bool optional;
};

struct AttrDecl {
  std::string name;
  std::string type;
  bool has_default;
  AttrValue default_value;
};

class OpRegistration {
 public:
  explicit OpRegistration(std::string name) : name_(std::move(name)) {}

  OpRegistration& Input(int index, const std::string& name, const std::string& dtype) {
    inputs_.push_back({index, name, dtype, false});
    return *this;
  }
  OpRegistration& OptionalInput(int index, const std::string& name, const std::string& dtype) {
    inputs_.push_back({index, name, dtype, true});
    return *this;
  }
  OpRegistration& Output(int index, const std::string& name, const std::string& dtype) {
    outputs_.push_back({index, name, dtype, false});
    return *this;
  }
  OpRegistration& Attr(const std::string& name, const std::string& type) {
    attrs_.push_back({name, type, false, AttrValue{}});
    return *this;
  }
  template <class T>
  OpRegistration& Attr(const std::string& name, const std::string& type, T default_value) {
    AttrValue v;
    if constexpr (std::is_same_v<T, bool>) v = default_value;
    else if constexpr (std::is_integral_v<T>) v = static_cast<int64_t>(default_value);
    else if constexpr (std::is_floating_point_v<T>) v = static_cast<double>(default_value);
    else if constexpr (std::is_convertible_v<T, std::string>) v = std::string(default_value);
    else v = default_value;
    attrs_.push_back({name, type, true, v});
    return *this;
  }
  // The kernel handles non-contiguous inputs itself (reads strides); otherwise opsdk
  // hands it contiguous inputs.
  OpRegistration& AcceptsStrided(bool yes = true) {
    strided_ = yes;
    return *this;
  }
  OpRegistration& KernelFn(KernelFunc fn) {
    fn_ = std::move(fn);
    return *this;
  }
  // One kernel per dtype column, names and attributes from the spec (see the top of this
  // file). Call it last: the columns become registrations of their own when the spec is
  // declared (opsdk::declare_spec), each with this one's AcceptsStrided.
  template <class... Columns, class F> OpRegistration& Kernels(F fn) {
    static_assert(sizeof...(Columns) > 0, "Kernels<...>: name at least one dtype column");
    (add_column(typename detail::column<Columns>::types{}, fn), ...);
    return *this;
  }

  // A registration made by Kernels<...> whose spec has not been declared yet.
  struct Column {
    std::vector<std::string> dtypes;  // one per type variable
    KernelFunc fn;
  };
  const std::vector<Column>& pending_columns() const { return columns_; }
  // Declares this registration from the spec (used by declare_spec).
  void declare(std::vector<ArgDecl> inputs, std::vector<ArgDecl> outputs,
               std::vector<AttrDecl> attrs, KernelFunc fn) {
    inputs_ = std::move(inputs);
    outputs_ = std::move(outputs);
    attrs_ = std::move(attrs);
    fn_ = std::move(fn);
    columns_.clear();
  }

  const std::string& name() const { return name_; }
  const std::vector<ArgDecl>& inputs() const { return inputs_; }
  const std::vector<ArgDecl>& outputs() const { return outputs_; }
  const std::vector<AttrDecl>& attrs() const { return attrs_; }
  bool accepts_strided() const { return strided_; }
  const KernelFunc& kernel() const { return fn_; }

 private:
  template <class... Ts, class F> void add_column(Types<Ts...>, const F& fn) {
    static_assert(((dtype_of<Ts>::value != DType::Invalid) && ...),
                  "Kernels<...>: a column type is not an opsdk dtype (opsdk::half, "
                  "opsdk::bfloat16, float, double, int8_t ... int64_t, uint8_t, bool)");
    columns_.push_back({{dtype_name(dtype_of<Ts>::value)...},
                        KernelFunc([fn](const CustomOpKernelContext& ctx) {
                          fn(ctx, type_tag<Ts>{}...);
                        })});
  }

  std::string name_;
  std::vector<ArgDecl> inputs_, outputs_;
  std::vector<AttrDecl> attrs_;
  bool strided_ = false;
  KernelFunc fn_;
  std::vector<Column> columns_;
};

inline std::vector<std::unique_ptr<OpRegistration>>& registry() {
  static std::vector<std::unique_ptr<OpRegistration>> regs;
  return regs;
}

inline OpRegistration& register_op(const char* name) {
  registry().push_back(std::make_unique<OpRegistration>(name));
  return *registry().back();
}

// One argument as spec.py declares it: `type` is a type variable of the spec (bound by
// each dtype column) or a dtype name.
struct SpecArg {
  std::string name;
  std::string type;
  bool optional = false;
};

// What spec.py says about an operator, for the registrations made by Kernels<...>.
struct SpecDecl {
  std::string op;
  std::vector<std::string> type_vars;  // in the order a column binds them
  std::vector<SpecArg> inputs, outputs;
  std::vector<AttrDecl> attrs;
};

// Gives every Kernels<...> registration of `spec.op` its inputs, outputs and attributes:
// each dtype column becomes a registration of its own. Idempotent; throws OpError when a
// column does not bind exactly the spec's type variables. Returns the number of
// registrations declared.
inline size_t declare_spec(const SpecDecl& spec) {
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  auto args = [&spec](const std::vector<SpecArg>& v, const std::vector<std::string>& column) {
    std::vector<ArgDecl> out;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string dtype = v[i].type;
      for (size_t k = 0; k < spec.type_vars.size(); ++k)
        if (spec.type_vars[k] == dtype) dtype = column[k];
      out.push_back({static_cast<int>(i), v[i].name, dtype, v[i].optional});
    }
    return out;
  };
  size_t declared = 0;
  const size_t n = registry().size();
  for (size_t r = 0; r < n; ++r) {
    OpRegistration& reg = *registry()[r];
    if (reg.name() != spec.op || reg.pending_columns().empty()) continue;
    const std::vector<OpRegistration::Column> columns = reg.pending_columns();
    for (const auto& c : columns)
      if (c.dtypes.size() != spec.type_vars.size())
        throw OpError(detail::cat(spec.op, ": a Kernels<...> column names ", c.dtypes.size(),
                                  " type(s) (", join(c.dtypes), ") but spec.py has ",
                                  spec.type_vars.size(), " type variable(s) (",
                                  join(spec.type_vars), "); use opsdk::Types<...> with one "
                                  "C++ type per type variable"));
    for (size_t c = 0; c < columns.size(); ++c) {
      OpRegistration& target = c == 0 ? reg : register_op(spec.op.c_str());
      target.AcceptsStrided(reg.accepts_strided());
      target.declare(args(spec.inputs, columns[c].dtypes), args(spec.outputs, columns[c].dtypes),
                     spec.attrs, columns[c].fn);
      ++declared;
    }
  }
  return declared;
}

// Specs declared ahead of their kernels (a static SpecRegistration may run before or
// after the kernel's REGISTER_CUSTOM_OP): opsdk::invoke applies them on its first call.
inline std::vector<SpecDecl>& declared_specs() {
  static std::vector<SpecDecl> specs;
  return specs;
}

// `static const opsdk::SpecRegistration spec({...});` -- what opsdk writes from spec.py
// into programs that call kernels without Python (the AI CPU adapter, the harness).
struct SpecRegistration {
  explicit SpecRegistration(SpecDecl d) { declared_specs().push_back(std::move(d)); }
};

namespace detail {
// Declares the pending Kernels<...> registrations whose spec was registered. The caller
// serialises calls (opsdk::invoke holds a lock).
inline void apply_declared_specs() {
  for (const auto& s : declared_specs()) declare_spec(s);  // appends to registry()
}
}  // namespace detail

}  // namespace opsdk

// A function template as the kernel of Kernels<...>: fn<T...>(ctx) for each dtype column.
#define OPSDK_KERNEL_TEMPLATE(fn)                                            \
  [](const ::opsdk::CustomOpKernelContext& opsdk_ctx, auto... opsdk_types) { \
    fn<typename decltype(opsdk_types)::type...>(opsdk_ctx);                  \
  }

#define OPSDK_CONCAT_INNER(a, b) a##b
#define OPSDK_CONCAT(a, b) OPSDK_CONCAT_INNER(a, b)
#define REGISTER_CUSTOM_OP(name)                                                        \
  [[maybe_unused]] static ::opsdk::OpRegistration& OPSDK_CONCAT(opsdk_registration_, \
                                                                __COUNTER__) =          \
      ::opsdk::register_op(name)

using opsdk::CustomOpKernelContext;
