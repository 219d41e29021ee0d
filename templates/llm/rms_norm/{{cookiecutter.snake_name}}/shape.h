// {{ cookiecutter.op_name }} output shapes in C++ (the port of spec.py's shape function, for CANN's
// graph compiler): y like x; rstd keeps x's leading dims and 1 for the last.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string {{ cookiecutter.op_name }}(const Inputs& in, const Attrs&, std::vector<Dims>& out) {
  const Dims& x = *in[0];
  const Dims& gamma = *in[1];
  if (x.empty()) return "{{ cookiecutter.op_name }}: input 'x' is a scalar; it needs rank >= 1 (..., D)";
  const int64_t d = x.back();
  if (gamma.size() != 1 || (gamma[0] != d && gamma[0] >= 0 && d >= 0)) {
    return "{{ cookiecutter.op_name }}: input 'gamma' must have shape (D,) with D = x's last dim";
  }
  Dims rstd(x.begin(), x.end() - 1);
  rstd.push_back(1);
  out = {x, rstd};
  return "";
}
}  // namespace shape
}  // namespace opsdk
