// LayerNormalization output shapes in C++ (the port of spec.py's shape function, for CANN's
// graph compiler): Y like X; Mean and InvStdDev keep X's leading dims and 1 for the others.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string LayerNormalization(const Inputs& in, const Attrs& attrs,
                                      std::vector<Dims>& out) {
  const Dims& x = *in[0];
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) return "LayerNormalization: input 'X' is a scalar; it needs rank >= 1";
  if (attrs.i("stash_type") != 1) {
    return "LayerNormalization: attribute 'stash_type' must be 1 (float32 statistics)";
  }
  const int64_t axis = attrs.i("axis");
  if (axis < -rank || axis >= rank) {
    return "LayerNormalization: attribute 'axis' is " + std::to_string(axis) +
           ", out of range for input 'X' of rank " + std::to_string(rank);
  }
  const int64_t a = (axis + rank) % rank;
  Dims stats(x.begin(), x.begin() + a);
  stats.resize(static_cast<size_t>(rank), 1);
  out = {x, stats, stats};
  return "";
}
}  // namespace shape
}  // namespace opsdk
