// {{ cookiecutter.op_name }} output shape in C++ (the port of spec.py's shape function, for CANN's
// graph compiler): y like x, after checking that cos and sin fit it.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
inline std::string {{ cookiecutter.op_name }}(const Inputs& in, const Attrs& attrs, std::vector<Dims>& out) {
  const Dims& x = *in[0];
  const Dims& cos = *in[1];
  const Dims& sin = *in[2];
  const std::string op = "{{ cookiecutter.op_name }}: ";
  const int64_t interleaved = attrs.i("interleaved");
  if (interleaved != 0 && interleaved != 1) return op + "attribute 'interleaved' must be 0 or 1";
  if (x.empty() || cos.empty()) return op + "inputs 'x' and 'cos' need rank >= 1";
  if (sin != cos) return op + "input 'sin' must have cos's shape";
  const int64_t r = cos.back(), d = x.back();
  if (r >= 0 && (r % 2 != 0 || (d >= 0 && r > d))) {
    return op + "input 'cos' must have an even last dim <= x's last dim";
  }
  if (cos.size() > x.size()) return op + "input 'cos' has a higher rank than x";
  const size_t shift = x.size() - cos.size();
  for (size_t k = 0; k + 1 < cos.size(); ++k) {
    const int64_t c = cos[k], n = x[k + shift];
    if (c != 1 && c >= 0 && n >= 0 && c != n) {
      return op + "the leading dims of input 'cos' do not broadcast to x's";
    }
  }
  out = {x};
  return "";
}
}  // namespace shape
}  // namespace opsdk
