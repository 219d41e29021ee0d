// The Python-free part of opsdk's C++ runtime, linked next to every operator's kernel:
// the thread pool behind ctx.parallel_for, the thread-count setting, and the invocation
// core (opsdk/invoke.h) that finds a registration by name and dtypes and runs its kernel.
// The pybind11 entry point (entry.cpp), the AI CPU adapter and the cross-build harness all
// use this one file.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "opsdk/invoke.h"

namespace opsdk {

int& num_threads_setting() {
  static int n = [] {
    if (const char* env = std::getenv("OPSDK_NUM_THREADS")) {
      const int v = std::atoi(env);
      if (v > 0) return v;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw ? static_cast<int>(hw) : 1;
  }();
  return n;
}

// ---------------------------------------------------------------------- thread pool
namespace detail {
namespace {

thread_local bool in_parallel_region = false;

// A small persistent pool: one job at a time, ranges handed out by an atomic counter.
// A worker joins a job only while it is open; once the calling thread has run out of ranges
// it closes the job and waits just for the workers that joined, so a worker that wakes late
// (descheduled on a busy machine) never holds up the caller.
class ThreadPool {
 public:
  static ThreadPool& get() {
    static ThreadPool* pool = new ThreadPool();  // leaked on purpose: no join at exit
    return *pool;
  }
  void run(int64_t n, int64_t chunk, int threads, RangeFn fn, void* ctx) {
    std::unique_lock<std::mutex> run_lock(run_mu_);
    ensure_workers(threads - 1);
    {
      std::lock_guard<std::mutex> g(mu_);
      fn_ = fn;
      ctx_ = ctx;
      n_ = n;
      chunk_ = chunk;
      next_.store(0);
      active_ = std::min<int>(threads - 1, static_cast<int>(workers_));
      open_ = true;
      busy_ = 0;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    work();
    std::unique_lock<std::mutex> g(mu_);
    open_ = false;
    done_cv_.wait(g, [&] { return busy_ == 0; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void ensure_workers(int want) {
    while (static_cast<int>(workers_) < want) {
      const int id = static_cast<int>(workers_++);
      std::thread([this, id] { loop(id); }).detach();
    }
  }
  void work() {
    in_parallel_region = true;
    for (;;) {
      const int64_t b = next_.fetch_add(chunk_);
      if (b >= n_) break;
      try {
        fn_(ctx_, b, std::min(n_, b + chunk_));
      } catch (...) {
        std::lock_guard<std::mutex> g(mu_);
        if (!error_) error_ = std::current_exception();
        next_.store(n_);
      }
    }
    in_parallel_region = false;
  }
  void loop(int id) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return generation_ != seen; });
        seen = generation_;
        if (id >= active_ || !open_) continue;
        ++busy_;
      }
      work();
      std::lock_guard<std::mutex> g(mu_);
      if (--busy_ == 0) done_cv_.notify_all();
    }
  }
  std::mutex run_mu_, mu_;
  std::condition_variable cv_, done_cv_;
  RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<int64_t> next_{0};
  int64_t n_ = 0, chunk_ = 1;
  int active_ = 0, busy_ = 0;
  bool open_ = false;
  uint64_t generation_ = 0;
  size_t workers_ = 0;
  std::exception_ptr error_;
};

}  // namespace

void parallel_run(int64_t n, int64_t grain, RangeFn fn, void* ctx) {
  const int threads = std::max(1, num_threads_setting());
  grain = std::max<int64_t>(grain, 1);
  if (threads == 1 || n <= grain || in_parallel_region) {  // nested: run inline
    fn(ctx, 0, n);
    return;
  }
  const int64_t parts = std::min<int64_t>(threads * 4, (n + grain - 1) / grain);
  const int64_t chunk = (n + parts - 1) / parts;
  ThreadPool::get().run(n, chunk, static_cast<int>(std::min<int64_t>(threads, parts)), fn, ctx);
}

std::string run_kernel(const OpRegistration& r, const CustomOpKernelContext& ctx) noexcept {
  try {
    r.kernel()(ctx);
  } catch (const std::exception& e) {
    std::string error = e.what();
    return error.empty() ? "std::exception with an empty message" : error;
  } catch (...) {
    return "unknown C++ exception";
  }
  return {};
}

}  // namespace detail

// ------------------------------------------------------------------ invocation core
namespace {

using detail::cat;

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
  return s;
}

std::string signature(const OpRegistration& r) {
  std::vector<std::string> ins, outs;
  for (const auto& a : r.inputs()) ins.push_back(a.dtype);
  for (const auto& a : r.outputs()) outs.push_back(a.dtype);
  return "(" + join(ins) + ") -> (" + join(outs) + ")";
}

// The declarations sorted by index (registrations may list them in any order).
std::vector<ArgDecl> by_index(const std::vector<ArgDecl>& decls) {
  std::vector<ArgDecl> v = decls;
  std::sort(v.begin(), v.end(), [](const ArgDecl& a, const ArgDecl& b) { return a.index < b.index; });
  return v;
}

bool given(const std::vector<RawTensor>& ts, size_t i) { return i < ts.size() && ts[i].present; }

bool matches(const OpRegistration& r, const std::vector<RawTensor>& ins,
             const std::vector<RawTensor>& outs) {
  const auto in_decl = by_index(r.inputs());
  const auto out_decl = by_index(r.outputs());
  if (ins.size() > in_decl.size() || outs.size() != out_decl.size()) return false;
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i].present && dtype_name(ins[i].dtype) != in_decl[i].dtype) return false;
  for (size_t i = 0; i < outs.size(); ++i)
    if (dtype_name(outs[i].dtype) != out_decl[i].dtype) return false;
  return true;
}

