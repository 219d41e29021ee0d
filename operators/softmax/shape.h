// Softmax output shape in C++ (the port of spec.py's shape function, for CANN's graph
// compiler): the input's shape; checks that 'axis' is in range.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string Softmax(const Inputs& in, const Attrs& attrs, std::vector<Dims>& out) {
  const int64_t rank = static_cast<int64_t>(in[0]->size());
  const int64_t axis = attrs.i("axis");
  if (axis < -rank || axis >= rank) {
    return "Softmax: attribute 'axis' is " + std::to_string(axis) +
           ", out of range for input 'input' of rank " + std::to_string(rank);
  }
  out = {*in[0]};
  return "";
}
}  // namespace shape
}  // namespace opsdk
