// The one generic pybind11 entry point linked into every operator module.
// Compiled once per toolchain configuration and reused by every operator build, next to
// runtime.cpp (the Python-free core: thread pool and kernel invocation), which it shares
// with the AI CPU adapter and the cross-build harness.
//
// Python selects the registration (by op name and input dtypes) and allocates outputs;
// this file wraps the NumPy buffers in opsdk::Tensor views without copying, converts
// attributes, releases the GIL and calls the kernel. C++ exceptions come back as
// RuntimeError("<op>: <message>"), which opsdk re-raises as KernelError.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <poll.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <pybind11/pybind11.h>
#include <structmember.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "opsdk/invoke.h"

namespace py = pybind11;

namespace {

py::object attr_to_py(const opsdk::AttrValue& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v);
}

py::dict describe(const opsdk::OpRegistration& r) {
  auto args = [](const std::vector<opsdk::ArgDecl>& v) {
    py::list out;
    for (const auto& a : v) out.append(py::make_tuple(a.index, a.name, a.dtype, a.optional));
    return out;
  };
  py::list attrs;
  for (const auto& a : r.attrs())
    attrs.append(py::make_tuple(a.name, a.type, a.has_default,
                                a.has_default ? attr_to_py(a.default_value) : py::none()));
  py::dict d;
  d["name"] = r.name();
  d["inputs"] = args(r.inputs());
  d["outputs"] = args(r.outputs());
  d["attrs"] = attrs;
  d["accepts_strided"] = r.accepts_strided();
  d["has_kernel"] = static_cast<bool>(r.kernel());
  return d;
}

// True when the array's bytes are in the machine's order ('>f4' on x86 is not).
bool native_order(const py::array& a) {
  const char order = a.dtype().byteorder();
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return order != '<';
#else
  return order != '>';
#endif
}

opsdk::Tensor make_tensor(const py::handle& obj, const opsdk::ArgDecl& decl, bool writable) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error("'" + decl.name + "' must be a numpy.ndarray");
  auto a = py::reinterpret_borrow<py::array>(obj);
  if (!native_order(a))
    throw py::value_error("'" + decl.name + "' has non-native byte order; pass "
                          "a.astype(a.dtype.newbyteorder('='))");
  const opsdk::DType dt = opsdk::dtype_from_name(decl.dtype);
  const auto itemsize = static_cast<py::ssize_t>(opsdk::dtype_size(dt));
  if (a.itemsize() != itemsize)
    throw py::value_error("'" + decl.name + "': item size " + std::to_string(a.itemsize()) +
                          " does not match " + decl.dtype);
  if (writable && !a.writeable())
    throw py::value_error("output '" + decl.name + "' is not writeable");
  const auto nd = static_cast<size_t>(a.ndim());
  std::vector<int64_t> shape(nd), strides(nd);
  for (size_t i = 0; i < nd; ++i) {
    shape[i] = a.shape(static_cast<py::ssize_t>(i));
    const py::ssize_t st = a.strides(static_cast<py::ssize_t>(i));
    if (st % itemsize != 0)
      throw py::value_error("'" + decl.name + "': stride is not a multiple of the item size");
    strides[i] = st / itemsize;
  }
  return opsdk::Tensor(const_cast<void*>(a.data()), dt, std::move(shape), std::move(strides),
                       decl.name, writable);
}

opsdk::AttrValue attr_from_py(const py::handle& v, const std::string& type) {
  if (type == "int") return v.cast<int64_t>();
  if (type == "float") return v.cast<double>();
  if (type == "bool") return v.cast<bool>();
  if (type == "string") return v.cast<std::string>();
  if (type == "ints") return v.cast<std::vector<int64_t>>();
  if (type == "floats") return v.cast<std::vector<double>>();
  throw py::value_error("unknown attribute type " + type);
}

// Ctrl-C inside a kernel. Python only notices SIGINT once the kernel returns, so an
// endless kernel could not be stopped. While a kernel runs, a first Ctrl-C says so (Python
// still raises KeyboardInterrupt when the kernel returns) and a second one ends the
// process; outside kernels the signal goes to the handler that was there before (Python's).
// Not installed where SIGINT is ignored or default (e.g. opsdk's validation workers).
std::atomic<int> g_in_kernel{0};
std::atomic<int> g_interrupts{0};
std::atomic<const char*> g_kernel_name{""};
struct sigaction g_prev_sigint;

// Where messages go: stderr, or a copy of the terminal's made before output capture began
// (set_message_fd: pytest captures fd 2 into a file that is lost when the process dies).
std::atomic<int> g_say_fd{2};

void say(const char* text) {
  ssize_t ignored = write(g_say_fd.load(std::memory_order_relaxed), text, strlen(text));
  (void)ignored;
}