// Why no registration of `op` matches: the first argument whose dtype none of them has, or
// the combination with the registered ones listed.
[[noreturn]] void no_match(const std::string& op, const std::vector<const OpRegistration*>& regs,
                           const std::vector<RawTensor>& ins, const std::vector<RawTensor>& outs) {
  const auto in0 = by_index(regs[0]->inputs());
  const auto out0 = by_index(regs[0]->outputs());
  if (ins.size() > in0.size())
    throw OpError(cat(op, ": ", ins.size(), " inputs given, the operator declares ", in0.size(),
                      " (", regs[0]->inputs().size(), " in REGISTER_CUSTOM_OP)"));
  if (outs.size() != out0.size())
    throw OpError(cat(op, ": ", outs.size(), " outputs given, expected ", out0.size()));
  auto check = [&](const char* kind, const std::vector<RawTensor>& ts, bool input) {
    for (size_t i = 0; i < ts.size(); ++i) {
      if (!ts[i].present) continue;
      std::vector<std::string> seen;
      for (const auto* r : regs) {
        const auto d = by_index(input ? r->inputs() : r->outputs());
        if (std::find(seen.begin(), seen.end(), d[i].dtype) == seen.end()) seen.push_back(d[i].dtype);
      }
      const std::string got = dtype_name(ts[i].dtype);
      if (std::find(seen.begin(), seen.end(), got) == seen.end())
        throw OpError(cat(op, ": ", kind, " '", (input ? in0 : out0)[i].name, "' has dtype ", got,
                          ", expected ", join(seen, " or "), " (the registered kernels)"));
    }
  };
  check("input", ins, true);
  check("output", outs, false);
  std::vector<std::string> sigs;
  for (const auto* r : regs) sigs.push_back(signature(*r));
  std::vector<std::string> got_in, got_out;
  for (const auto& t : ins) got_in.push_back(t.present ? dtype_name(t.dtype) : "absent");
  for (const auto& t : outs) got_out.push_back(dtype_name(t.dtype));
  throw OpError(cat(op, ": no kernel for dtypes (", join(got_in), ") -> (", join(got_out),
                    "); registered: ", join(sigs, "; ")));
}

