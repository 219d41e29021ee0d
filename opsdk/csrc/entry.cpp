// The one generic pybind11 entry point linked into every operator module.
// Compiled once per toolchain configuration and reused by every operator build.
//
// Python selects the registration (by op name and input dtypes) and allocates outputs;
// this file wraps the NumPy buffers in opsdk::Tensor views without copying, converts
// attributes, releases the GIL and calls the kernel. C++ exceptions come back as
// RuntimeError("<op>: <message>"), which opsdk re-raises as KernelError.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "opsdk/custom_op.h"

namespace py = pybind11;

// ---------------------------------------------------------------------- thread pool
// Declared in custom_op.h; defined once here so kernels compile without <thread>/<mutex>.
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

}  // namespace detail
}  // namespace opsdk


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

opsdk::Tensor make_tensor(const py::handle& obj, const opsdk::ArgDecl& decl, bool writable) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error("'" + decl.name + "' must be a numpy.ndarray");
  auto a = py::reinterpret_borrow<py::array>(obj);
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

// Call a kernel with the GIL released; a C++ exception becomes RuntimeError("<op>: ...").
// Below this many elements the kernel runs with the GIL held: releasing and re-taking it
// would cost more than the work.
constexpr int64_t kReleaseGilElements = 1 << 14;

std::string run_kernel(const opsdk::OpRegistration& r, const opsdk::CustomOpKernelContext& ctx) {
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

void invoke(const opsdk::OpRegistration& r, std::vector<opsdk::Tensor> ins,
            std::vector<bool> present, std::vector<opsdk::Tensor> outs,
            const std::vector<std::string>& names, std::vector<opsdk::AttrValue> values) {
  int64_t work = 0;
  for (const auto& t : ins) work += t.numel();
  for (const auto& t : outs) work += t.numel();
  opsdk::CustomOpKernelContext ctx(r.name(), std::move(ins), std::move(present), std::move(outs),
                                   &names, std::move(values));
  std::string error;
  if (work < kReleaseGilElements) {
    error = run_kernel(r, ctx);
  } else {
    py::gil_scoped_release nogil;
    error = run_kernel(r, ctx);
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


// A C++ fast path for the common call: every input a C-contiguous ndarray of a registered
// dtype combination, all of one shape (elementwise ops without a shape function), and
// attributes passed as plain Python values. Anything else goes to the Python executor,
// which checks everything and raises the precise error.
class FastCaller {
 public:
  struct AttrSpec {
    std::string name, type;
    py::object default_value;  // None when required
    py::str key;
  };
  struct Kernel {
    std::vector<int> in_nums;
    size_t index;
    std::vector<py::dtype> out_dtypes;
    std::vector<std::string> attr_order;
    std::vector<const AttrSpec*> attr_specs;
  };

  FastCaller(size_t n_required, size_t n_inputs, const py::list& kernels, const py::list& attrs,
             py::object fallback)
      : n_required_(n_required), n_inputs_(n_inputs), fallback_(std::move(fallback)) {
    for (const auto& k : kernels) {
      auto t = k.cast<py::tuple>();
      Kernel kern;
      for (const auto& d : t[0].cast<py::list>()) kern.in_nums.push_back(d.cast<py::dtype>().num());
      kern.index = t[1].cast<size_t>();
      for (const auto& d : t[2].cast<py::list>()) kern.out_dtypes.push_back(d.cast<py::dtype>());
      kern.attr_order = t[3].cast<std::vector<std::string>>();
      kernels_.push_back(std::move(kern));
    }
    attrs_.reserve(py::len(attrs));  // stable addresses for attr_specs
    for (const auto& a : attrs) {
      auto t = a.cast<py::tuple>();
      attrs_.push_back({t[0].cast<std::string>(), t[1].cast<std::string>(), t[2],
                        py::str(t[0])});
    }
    for (auto& kern : kernels_) {
      for (const auto& name : kern.attr_order) {
        const AttrSpec* found = nullptr;
        for (const auto& a : attrs_)
          if (a.name == name) found = &a;
        if (!found) throw py::value_error("attribute " + name + " is not in the spec");
        kern.attr_specs.push_back(found);
      }
    }
  }

  py::object call(const py::args& args, const py::kwargs& kwargs) {
    const size_t n = py::len(args);
    if (n != n_inputs_ || n < n_required_) return fallback_(*args, **kwargs);
    PyObject* items[8];
    if (n > 8) return fallback_(*args, **kwargs);
    int nums[8];
    for (size_t i = 0; i < n; ++i) {
      PyObject* o = PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i));
      items[i] = o;
      if (!py::isinstance<py::array>(o)) return fallback_(*args, **kwargs);
      const auto& a = py::reinterpret_borrow<py::array>(o);
      if (!(a.flags() & py::array::c_style)) return fallback_(*args, **kwargs);
      nums[i] = a.dtype().num();
      if (i && !same_shape(py::reinterpret_borrow<py::array>(items[0]), a))
        return fallback_(*args, **kwargs);
    }
    const Kernel* k = nullptr;
    for (const auto& cand : kernels_) {
      if (std::equal(cand.in_nums.begin(), cand.in_nums.end(), nums)) {
        k = &cand;
        break;
      }
    }
    if (!k) return fallback_(*args, **kwargs);
    std::vector<opsdk::AttrValue> values;
    if (!resolve_attrs(*k, kwargs, values)) return fallback_(*args, **kwargs);
    const opsdk::OpRegistration& r = *opsdk::registry()[k->index];
    std::vector<opsdk::Tensor> ins;
    ins.reserve(n);
    for (size_t i = 0; i < n; ++i) ins.push_back(make_tensor(items[i], r.inputs()[i], false));
    const auto& a0 = py::reinterpret_borrow<py::array>(items[0]);
    std::vector<py::ssize_t> shape(a0.shape(), a0.shape() + a0.ndim());
    std::vector<opsdk::Tensor> outs;
    py::object result;
    py::tuple many(k->out_dtypes.size() > 1 ? k->out_dtypes.size() : 0);
    for (size_t i = 0; i < k->out_dtypes.size(); ++i) {
      py::array out(k->out_dtypes[i], shape);
      outs.push_back(make_tensor(out, r.outputs()[i], true));
      if (k->out_dtypes.size() == 1) result = std::move(out);
      else many[i] = std::move(out);
    }
    try {
      invoke(r, std::move(ins), std::vector<bool>(n, true), std::move(outs), k->attr_order,
             std::move(values));
    } catch (const std::runtime_error&) {
      return fallback_(*args, **kwargs);  // the Python path re-runs and raises KernelError
    }
    return k->out_dtypes.size() == 1 ? result : py::object(many);
  }

 private:
  static bool same_shape(const py::array& a, const py::array& b) {
    if (a.ndim() != b.ndim()) return false;
    for (py::ssize_t d = 0; d < a.ndim(); ++d)
      if (a.shape(d) != b.shape(d)) return false;
    return true;
  }

  bool resolve_attrs(const Kernel& k, const py::kwargs& kwargs,
                     std::vector<opsdk::AttrValue>& values) const {
    size_t used = 0;
    values.reserve(k.attr_specs.size());
    for (const AttrSpec* spec : k.attr_specs) {
      PyObject* v = PyDict_GetItemWithError(kwargs.ptr(), spec->key.ptr());  // borrowed
      if (v) {
        ++used;
      } else if (PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      } else if (!spec->default_value.is_none()) {
        v = spec->default_value.ptr();
      } else {
        return false;  // required and missing: the Python path explains
      }
      if (!plain_value(v, spec->type)) return false;
      values.push_back(attr_from_py(v, spec->type));
    }
    return used == static_cast<size_t>(PyDict_Size(kwargs.ptr()));
  }

  static bool plain_value(const py::handle& v, const std::string& type) {
    PyObject* o = v.ptr();
    if (type == "float") return PyFloat_CheckExact(o) || PyLong_CheckExact(o);
    if (type == "int") return PyLong_CheckExact(o);
    if (type == "bool") return PyBool_Check(o);
    if (type == "string") return PyUnicode_CheckExact(o);
    if (!PyList_CheckExact(o) && !PyTuple_CheckExact(o)) return false;
    for (const auto& e : v) {
      PyObject* p = e.ptr();
      if (type == "ints" ? !PyLong_CheckExact(p) : !(PyFloat_CheckExact(p) || PyLong_CheckExact(p)))
        return false;
    }
    return true;
  }

  size_t n_required_, n_inputs_;
  std::vector<Kernel> kernels_;
  std::vector<AttrSpec> attrs_;
  py::object fallback_;
};

}  // namespace

PYBIND11_MODULE(_opsdk_kernels, m) {
  m.doc() = "opsdk operator kernels";
  m.def("registrations", [] {
    py::list out;
    for (const auto& r : opsdk::registry()) out.append(describe(*r));
    return out;
  });
  m.def("run", &run, py::arg("index"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs"));
  // module_local: every operator's module has its own FastCaller. pybind11 shares its type
  // registry between modules built with the same compiler and C++ library, and under
  // libc++ (zig's, in manylinux builds) the types of two modules would be taken as one.
  py::class_<FastCaller>(m, "FastCaller", py::module_local())
      .def(py::init<size_t, size_t, const py::list&, const py::list&, py::object>())
      .def("__call__", &FastCaller::call);
  m.def("set_num_threads", [](int n) { opsdk::num_threads_setting() = n > 0 ? n : 1; });
  m.def("get_num_threads", [] { return opsdk::num_threads_setting(); });
}