void on_sigint(int sig, siginfo_t* info, void* uctx) {
  const int saved_errno = errno;  // write() below must not change the interrupted code's
  if (g_in_kernel.load() > 0) {
    const bool again = g_interrupts.fetch_add(1) > 0;
    say(again ? "\nopsdk: interrupted again inside the kernel of " : "\nopsdk: interrupt inside "
                "the kernel of ");
    say(g_kernel_name.load());
    say(again ? "; ending the process\n"
              : "; it stops when the kernel returns (Ctrl-C again ends the process)\n");
    if (again) _exit(130);
  }
  if (g_prev_sigint.sa_flags & SA_SIGINFO) {
    if (g_prev_sigint.sa_sigaction) g_prev_sigint.sa_sigaction(sig, info, uctx);
  } else if (g_prev_sigint.sa_handler != SIG_DFL && g_prev_sigint.sa_handler != SIG_IGN) {
    g_prev_sigint.sa_handler(sig);
  }
  errno = saved_errno;
}

void install_sigint_handler() {
  struct sigaction now {};
  if (sigaction(SIGINT, nullptr, &now) != 0) return;
  if (!(now.sa_flags & SA_SIGINFO) && (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN))
    return;
  g_prev_sigint = now;
  struct sigaction ours {};
  ours.sa_sigaction = &on_sigint;
  ours.sa_flags = SA_SIGINFO | (now.sa_flags & (SA_RESTART | SA_ONSTACK));
  ours.sa_mask = now.sa_mask;
  sigaction(SIGINT, &ours, nullptr);
}

