// {{ cookiecutter.op_name }} output shapes in C++ (the port of spec.py's shape function, for CANN's
// graph compiler): y and x like x1; rstd keeps x1's leading dims and 1 for the last.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string {{ cookiecutter.op_name }}(const Inputs& in, const Attrs&, std::vector<Dims>& out) {
  const Dims& x1 = *in[0];
  const Dims& x2 = *in[1];
  const Dims& gamma = *in[2];
  if (x1.empty()) return "{{ cookiecutter.op_name }}: input 'x1' is a scalar; it needs rank >= 1 (..., D)";
  if (x2.size() != x1.size()) return "{{ cookiecutter.op_name }}: input 'x2' must have x1's shape";
  for (size_t k = 0; k < x1.size(); ++k) {
    if (x1[k] >= 0 && x2[k] >= 0 && x1[k] != x2[k]) {
      return "{{ cookiecutter.op_name }}: input 'x2' must have x1's shape";
    }
  }
  const int64_t d = x1.back();
  if (gamma.size() != 1 || (gamma[0] != d && gamma[0] >= 0 && d >= 0)) {
    return "{{ cookiecutter.op_name }}: input 'gamma' must have shape (D,) with D = x1's last dim";
  }
  Dims rstd(x1.begin(), x1.end() - 1);
  rstd.push_back(1);
  out = {x1, rstd, x1};
  return "";
}
}  // namespace shape
}  // namespace opsdk
