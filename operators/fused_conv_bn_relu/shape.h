// FusedConvBnRelu output shape in C++ (the port of spec.py's shape function, for CANN's
// graph compiler): (N, C, H, W), (M, C/group, kH, kW) -> (N, M, OH, OW), as ONNX Conv.
#pragma once

#include "opsdk/shape_fn.h"

namespace opsdk {
namespace shape {
namespace fused_conv_bn_relu {
// One spatial output dim; -1 stays unknown. Sets `error` when the kernel does not fit.
inline int64_t OutDim(int64_t size, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                      const char* axis, std::string& error) {
  if (size < 0 || k < 0) return -1;
  const int64_t extent = dilation * (k - 1) + 1;
  if (size + pad < extent) {
    error = std::string("FusedConvBnRelu: input 'x' ") + axis + " (padded) is smaller than the "
            "dilated kernel extent " + std::to_string(extent);
    return -1;
  }
  return (size + pad - extent) / stride + 1;
}
}  // namespace fused_conv_bn_relu

inline std::string FusedConvBnRelu(const Inputs& in, const Attrs& attrs, std::vector<Dims>& out) {
  const Dims& x = *in[0];
  const Dims& w = *in[1];
  if (x.size() != 4 || w.size() != 4) {
    return "FusedConvBnRelu: inputs 'x' and 'w' must have rank 4 (NCHW, MCkHkW)";
  }
  const Dims s = attrs.ints("strides"), p = attrs.ints("pads"), d = attrs.ints("dilations");
  const int64_t group = attrs.i("group");
  if (s.size() != 2 || p.size() != 4 || d.size() != 2 || group < 1) {
    return "FusedConvBnRelu: strides and dilations need 2 ints, pads 4, group >= 1";
  }
  if (x[1] >= 0 && w[1] >= 0 && x[1] != w[1] * group) {
    return "FusedConvBnRelu: input 'w' has " + std::to_string(w[1]) +
           " input channels per group, expected C / group = " + std::to_string(x[1]) + " / " +
           std::to_string(group);
  }
  if (in.size() > 2 && in[2] != nullptr && (in[2]->size() != 1 ||
                                            ((*in[2])[0] >= 0 && w[0] >= 0 && (*in[2])[0] != w[0]))) {
    return "FusedConvBnRelu: input 'b' must have shape (M,), one bias per output channel";
  }
  std::string error;
  const int64_t oh = fused_conv_bn_relu::OutDim(x[2], w[2], s[0], p[0] + p[2], d[0], "H", error);
  const int64_t ow = fused_conv_bn_relu::OutDim(x[3], w[3], s[1], p[1] + p[3], d[1], "W", error);
  out = {{x[0], w[0], oh, ow}};
  return error;
}
}  // namespace shape
}  // namespace opsdk