// A kernel that ends the process. In-process, `op(x)` must not end a program silently: a
// fatal signal inside a kernel prints the operator's name, then goes to the handler that
// was there before (Python's faulthandler, a sanitizer's, or the default); exit() and _exit()
// called from the kernel's code (the module is linked with --wrap=exit,--wrap=_exit,
// --wrap=_Exit by OpsdkOperator.cmake) or exit() from a library it calls (on_exit) print it
// too, and a status 0, which would report success, becomes 1.
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr const char* kFatalNames[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"};
struct sigaction g_prev_fatal[5];
std::atomic<int> g_exit_told{0};

void on_fatal(int sig, siginfo_t* info, void*) {
  for (size_t i = 0; i < 5; ++i) {
    if (kFatalSignals[i] != sig) continue;
    if (g_in_kernel.load() > 0) {
      say("\nopsdk: the kernel of ");
      say(g_kernel_name.load());
      say(" crashed with ");
      say(kFatalNames[i]);
      say("; the process ends\n");
    }
    sigaction(sig, &g_prev_fatal[i], nullptr);
    if (info == nullptr || info->si_code <= 0) raise(sig);  // sent: deliver to the previous
    return;  // a fault: the instruction runs again and faults into the previous handler
  }
}

// The status to end with when the kernel ends the process (and says so once).
int kernel_exit_status(const char* how, int status) {
  if (g_in_kernel.load() == 0 || g_exit_told.fetch_add(1) > 0) return status;
  char num[16];
  snprintf(num, sizeof num, "%d", status);
  say("\nopsdk: the kernel of ");
  say(g_kernel_name.load());
  say(" called ");
  say(how);
  say("(");
  say(num);
  say("); the process ends here, inside the operator call");
  say(status == 0 ? ", with status 1 (not 0: the call did not succeed)\n" : "\n");
  return status == 0 ? 1 : status;
}

void on_process_exit(int status, void*) {
  const int now = kernel_exit_status("exit", status);
  if (now != status) {
    fflush(nullptr);
    _exit(now);
  }
}

void install_exit_guards() {
  for (size_t i = 0; i < 5; ++i) {
    struct sigaction ours {};
    ours.sa_sigaction = &on_fatal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    sigaction(kFatalSignals[i], &ours, &g_prev_fatal[i]);
  }
#if defined(__GLIBC__)
  on_exit(&on_process_exit, nullptr);
#endif
}

struct InKernel {
  explicit InKernel(const std::string& name) {
    if (g_in_kernel.fetch_add(1) == 0) {  // the handler's read is best effort: no fences
      g_interrupts.store(0, std::memory_order_relaxed);
      g_kernel_name.store(name.c_str(), std::memory_order_relaxed);
    }
  }
  ~InKernel() { g_in_kernel.fetch_sub(1); }
};

// Call a kernel with the GIL released; a C++ exception becomes RuntimeError("<op>: ...").
// Below this many elements the kernel runs with the GIL held: releasing and re-taking it
// would cost more than the work.
constexpr int64_t kReleaseGilElements = 1 << 14;

void invoke(const opsdk::OpRegistration& r, std::vector<opsdk::Tensor> ins,
            std::vector<bool> present, std::vector<opsdk::Tensor> outs,
            const std::vector<std::string>& names, std::vector<opsdk::AttrValue> values) {
  int64_t work = 0;
  for (const auto& t : ins) work += t.numel();
  for (const auto& t : outs) work += t.numel();
  opsdk::CustomOpKernelContext ctx(r.name(), std::move(ins), std::move(present), std::move(outs),
                                   &names, std::move(values));
  std::string error;
  InKernel in_kernel(r.name());
  if (work < kReleaseGilElements) {
    error = opsdk::detail::run_kernel(r, ctx);
  } else {
    py::gil_scoped_release nogil;
    error = opsdk::detail::run_kernel(r, ctx);
  }
  if (!error.empty()) throw std::runtime_error(r.name() + ": " + error);
}

void run(size_t index, const py::sequence& inputs, const py::sequence& outputs,
         const py::sequence& attr_values) {
  auto& regs = opsdk::registry();
  if (index >= regs.size()) throw py::index_error("no such registration");
  const opsdk::OpRegistration& r = *regs[index];
  const auto& in_decl = r.inputs();
  const auto& out_decl = r.outputs();
  if (static_cast<size_t>(py::len(inputs)) != in_decl.size() ||
      static_cast<size_t>(py::len(outputs)) != out_decl.size() ||
      static_cast<size_t>(py::len(attr_values)) != r.attrs().size())
    throw py::value_error(r.name() + ": wrong number of inputs, outputs or attributes");
  std::vector<opsdk::Tensor> ins;
  std::vector<bool> present;
  ins.reserve(in_decl.size());
  for (size_t i = 0; i < in_decl.size(); ++i) {
    py::handle h = inputs[i];
    present.push_back(!h.is_none());
    ins.push_back(h.is_none() ? opsdk::Tensor(nullptr, opsdk::dtype_from_name(in_decl[i].dtype),
                                              {}, {}, in_decl[i].name, false)
                              : make_tensor(h, in_decl[i], false));
  }
  std::vector<opsdk::Tensor> outs;
  outs.reserve(out_decl.size());
  for (size_t i = 0; i < out_decl.size(); ++i) outs.push_back(make_tensor(outputs[i], out_decl[i], true));
  std::vector<std::string> names;
  std::vector<opsdk::AttrValue> values;
  for (size_t i = 0; i < r.attrs().size(); ++i) {
    names.push_back(r.attrs()[i].name);
    values.push_back(attr_from_py(attr_values[i], r.attrs()[i].type));
  }
  invoke(r, std::move(ins), std::move(present), std::move(outs), names, std::move(values));
}


// ------------------------------------------------------------------ output memory
// Outputs of at least kPoolMinBytes come from one pool of blocks keyed by (page-rounded)
// size, shared by every operator module of the process through pybind11's shared data.
// An array holds its block through a capsule, its base object: NumPy keeps the base alive
// for the array and every view of it, so the capsule's destructor hands the block back only
// once nothing can reach it any more, and a block is never given out twice while in use.
// A caller's `y = op(x)` in a loop then gets warm, already-mapped memory back instead of a
// fresh mapping that the OS page-faults and zeroes on every call (glibc maps blocks above
// its mmap threshold, at most 32 MiB, afresh each time). ONNX Runtime's arena does the same.
constexpr size_t kPoolMinBytes = size_t{256} << 10;
constexpr size_t kPoolPerSize = 4;                  // free blocks kept per size
constexpr size_t kHugeBytes = size_t{4} << 20;      // 2 MiB-aligned, transparent huge pages
constexpr const char* kBlockCapsule = "opsdk.output_block";

class OutputPool {
 public:
  // The process-wide pool (created by the first operator module that needs it).
  static OutputPool& get() {
    static OutputPool* pool = [] {
      const char* key = "opsdk.output_pool.v1";
      void* p = py::get_shared_data(key);
      if (!p) p = py::set_shared_data(key, new OutputPool());  // leaked: lives with Python
      return static_cast<OutputPool*>(p);
    }();
    return *pool;
  }
  static size_t rounded(size_t bytes) { return (bytes + 4095) & ~size_t{4095}; }

  void* acquire(size_t size) {
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        ++hits_;
        return p;
      }
      ++misses_;
    }
    return allocate(size);
  }
  void release(void* p, size_t size) noexcept {
    {
      std::lock_guard<std::mutex> g(mu_);
      auto& blocks = free_[size];
      if (cached_ + size <= limit_ && blocks.size() < kPoolPerSize) {
        blocks.push_back(p);
        cached_ += size;
        return;
      }
    }
    std::free(p);
  }
  // Caps the bytes kept free for reuse (0 turns pooling off); frees what is over.
  void set_limit(size_t bytes) {
    std::vector<void*> drop;
    {
      std::lock_guard<std::mutex> g(mu_);
      limit_ = bytes;
      for (auto& [size, blocks] : free_) {
        while (cached_ > limit_ && !blocks.empty()) {
          drop.push_back(blocks.back());
          blocks.pop_back();
          cached_ -= size;
        }
      }
    }
    for (void* p : drop) std::free(p);
  }
  bool enabled() const { return limit_ > 0; }
  py::dict stats() {
    std::lock_guard<std::mutex> g(mu_);
    py::dict d;
    d["limit_bytes"] = limit_;
    d["cached_bytes"] = cached_;
    d["hits"] = hits_;
    d["misses"] = misses_;
    d["min_bytes"] = kPoolMinBytes;
    return d;
  }

 private:
  OutputPool() {
    const char* env = std::getenv("OPSDK_OUTPUT_POOL_MB");
    if (env && *env) limit_ = static_cast<size_t>(std::max(0L, std::atol(env))) << 20;
  }
  static void* allocate(size_t size) {
    const size_t align = size >= kHugeBytes ? (size_t{2} << 20) : 64;
    void* p = nullptr;
    if (posix_memalign(&p, align, size) != 0) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= kHugeBytes) madvise(p, size, MADV_HUGEPAGE);  // as NumPy does; a hint only
