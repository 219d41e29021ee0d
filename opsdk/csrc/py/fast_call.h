// The fast call path: `op(*inputs, **attrs)` through vectorcall, straight to the kernel.
// Part of opsdk's pybind11 entry point (csrc/entry.cpp includes it once).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "opsdk/custom_op.h"
#include "call.h"
#include "output_pool.h"

namespace py = pybind11;

namespace {

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
// checked path's own SpecError, raised as is. An exception from the kernel is handed to
// `on_error` (the executor's KernelError, so the kernel runs once); anything else the fast
// path does not take (other arguments) goes to the Python executor, which checks everything
// and raises the precise error.
constexpr Py_ssize_t kMaxFastInputs = 8;
constexpr const char* kCallerCapsule = "opsdk.fast_caller";
constexpr size_t kMaxPlans = 16;  // output-shape plans kept per operator (oldest replaced)

class FastCaller {
 public:
  FastCaller(size_t n_required, size_t n_inputs, const py::list& kernels, const py::list& attrs,
             py::object fallback, py::object planner, py::object on_error)
      : n_required_(n_required), n_inputs_(n_inputs), fallback_(std::move(fallback)),
        planner_(std::move(planner)), on_error_(std::move(on_error)) {
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
    } catch (const std::runtime_error& e) {
      if (on_error_.is_none()) return fallback(args, n, kwnames);  // re-runs, raises there
      return kernel_failed(e.what());
    }
    if (n_out == 1) return py::object(results[0]).release().ptr();
    return results.release().ptr();
  }

  size_t n_required_, n_inputs_;
  std::vector<Kernel> kernels_;
  std::vector<AttrSpec> attrs_;
  // The kernel threw: on_error_(message) raises the executor's KernelError. nullptr with
  // that error set.
  PyObject* kernel_failed(const char* what) const {
    PyObject* message = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)),
                                             "replace");
    if (!message) return nullptr;
    PyObject* r = PyObject_CallOneArg(on_error_.ptr(), message);
    Py_DECREF(message);
    if (r) {  // on_error returned instead of raising
      Py_DECREF(r);
      PyErr_SetString(PyExc_RuntimeError, what);
    }
    return nullptr;
  }

  py::object fallback_, planner_;  // planner_: None for elementwise ops
  py::object on_error_;            // None: kernel errors take the fallback
  const Kernel* last_ = nullptr;
  std::vector<Plan> plans_;
  size_t next_plan_ = 0;
};

// The callable behind Operator.__call__: a builtin function (vectorcall) bound to a capsule
// that owns the FastCaller.
py::object fast_caller(size_t n_required, size_t n_inputs, const py::list& kernels,
                       const py::list& attrs, py::object fallback, py::object planner,
                       py::object on_error) {
  static PyMethodDef def = {
      "opsdk_call",
      reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&FastCaller::entry)),
      METH_FASTCALL | METH_KEYWORDS, "op(*inputs, **attrs): run the kernel"};
  auto* fc = new FastCaller(n_required, n_inputs, kernels, attrs, std::move(fallback),
                            std::move(planner), std::move(on_error));
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

}  // namespace
