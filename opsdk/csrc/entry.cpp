// The one generic pybind11 entry point linked into every operator module.
// Compiled once per toolchain configuration and reused by every operator build.
//
// Python selects the registration (by op name and input dtypes) and allocates outputs;
// this file wraps the NumPy buffers in opsdk::Tensor views without copying, converts
// attributes, releases the GIL and calls the kernel. C++ exceptions come back as
// RuntimeError("<op>: <message>"), which opsdk re-raises as KernelError.
#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "opsdk/custom_op.h"

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
  opsdk::CustomOpKernelContext ctx(r.name(), std::move(ins), std::move(present), std::move(outs),
                                   std::move(names), std::move(values));
  std::string error;
  {
    py::gil_scoped_release nogil;
    try {
      r.kernel()(ctx);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "std::exception with an empty message";
    } catch (...) {
      error = "unknown C++ exception";
    }
  }
  if (!error.empty()) throw std::runtime_error(r.name() + ": " + error);
}

}  // namespace

PYBIND11_MODULE(_opsdk_kernels, m) {
  m.doc() = "opsdk operator kernels";
  m.def("registrations", [] {
    py::list out;
    for (const auto& r : opsdk::registry()) out.append(describe(*r));
    return out;
  });
  m.def("run", &run, py::arg("index"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs"));
  m.def("set_num_threads", [](int n) { opsdk::num_threads_setting() = n > 0 ? n : 1; });
  m.def("get_num_threads", [] { return opsdk::num_threads_setting(); });
}