#endif
    return p;
  }
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0, limit_ = size_t{1} << 30;
  uint64_t hits_ = 0, misses_ = 0;
};

void release_block(PyObject* capsule) {
  void* p = PyCapsule_GetPointer(capsule, kBlockCapsule);
  const auto size = reinterpret_cast<size_t>(PyCapsule_GetContext(capsule));
  if (p) OutputPool::get().release(p, size);
}

// A new C-contiguous array (new reference; nullptr with a Python error set). Large ones
// take a pooled block; small ones come from NumPy, whose own cache serves them well.
PyObject* new_output(PyObject* descr, int nd, const Py_intptr_t* dims, size_t nbytes) {
  auto& api = py::detail::npy_api::get();
  OutputPool& pool = OutputPool::get();
  Py_INCREF(descr);  // PyArray_NewFromDescr steals it
  if (nbytes < kPoolMinBytes || !pool.enabled())
    return api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, nd, dims, nullptr, nullptr, 0,
                                     nullptr);
  const size_t size = OutputPool::rounded(nbytes);
  void* block = pool.acquire(size);
  PyObject* capsule = PyCapsule_New(block, kBlockCapsule, release_block);
  if (!capsule || PyCapsule_SetContext(capsule, reinterpret_cast<void*>(size)) != 0) {
    Py_XDECREF(capsule);
    pool.release(block, size);
    Py_DECREF(descr);
    return nullptr;
  }
  PyObject* arr = api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, nd, dims, nullptr, block,
                                            py::detail::npy_api::NPY_ARRAY_WRITEABLE_, nullptr);
  if (!arr) {
    Py_DECREF(capsule);
    return nullptr;
  }
  if (api.PyArray_SetBaseObject_(arr, capsule) != 0) {  // steals the capsule
    Py_DECREF(arr);
    return nullptr;
  }
  return arr;
}

