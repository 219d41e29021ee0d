// {{ cookiecutter.op_name }} output shape in C++ (the port of spec.py's shape function, for CANN's
// graph compiler): Y like X, after checking axis, stash_type and scale.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string {{ cookiecutter.op_name }}(const Inputs& in, const Attrs& attrs, std::vector<Dims>& out) {
  const Dims& x = *in[0];
  const Dims& scale = *in[1];
  const std::string op = "{{ cookiecutter.op_name }}: ";
  if (attrs.i("stash_type") != 1) return op + "attribute 'stash_type' must be 1 (float32 statistics)";
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) return op + "input 'x' is a scalar; it needs rank >= 1";
  const int64_t axis = attrs.i("axis");
  if (axis < -rank || axis >= rank) {
    return op + "attribute 'axis' is " + std::to_string(axis) + ", out of range for input 'x' of rank " +
           std::to_string(rank);
  }
  const int64_t a = (axis + rank) % rank;
  const int64_t norm_rank = rank - a, srank = static_cast<int64_t>(scale.size());
  if (srank > norm_rank) return op + "input 'scale' does not broadcast to X.shape[axis:]";
  for (int64_t k = 0; k < srank; ++k) {
    const int64_t s = scale[static_cast<size_t>(srank - 1 - k)];
    const int64_t n = x[static_cast<size_t>(rank - 1 - k)];
    if (s != 1 && s >= 0 && n >= 0 && s != n) {
      return op + "input 'scale' does not broadcast to X.shape[axis:]";
    }
  }
  out = {x};
  return "";
}
}  // namespace shape
}  // namespace opsdk
