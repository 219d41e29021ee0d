// {{ cookiecutter.op_name }} output shapes in C++ (the port of spec.py's shape function, for CANN's
// graph compiler): scale has x's leading dims; y is x's shape with the last dim halved.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string {{ cookiecutter.op_name }}(const Inputs& in, const Attrs&, std::vector<Dims>& out) {
  const Dims& x = *in[0];
  const Dims& ws = *in[1];
  const Dims& as = *in[2];
  const std::string op = "{{ cookiecutter.op_name }}: ";
  if (x.empty()) return op + "input 'x' is a scalar; it needs rank >= 1 (..., 2H)";
  const int64_t d = x.back();
  if (d >= 0 && d % 2 != 0) return op + "input 'x' must have an even last dim (2H)";
  if (ws.size() != 1 || (ws[0] >= 0 && d >= 0 && ws[0] != d)) {
    return op + "input 'weight_scale' must have shape (2H,)";
  }
  Dims lead(x.begin(), x.end() - 1);
  if (as.size() != lead.size()) return op + "input 'activation_scale' must have x's leading dims";
  for (size_t k = 0; k < lead.size(); ++k) {
    if (as[k] >= 0 && lead[k] >= 0 && as[k] != lead[k]) {
      return op + "input 'activation_scale' must have x's leading dims";
    }
  }
  Dims y = lead;
  y.push_back(d >= 0 ? d / 2 : -1);
  out = {lead, y};
  return "";
}
}  // namespace shape
}  // namespace opsdk