// `module.empty(shape, dtype)`: a C-contiguous output array, pooled when large.
py::object empty(const std::vector<Py_intptr_t>& shape, const py::dtype& dtype) {
  size_t n = static_cast<size_t>(dtype.itemsize());
  for (auto d : shape) {
    if (d < 0) throw py::value_error("negative dimension in output shape");
    n *= static_cast<size_t>(d);
  }
  PyObject* arr = new_output(dtype.ptr(), static_cast<int>(shape.size()), shape.data(), n);
  if (!arr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(arr);
}

// ------------------------------------------------------------------ the fast call path
// `op(*inputs, **attrs)` entered through CPython's vectorcall protocol (METH_FASTCALL |
// METH_KEYWORDS: positional arguments in a C array, keyword names in a tuple, no dict). It
// takes the common case: every input a C-contiguous, aligned ndarray of native byte order,
// of a registered dtype combination, attributes as plain Python values. The kernel is
// looked up by the tuple of NumPy type numbers (the last match is remembered).
//
// Output shapes: an elementwise op (no shape function) needs all inputs of one shape, which
// its outputs take. An op with a shape function (Softmax, LayerNormalization, ...) may have
// inputs of any shapes and leave optional trailing inputs out; its output shapes come from
// a plan: what the Python planner (the checked path's own inference, so the spec's shape
// function stays the one description of the rule) returned for these input dtypes, input
// shapes and attribute values, kept in a small cache so a repeated call does no Python work.
// A planner error (an axis out of range, a Scale that does not broadcast, ...) is the
// checked path's own SpecError, raised as is. Anything else the fast path does not take
// (other arguments, a kernel error) goes to the Python executor, which checks everything
// and raises the precise error.
constexpr Py_ssize_t kMaxFastInputs = 8;
constexpr const char* kCallerCapsule = "opsdk.fast_caller";
constexpr size_t kMaxPlans = 16;  // output-shape plans kept per operator (oldest replaced)

class FastCaller {
 public:
  FastCaller(size_t n_required, size_t n_inputs, const py::list& kernels, const py::list& attrs,
             py::object fallback, py::object planner)
      : n_required_(n_required), n_inputs_(n_inputs), fallback_(std::move(fallback)),
        planner_(std::move(planner)) {
    for (const auto& a : attrs) {
      auto t = a.cast<py::tuple>();
      AttrSpec spec{t[0].cast<std::string>(), t[1].cast<std::string>(), py::str(t[0]), {}, false};
      spec.key = py::reinterpret_steal<py::str>(PyUnicode_InternFromString(spec.name.c_str()));
      if (!t[2].is_none()) {
        spec.has_default = to_attr(t[2].ptr(), spec.type, spec.default_value);
        if (!spec.has_default) PyErr_Clear();
      }
      attrs_.push_back(std::move(spec));
    }
    for (const auto& k : kernels) kernels_.push_back(make_kernel(k.cast<py::tuple>()));
    plans_.reserve(kMaxPlans);  // never reallocated: a plan's address stays valid
  }

  static PyObject* entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kwnames) {
    auto* fc = static_cast<FastCaller*>(PyCapsule_GetPointer(self, kCallerCapsule));
    if (!fc) return nullptr;
    try {
      return fc->call(args, nargs, kwnames);
    } catch (py::error_already_set& e) {
      e.restore();
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return nullptr;
  }

 private:
  struct AttrSpec {
    std::string name, type;
    py::str key;  // interned: keyword names usually match by pointer
    opsdk::AttrValue default_value;
    bool has_default;
  };
  struct Kernel {
    std::vector<int> in_nums;
    const opsdk::OpRegistration* reg;
    std::vector<opsdk::ArgDecl> in_decl, out_decl;
    std::vector<opsdk::DType> in_types, out_types;
    std::vector<py::dtype> out_dtypes;
    std::vector<std::string> attr_order;
    std::vector<size_t> attr_slots;  // index into attrs_ for each of attr_order
  };

  Kernel make_kernel(const py::tuple& t) const {
    Kernel k;
    for (const auto& d : t[0].cast<py::list>()) k.in_nums.push_back(d.cast<py::dtype>().num());
    k.reg = opsdk::registry().at(t[1].cast<size_t>()).get();
    auto sorted = [](std::vector<opsdk::ArgDecl> v) {
      std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
      return v;
    };
    k.in_decl = sorted(k.reg->inputs());
    k.out_decl = sorted(k.reg->outputs());
    for (const auto& d : k.in_decl) k.in_types.push_back(opsdk::dtype_from_name(d.dtype));
    for (const auto& d : k.out_decl) k.out_types.push_back(opsdk::dtype_from_name(d.dtype));
    for (const auto& d : t[2].cast<py::list>()) k.out_dtypes.push_back(d.cast<py::dtype>());
    k.attr_order = t[3].cast<std::vector<std::string>>();
    for (const auto& name : k.attr_order) {
      size_t slot = 0;
      while (slot < attrs_.size() && attrs_[slot].name != name) ++slot;
      if (slot == attrs_.size()) throw py::value_error("attribute " + name + " is not in the spec");
      k.attr_slots.push_back(slot);
    }
    return k;
  }

  PyObject* fallback(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) const {
    return PyObject_Vectorcall(fallback_.ptr(), args, static_cast<size_t>(nargs), kwnames);
  }

  const Kernel* lookup(const int* nums, Py_ssize_t n) {
    if (last_ && std::equal(nums, nums + n, last_->in_nums.begin())) return last_;
    for (const auto& k : kernels_)
      if (std::equal(nums, nums + n, k.in_nums.begin())) return last_ = &k;
    return nullptr;
  }

  // The type numbers of the inputs when all are plain contiguous arrays (of one shape when
  // `same_shape`).
  static bool plain_inputs(PyObject* const* args, Py_ssize_t n, int* nums, bool same_shape) {
    auto& api = py::detail::npy_api::get();
    constexpr int want = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ |
                         py::detail::npy_api::NPY_ARRAY_ALIGNED_;
    const py::detail::PyArray_Proxy* a0 = nullptr;
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!PyObject_TypeCheck(args[i], api.PyArray_Type_)) return false;
      const auto* a = py::detail::array_proxy(args[i]);
      if ((a->flags & want) != want) return false;
      const auto* d = py::detail::array_descriptor_proxy(a->descr);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
      if (d->byteorder == '<') return false;
#else
      if (d->byteorder == '>') return false;
#endif
      nums[i] = d->type_num;
      if (i == 0 || !same_shape) {
        a0 = a;
      } else if (a->nd != a0->nd || !std::equal(a->dimensions, a->dimensions + a->nd,
                                                a0->dimensions)) {
        return false;
      }
    }
    return true;
  }

  // Attribute values in the kernel's order; false when the Python path must handle them.
  bool resolve(const Kernel& k, PyObject* const* kwargs, PyObject* kwnames,
               std::vector<opsdk::AttrValue>& values) const {
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject* given[16] = {};
    if (attrs_.size() > 16) return false;
    for (Py_ssize_t j = 0; j < nkw; ++j) {
      PyObject* name = PyTuple_GET_ITEM(kwnames, j);
      size_t slot = 0;
      while (slot < attrs_.size() && attrs_[slot].key.ptr() != name) ++slot;
      if (slot == attrs_.size()) {
        slot = 0;
        while (slot < attrs_.size() && PyUnicode_Compare(attrs_[slot].key.ptr(), name) != 0) ++slot;
        if (slot == attrs_.size()) return false;  // unknown keyword: the Python path explains
      }
      given[slot] = kwargs[j];
    }
    values.resize(k.attr_slots.size());
    for (size_t i = 0; i < k.attr_slots.size(); ++i) {
      const AttrSpec& spec = attrs_[k.attr_slots[i]];
      PyObject* v = given[k.attr_slots[i]];
      if (!v) {
        if (!spec.has_default) return false;  // required and missing
        values[i] = spec.default_value;
      } else if (!to_attr(v, spec.type, values[i])) {
        PyErr_Clear();
        return false;
      }
    }
    return true;
  }

  // A plain Python value as an attribute of `type` (exact types only: no NumPy scalars).
  static bool to_attr(PyObject* o, const std::string& type, opsdk::AttrValue& out) {
    auto number = [](PyObject* p, double& v) {
      if (PyFloat_CheckExact(p)) v = PyFloat_AS_DOUBLE(p);
      else if (PyLong_CheckExact(p)) v = PyLong_AsDouble(p);
      else return false;
      return !PyErr_Occurred();
    };
    auto integer = [](PyObject* p, int64_t& v) {
      if (!PyLong_CheckExact(p)) return false;
      v = PyLong_AsLongLong(p);
      return !PyErr_Occurred();
    };
    if (type == "float") {
      double v;
      if (!number(o, v)) return false;
      out = v;
      return true;
    }
    if (type == "int") {
      int64_t v;
      if (!integer(o, v)) return false;
      out = v;
      return true;
    }
    if (type == "bool") {
      if (!PyBool_Check(o)) return false;
      out = o == Py_True;
      return true;
    }
    if (type == "string") {
      Py_ssize_t len = 0;
      const char* s = PyUnicode_CheckExact(o) ? PyUnicode_AsUTF8AndSize(o, &len) : nullptr;
      if (!s) return false;
      out = std::string(s, static_cast<size_t>(len));
      return true;
    }
    if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o)) return false;
    PyObject* seq = o;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject** items = PySequence_Fast_ITEMS(seq);
    if (type == "ints") {
      std::vector<int64_t> v(static_cast<size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i)
        if (!integer(items[i], v[static_cast<size_t>(i)])) return false;
      out = std::move(v);
      return true;
    }
    if (type != "floats") return false;
    std::vector<double> v(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!number(items[i], v[static_cast<size_t>(i)])) return false;
    out = std::move(v);
    return true;
  }

  // The output shapes of one call signature, as the planner gave them.
  struct Plan {
    const Kernel* kernel;
    std::vector<int64_t> in_dims;  // per given input: its rank, then its dims
    std::vector<opsdk::AttrValue> values;
    std::vector<std::vector<Py_intptr_t>> out_shapes;
  };

  static void input_dims(PyObject* const* args, Py_ssize_t n, std::vector<int64_t>& out) {
    for (Py_ssize_t i = 0; i < n; ++i) {
      const auto* a = py::detail::array_proxy(args[i]);
      out.push_back(a->nd);
      out.insert(out.end(), a->dimensions, a->dimensions + a->nd);
    }
  }

  // The plan of this call: cached, or made by the planner. nullptr with a Python error set
  // when the planner raised (the checked path's error), without one when the call is not
  // for the fast path (the planner chose another kernel).
  const Plan* plan(const Kernel& k, PyObject* const* args, Py_ssize_t n, PyObject* kwnames,
                   const std::vector<opsdk::AttrValue>& values) {
    std::vector<int64_t> dims;
    dims.reserve(16);
    input_dims(args, n, dims);
    for (const Plan& p : plans_)
      if (p.kernel == &k && p.in_dims == dims && p.values == values) return &p;
    py::object got = py::reinterpret_steal<py::object>(
        PyObject_Vectorcall(planner_.ptr(), args, static_cast<size_t>(n), kwnames));
    if (!got) return nullptr;
    auto t = got.cast<py::tuple>();
    if (t[0].cast<size_t>() >= opsdk::registry().size() ||
        opsdk::registry()[t[0].cast<size_t>()].get() != k.reg)
      return nullptr;
    Plan p{&k, std::move(dims), values, {}};
    for (const auto& shape : t[1].cast<py::list>())
      p.out_shapes.push_back(shape.cast<std::vector<Py_intptr_t>>());
    if (p.out_shapes.size() != k.out_dtypes.size()) return nullptr;
    if (plans_.size() < kMaxPlans) {
      plans_.push_back(std::move(p));
      return &plans_.back();
    }
    Plan& slot = plans_[next_plan_];
    next_plan_ = (next_plan_ + 1) % kMaxPlans;
    slot = std::move(p);
    return &slot;
  }

  static std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
    std::vector<int64_t> strides(shape.size());
    int64_t step = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      strides[d] = step;
      step *= shape[d];
    }
    return strides;
  }

  PyObject* call(PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
    const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    const bool planned = !planner_.is_none();
    int nums[kMaxFastInputs];
    if (n > static_cast<Py_ssize_t>(n_inputs_) || n < static_cast<Py_ssize_t>(n_required_) ||
        (!planned && n != static_cast<Py_ssize_t>(n_inputs_)) || n > kMaxFastInputs ||
        n == 0 || !plain_inputs(args, n, nums, !planned))
      return fallback(args, n, kwnames);
    const Kernel* k = lookup(nums, n);
    std::vector<opsdk::AttrValue> values;
    if (!k || !resolve(*k, args + n, kwnames, values)) return fallback(args, n, kwnames);
    const Plan* p = nullptr;
    if (planned) {
      p = plan(*k, args, n, kwnames, values);
      if (!p) return PyErr_Occurred() ? nullptr : fallback(args, n, kwnames);
    }
    std::vector<opsdk::Tensor> ins, outs;
    ins.reserve(n_inputs_);
    for (Py_ssize_t i = 0; i < n; ++i) {
      const auto* a = py::detail::array_proxy(args[i]);
      std::vector<int64_t> shape(a->dimensions, a->dimensions + a->nd);
      std::vector<int64_t> strides = contiguous_strides(shape);
      ins.emplace_back(a->data, k->in_types[i], std::move(shape), std::move(strides),
                       k->in_decl[i].name, false);
    }
    std::vector<bool> present(n_inputs_, false);
    std::fill(present.begin(), present.begin() + n, true);
    for (size_t i = static_cast<size_t>(n); i < n_inputs_; ++i)  // optional, left out
      ins.emplace_back(nullptr, k->in_types[i], std::vector<int64_t>{}, std::vector<int64_t>{},
                       k->in_decl[i].name, false);
    const auto* a0 = py::detail::array_proxy(args[0]);
    const size_t n_out = k->out_dtypes.size();
    // A copy: allocating an output can run Python (a finalizer calling this operator) that
    // replaces the cached plan.
    const std::vector<std::vector<Py_intptr_t>> out_shapes =
        p ? p->out_shapes : std::vector<std::vector<Py_intptr_t>>{};
    py::tuple results(n_out);
    for (size_t i = 0; i < n_out; ++i) {
      const int nd = p ? static_cast<int>(out_shapes[i].size()) : a0->nd;
      const Py_intptr_t* dims = p ? out_shapes[i].data() : a0->dimensions;
      const std::vector<int64_t> shape(dims, dims + nd);
      size_t nbytes = opsdk::dtype_size(k->out_types[i]);
      for (auto d : shape) nbytes *= static_cast<size_t>(d);
      PyObject* arr = new_output(k->out_dtypes[i].ptr(), nd, dims, nbytes);
      if (!arr) return nullptr;
      PyTuple_SET_ITEM(results.ptr(), static_cast<Py_ssize_t>(i), arr);  // steals
      outs.emplace_back(py::detail::array_proxy(arr)->data, k->out_types[i], shape,
                        contiguous_strides(shape), k->out_decl[i].name, true);
    }
    try {
      invoke(*k->reg, std::move(ins), std::move(present), std::move(outs), k->attr_order,
             std::move(values));
    } catch (const std::runtime_error&) {
      return fallback(args, n, kwnames);  // the Python path re-runs and raises KernelError
    }
    if (n_out == 1) return py::object(results[0]).release().ptr();
    return results.release().ptr();
  }

  size_t n_required_, n_inputs_;
  std::vector<Kernel> kernels_;
  std::vector<AttrSpec> attrs_;
  py::object fallback_, planner_;  // planner_: None for elementwise ops
  const Kernel* last_ = nullptr;
  std::vector<Plan> plans_;
  size_t next_plan_ = 0;
};