const OpRegistration& find_registration(const std::string& op, const std::vector<RawTensor>& ins,
                                        const std::vector<RawTensor>& outs) {
  std::vector<const OpRegistration*> named;
  std::vector<std::string> known;
  for (const auto& r : registry()) {
    if (r->name() == op) named.push_back(r.get());
    if (std::find(known.begin(), known.end(), r->name()) == known.end()) known.push_back(r->name());
  }
  if (named.empty())
    throw OpError(cat(op, ": no such operator is registered in this library (registered: ",
                      known.empty() ? std::string("none") : join(known),
                      "); link the operator's kernel.cpp and check the REGISTER_CUSTOM_OP name"));
  for (const auto* r : named)
    if (matches(*r, ins, outs)) return *r;
  no_match(op, named, ins, outs);
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

// Copies between a strided tensor and a contiguous buffer, element by element.
void copy_strided(char* strided, char* dense, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& strides, size_t item, bool to_dense) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
    char* s = strided + off * static_cast<int64_t>(item);
    char* c = dense + k * static_cast<int64_t>(item);
    std::memcpy(to_dense ? c : s, to_dense ? s : c, item);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// A tensor view of one argument; `scratch` keeps a contiguous copy when the kernel needs one.
struct Arg {
  Tensor view;
  std::vector<char> scratch;
  const RawTensor* raw = nullptr;  // set when scratch must be scattered back (outputs)
};

Arg make_arg(const std::string& op, const RawTensor& t, const ArgDecl& decl, bool output,
             bool strided_ok) {
  const char* kind = output ? "output" : "input";
  if (!t.strides.empty() && t.strides.size() != t.shape.size())
    throw OpError(cat(op, ": ", kind, " '", decl.name, "' has ", t.shape.size(), " dims but ",
                      t.strides.size(), " strides; pass one stride per dim or none"));
  int64_t numel = 1;
  for (int64_t d : t.shape) {
    if (d < 0)
      throw OpError(cat(op, ": ", kind, " '", decl.name, "' has a negative dim in shape ",
                        detail::shape_str(t.shape)));
    numel *= d;
  }
  if (numel > 0 && t.data == nullptr)
    throw OpError(cat(op, ": ", kind, " '", decl.name, "' of shape ", detail::shape_str(t.shape),
                      " has no data (null pointer)"));
  const auto dense = contiguous_strides(t.shape);
  Arg a;
  std::vector<int64_t> strides = t.strides.empty() ? dense : t.strides;
  Tensor probe(t.data, t.dtype, t.shape, strides, decl.name, output);
  if (strided_ok || probe.is_contiguous() || numel == 0) {
    a.view = std::move(probe);
    return a;
  }
  const size_t item = dtype_size(t.dtype);
  a.scratch.resize(static_cast<size_t>(numel) * item);
  if (!output)
    copy_strided(static_cast<char*>(t.data), a.scratch.data(), t.shape, strides, item, true);
  else
    a.raw = &t;
  a.view = Tensor(a.scratch.data(), t.dtype, t.shape, dense, decl.name, output);
  return a;
}

bool attr_fits(const AttrValue& v, const std::string& type) {
  static const char* names[] = {"int", "float", "bool", "string", "ints", "floats"};
  return type == names[v.index()];
}

// The value of a declared attribute as the kernel reads it: ints widen to float(s).
AttrValue coerce_attr(const std::string& op, const AttrDecl& decl, const AttrValue& v) {
  if (attr_fits(v, decl.type)) return v;
  if (decl.type == "float" && std::holds_alternative<int64_t>(v))
    return static_cast<double>(std::get<int64_t>(v));
  if (decl.type == "floats" && std::holds_alternative<std::vector<int64_t>>(v)) {
    const auto& iv = std::get<std::vector<int64_t>>(v);
    return std::vector<double>(iv.begin(), iv.end());
  }
  throw OpError(cat(op, ": attribute '", decl.name, "' is declared ", decl.type,
                    " (REGISTER_CUSTOM_OP .Attr), got a value of type ", attr_value_type(v)));
}

std::vector<AttrValue> resolve_attrs(const std::string& op, const OpRegistration& r,
                                     const std::vector<NamedAttr>& attrs,
                                     std::vector<std::string>& names) {
  for (const auto& [name, _] : attrs) {
    const bool declared = std::any_of(r.attrs().begin(), r.attrs().end(),
                                      [&](const AttrDecl& d) { return d.name == name; });
    if (!declared) {
      std::vector<std::string> decl;
      for (const auto& d : r.attrs()) decl.push_back(d.name);
      throw OpError(cat(op, ": unknown attribute '", name, "'; declared: ",
                        decl.empty() ? std::string("none") : join(decl)));
    }
  }
  std::vector<AttrValue> values;
  for (const auto& d : r.attrs()) {
    auto it = std::find_if(attrs.begin(), attrs.end(),
                           [&](const NamedAttr& a) { return a.first == d.name; });
    if (it == attrs.end() && !d.has_default)
      throw OpError(cat(op, ": required attribute '", d.name, "' (", d.type,
                        ") was not given and has no registered default; pass it, or declare "
                        "a default with .Attr(name, type, default)"));
    names.push_back(d.name);
    values.push_back(it == attrs.end() ? d.default_value : coerce_attr(op, d, it->second));
  }
  return values;
}

}  // namespace

void invoke(const std::string& op, const std::vector<RawTensor>& inputs,
            const std::vector<RawTensor>& outputs, const std::vector<NamedAttr>& attrs) {
  const OpRegistration& r = find_registration(op, inputs, outputs);
  if (!r.kernel()) throw OpError(cat(op, ": the registration has no .KernelFn(...)"));
  const auto in_decl = by_index(r.inputs());
  const auto out_decl = by_index(r.outputs());
  std::vector<Arg> ins, outs;
  std::vector<bool> present;
  for (size_t i = 0; i < in_decl.size(); ++i) {
    const bool has = given(inputs, i);
    if (!has && !in_decl[i].optional)
      throw OpError(cat(op, ": required input '", in_decl[i].name, "' (index ", i,
                        ") was not given"));
    present.push_back(has);
    ins.push_back(has ? make_arg(op, inputs[i], in_decl[i], false, r.accepts_strided())
                      : Arg{Tensor(nullptr, dtype_from_name(in_decl[i].dtype), {}, {},
                                   in_decl[i].name, false), {}, nullptr});
  }
  for (size_t i = 0; i < out_decl.size(); ++i)
    outs.push_back(make_arg(op, outputs[i], out_decl[i], true, r.accepts_strided()));
  std::vector<std::string> names;
  std::vector<AttrValue> values = resolve_attrs(op, r, attrs, names);
  std::vector<Tensor> in_views, out_views;
  for (const auto& a : ins) in_views.push_back(a.view);
  for (const auto& a : outs) out_views.push_back(a.view);
  CustomOpKernelContext ctx(op, std::move(in_views), std::move(present), std::move(out_views),
                            &names, std::move(values));
  const std::string error = detail::run_kernel(r, ctx);
  if (!error.empty()) throw OpError(op + ": " + error);
  for (auto& a : outs)
    if (a.raw)
      copy_strided(static_cast<char*>(a.raw->data), a.scratch.data(), a.raw->shape,
                   a.raw->strides, dtype_size(a.raw->dtype), false);
}

}  // namespace opsdk
