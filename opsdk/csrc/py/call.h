// Running one registration's kernel from Python: the checked path's `run` and the
// GIL-aware `invoke` it shares with the fast path.
// Part of opsdk's pybind11 entry point (csrc/entry.cpp includes it once).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "opsdk/invoke.h"
#include "convert.h"
#include "interrupt.h"

namespace py = pybind11;

namespace {

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

}  // namespace