// The callable behind Operator.__call__: a builtin function (vectorcall) bound to a capsule
// that owns the FastCaller.
py::object fast_caller(size_t n_required, size_t n_inputs, const py::list& kernels,
                       const py::list& attrs, py::object fallback, py::object planner) {
  static PyMethodDef def = {
      "opsdk_call",
      reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&FastCaller::entry)),
      METH_FASTCALL | METH_KEYWORDS, "op(*inputs, **attrs): run the kernel"};
  auto* fc = new FastCaller(n_required, n_inputs, kernels, attrs, std::move(fallback),
                            std::move(planner));
  PyObject* capsule = PyCapsule_New(fc, kCallerCapsule, [](PyObject* c) {
    delete static_cast<FastCaller*>(PyCapsule_GetPointer(c, kCallerCapsule));
  });
  if (!capsule) {
    delete fc;
    throw py::error_already_set();
  }
  PyObject* fn = PyCFunction_NewEx(&def, capsule, nullptr);
  Py_DECREF(capsule);
  if (!fn) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

// `op(x)` with no Python frame and no argument tuple or keyword dict on the way to the
// kernel. CPython calls an instance of a Python class through its type's tp_call, which
// packs the arguments into a tuple and a dict first; only types with a vectorcall slot
// receive them as a C array. So opsdk.load() makes its operators instances of a subclass
// of the Python Operator class, created here from a type spec, whose instances carry a
// vectorcall function right after the base class's fields. It forwards to the instance's
// `_call` (the fast caller above, or the checked Python path). The class is created once
// per process (Python caches it) and works with any operator module's `_call`.
PyObject* forward_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  static PyObject* name = PyUnicode_InternFromString("_call");
  PyObject* target = PyObject_GetAttr(self, name);
  if (!target) return nullptr;
  PyObject* result = PyObject_Vectorcall(target, args, nargsf, kwnames);
  Py_DECREF(target);
  return result;
}

