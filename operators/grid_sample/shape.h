// GridSample output shape in C++ (the port of spec.py's shape function, for CANN's graph
// compiler): (N, C, *in), (N, *out, r) -> (N, C, *out).
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string GridSample(const Inputs& in, const Attrs& attrs, std::vector<Dims>& out) {
  const Dims& x = *in[0];
  const Dims& grid = *in[1];
  if (x.size() != 4 && x.size() != 5) {
    return "GridSample: input 'x' has rank " + std::to_string(x.size()) +
           ", expected 4 (N, C, H, W) or 5 (N, C, D, H, W)";
  }
  const int64_t r = static_cast<int64_t>(x.size()) - 2;
  if (grid.size() != x.size() || (grid.back() >= 0 && grid.back() != r)) {
    return "GridSample: input 'grid' must have rank " + std::to_string(x.size()) +
           " with a last axis of " + std::to_string(r);
  }
  if (x[0] >= 0 && grid[0] >= 0 && x[0] != grid[0]) {
    return "GridSample: input 'grid' has batch " + std::to_string(grid[0]) + ", expected " +
           std::to_string(x[0]) + " (the batch of 'x')";
  }
  const int64_t align = attrs.i("align_corners");
  if (align != 0 && align != 1) return "GridSample: attribute 'align_corners' must be 0 or 1";
  Dims y = {x[0], x[1]};
  y.insert(y.end(), grid.begin() + 1, grid.end() - 1);
  out = {y};
  return "";
}
}  // namespace shape
}  // namespace opsdk
