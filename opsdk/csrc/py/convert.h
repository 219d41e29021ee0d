// Python <-> opsdk conversions of the checked path: a registration described as a dict,
// a NumPy array viewed as an opsdk::Tensor (no copy), a Python value as an attribute.
// Part of opsdk's pybind11 entry point (csrc/entry.cpp includes it once).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

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
  py::list columns;  // Kernels<...> columns still waiting for declare_spec
  for (const auto& c : r.pending_columns()) columns.append(py::cast(c.dtypes));
  d["columns"] = columns;
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

// `module.declare_spec(op, type_vars, inputs, outputs, attrs)`: spec.py's facts for the
// Kernels<...> registrations (inputs/outputs: (name, type, optional); attrs: (name, type,
// has_default, default)). Returns the number of registrations declared.
size_t declare_spec(const std::string& op, const std::vector<std::string>& type_vars,
                    const py::list& inputs, const py::list& outputs, const py::list& attrs) {
  opsdk::SpecDecl d{op, type_vars, {}, {}, {}};
  auto args = [](const py::list& v, std::vector<opsdk::SpecArg>& out) {
    for (const auto& a : v) {
      auto t = a.cast<py::tuple>();
      out.push_back({t[0].cast<std::string>(), t[1].cast<std::string>(), t[2].cast<bool>()});
    }
  };
  args(inputs, d.inputs);
  args(outputs, d.outputs);
  for (const auto& a : attrs) {
    auto t = a.cast<py::tuple>();
    const auto type = t[1].cast<std::string>();
    const bool has_default = t[2].cast<bool>();
    d.attrs.push_back({t[0].cast<std::string>(), type, has_default,
                       has_default ? attr_from_py(t[3], type) : opsdk::AttrValue{}});
  }
  return opsdk::declare_spec(d);
}

}  // namespace