// tp_call (tuple and dict), used until enable_vectorcall has set the instance's slot.
PyObject* forward_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  static PyObject* name = PyUnicode_InternFromString("_call");
  PyObject* target = PyObject_GetAttr(self, name);
  if (!target) return nullptr;
  PyObject* result = PyObject_Call(target, args, kwargs);
  Py_DECREF(target);
  return result;
}

py::object vectorcall_subclass(const py::type& base) {
  auto* b = reinterpret_cast<PyTypeObject*>(base.ptr());
  static PyMemberDef members[] = {
      {"__vectorcalloffset__", T_PYSSIZET, 0, READONLY, nullptr}, {nullptr, 0, 0, 0, nullptr}};
  members[0].offset = b->tp_basicsize;
  static PyType_Slot slots[] = {{Py_tp_call, reinterpret_cast<void*>(&forward_tp_call)},
                                {Py_tp_members, members},
                                {Py_tp_doc, const_cast<char*>("an opsdk operator (vectorcall)")},
                                {0, nullptr}};
  static PyType_Spec spec = {"opsdk.runtime.cpu.Operator", 0, 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, slots};
  spec.basicsize = static_cast<int>(b->tp_basicsize + sizeof(vectorcallfunc));
  py::tuple bases = py::make_tuple(base);
  PyObject* t = PyType_FromSpecWithBases(&spec, bases.ptr());
  if (!t) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(t);
}

