// The module's side of opsdk/kernel_abi.h: a registration's kernel run through plain C
// structs, for callers in other shared libraries (the torch dispatcher extension).
// Part of opsdk's pybind11 entry point (csrc/entry.cpp includes it once).
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "opsdk/invoke.h"
#include "opsdk/kernel_abi.h"

namespace py = pybind11;

namespace {

opsdk::AttrValue abi_attr_value(const opsdk_abi_attr& a) {
  switch (a.type) {
    case OPSDK_ABI_INT: return a.i;
    case OPSDK_ABI_FLOAT: return a.f;
    case OPSDK_ABI_BOOL: return a.i != 0;
    case OPSDK_ABI_STRING: return std::string(a.s ? a.s : "");
    case OPSDK_ABI_INTS: return std::vector<int64_t>(a.ints, a.ints + a.n);
    default: return std::vector<double>(a.floats, a.floats + a.n);
  }
}

std::vector<opsdk::ArgDecl> by_index(std::vector<opsdk::ArgDecl> v) {
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return v;
}

opsdk::Tensor abi_tensor(const opsdk_abi_tensor& t, const opsdk::ArgDecl& decl, bool writable) {
  std::vector<int64_t> shape(t.shape, t.shape + (t.data ? t.ndim : 0));
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= shape[d];
  }
  return opsdk::Tensor(t.data, static_cast<opsdk::DType>(t.dtype), std::move(shape),
                       std::move(strides), decl.name, writable);
}

std::string abi_run(size_t index, const opsdk_abi_tensor* inputs, size_t n_inputs,
                    const opsdk_abi_tensor* outputs, size_t n_outputs,
                    const opsdk_abi_attr* attrs, size_t n_attrs) {
  const auto& regs = opsdk::registry();
  if (index >= regs.size()) return "no registration " + std::to_string(index);
  const opsdk::OpRegistration& r = *regs[index];
  const auto in_decl = by_index(r.inputs());
  const auto out_decl = by_index(r.outputs());
  if (n_inputs != in_decl.size() || n_outputs != out_decl.size())
    return r.name() + ": called with " + std::to_string(n_inputs) + " inputs and " +
           std::to_string(n_outputs) + " outputs, the registration has " +
           std::to_string(in_decl.size()) + " and " + std::to_string(out_decl.size());
  std::vector<opsdk::Tensor> ins, outs;
  std::vector<bool> present;
  for (size_t i = 0; i < n_inputs; ++i) {
    ins.push_back(abi_tensor(inputs[i], in_decl[i], false));
    present.push_back(inputs[i].data != nullptr);
  }
  for (size_t i = 0; i < n_outputs; ++i) outs.push_back(abi_tensor(outputs[i], out_decl[i], true));
  std::vector<std::string> names;
  std::vector<opsdk::AttrValue> values;
  for (size_t i = 0; i < n_attrs; ++i) {
    names.emplace_back(attrs[i].name);
    values.push_back(abi_attr_value(attrs[i]));
  }
  opsdk::CustomOpKernelContext ctx(r.name(), std::move(ins), std::move(present), std::move(outs),
                                   &names, std::move(values));
  const std::string error = opsdk::detail::run_kernel(r, ctx);
  return error.empty() ? error : r.name() + ": " + error;
}

int opsdk_abi_run(size_t index, const opsdk_abi_tensor* inputs, size_t n_inputs,
                             const opsdk_abi_tensor* outputs, size_t n_outputs,
                             const opsdk_abi_attr* attrs, size_t n_attrs, char* error,
                             size_t error_size) {
  std::string message;
  try {
    message = abi_run(index, inputs, n_inputs, outputs, n_outputs, attrs, n_attrs);
  } catch (const std::exception& e) {
    message = e.what();
  }
  if (message.empty()) return 0;
  if (error && error_size) {
    const size_t n = std::min(message.size(), error_size - 1);
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return 1;
}

// `kernel_abi()`: a capsule over the module's opsdk_kernel_abi (valid while it is loaded).
py::capsule kernel_abi() {
  static const opsdk_kernel_abi abi = {OPSDK_KERNEL_ABI_VERSION, &opsdk_abi_run};
  return py::capsule(const_cast<opsdk_kernel_abi*>(&abi), OPSDK_KERNEL_ABI_CAPSULE);
}

}  // namespace