void enable_vectorcall(const py::object& op) {
  auto* type = Py_TYPE(op.ptr());
  const bool ours = (type->tp_flags & Py_TPFLAGS_HAVE_VECTORCALL) && type->tp_base &&
                    type->tp_vectorcall_offset == type->tp_base->tp_basicsize;
  if (!ours)  // made by vectorcall_subclass (of this or another operator module)
    throw py::type_error("enable_vectorcall: not an instance of the vectorcall subclass");
  auto** slot = reinterpret_cast<vectorcallfunc*>(reinterpret_cast<char*>(op.ptr()) +
                                                  type->tp_vectorcall_offset);
  *slot = &forward_call;
}

// In opsdk's worker processes (opsdk/runtime/_procs.py): a thread that waits for EOF on the
// lifeline pipe (the parent ended) or a new parent pid, then kills the worker's process
// group. Native, so a kernel that never returns and holds the GIL cannot keep it from running.
void watch_lifeline(int fd, int parent) {
  std::thread([fd, parent] {
    char c;
    while (getppid() == parent) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 1000) > 0 && read(fd, &c, 1) == 0) break;
    }
    if (getpgrp() == getpid()) kill(0, SIGKILL);
    kill(getpid(), SIGKILL);
  }).detach();
}

// The operator modules of one process share the first one's thread pool (invoke.h).
void share_thread_pool() {
  const std::string key = opsdk::detail::thread_pool_key();
  if (void* pool = py::get_shared_data(key))
    opsdk::detail::adopt_thread_pool(pool);
  else
    py::set_shared_data(key, opsdk::detail::thread_pool_handle());
}

}  // namespace

// exit(), _exit() and _Exit() called from kernel code (see kernel_exit_status); the __real_
// symbols are weak, so a module linked without --wrap still loads.
extern "C" {
void __real_exit(int) __attribute__((weak, noreturn));
void __real__exit(int) __attribute__((weak, noreturn));
void __real__Exit(int) __attribute__((weak, noreturn));
[[noreturn]] void __wrap_exit(int status) {
  status = kernel_exit_status("exit", status);
  if (__real_exit) __real_exit(status);
  std::abort();
}
[[noreturn]] void __wrap__exit(int status) {
  status = kernel_exit_status("_exit", status);
  if (__real__exit) __real__exit(status);
  std::abort();
}
[[noreturn]] void __wrap__Exit(int status) {
  status = kernel_exit_status("_Exit", status);
  if (__real__Exit) __real__Exit(status);
  std::abort();
}
}

PYBIND11_MODULE(_opsdk_kernels, m) {
  m.doc() = "opsdk operator kernels";
  install_sigint_handler();
  install_exit_guards();
  share_thread_pool();
  m.def("registrations", [] {
    py::list out;
    for (const auto& r : opsdk::registry()) out.append(describe(*r));
    return out;
  });
  m.def("run", &run, py::arg("index"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs"));
  m.def("fast_caller", &fast_caller, py::arg("n_required"), py::arg("n_inputs"),
        py::arg("kernels"), py::arg("attrs"), py::arg("fallback"),
        py::arg("planner") = py::none());
  m.def("vectorcall_subclass", &vectorcall_subclass, py::arg("base"));
  m.def("enable_vectorcall", &enable_vectorcall, py::arg("op"));
  m.def("empty", &empty, py::arg("shape"), py::arg("dtype"));
  m.def("output_pool_stats", [] { return OutputPool::get().stats(); });
  m.def("set_output_pool_limit", [](size_t bytes) { OutputPool::get().set_limit(bytes); });
  m.def("set_num_threads", [](int n) { opsdk::num_threads_setting() = n > 0 ? n : 1; });
  m.def("get_num_threads", [] { return opsdk::num_threads_setting(); });
  m.def("set_spin_microseconds", [](int us) { opsdk::set_spin_microseconds(us); });
  m.def("get_spin_microseconds", [] { return opsdk::spin_microseconds(); });
  m.def("park_workers", [] { opsdk::park_workers(); });
  m.def("watch_lifeline", &watch_lifeline, py::arg("fd"), py::arg("parent"));
  m.def("set_message_fd", [](int fd) { g_say_fd.store(fd); }, py::arg("fd"));
  m.def("thread_pool_id",
        [] { return reinterpret_cast<uintptr_t>(opsdk::detail::thread_pool_handle()); });
}
