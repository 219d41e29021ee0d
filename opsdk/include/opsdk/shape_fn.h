// opsdk shape functions in C++: the output shapes of an operator from its input shapes and
// attributes, with nothing but the standard library, so CANN's graph compiler can call them
// (the AI CPU op proto's inference and op_host's InferShape are generated around them).
//
// Elementwise operators need nothing: their outputs broadcast the present inputs
// (opsdk::shape::Broadcast). Any other operator ports the shape function of its spec.py
// (@SPEC.register_shape) to operators/<op>/shape.h:
//
//   #include "opsdk/shape_fn.h"
//   namespace opsdk { namespace shape {
//   // Returns "" and fills `out` (one Dims per output), or says what is wrong.
//   inline std::string MyOp(const Inputs& in, const Attrs& attrs, std::vector<Dims>& out) {
//     if (in[0]->size() != 2) return "input 'x' must have rank 2";
//     out = {{(*in[0])[0], attrs.i("k")}};
//     return "";
//   }
//   }}  // namespace opsdk::shape
//
// A dim of -1 is unknown (a dynamic shape): keep it unknown in the outputs it reaches.
// opsdk's tests run the C++ function against the Python one on every validation case.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace opsdk {
namespace shape {

using Dims = std::vector<int64_t>;
// The input shapes in the spec's order; nullptr for an optional input the node does not have.
using Inputs = std::vector<const Dims*>;

// The node's attributes by name (every attribute of the spec, defaults filled in).
class Attrs {
 public:
  void set(const std::string& name, int64_t v) { ints_[name] = {v}; }
  void set(const std::string& name, double v) { floats_[name] = {v}; }
  void set(const std::string& name, bool v) { ints_[name] = {v ? 1 : 0}; }
  void set(const std::string& name, const std::string& v) { strings_[name] = v; }
  void set(const std::string& name, const std::vector<int64_t>& v) { ints_[name] = v; }
  void set(const std::string& name, const std::vector<double>& v) { floats_[name] = v; }

  int64_t i(const std::string& name) const { return one(ints_, name, int64_t{0}); }
  double f(const std::string& name) const { return one(floats_, name, 0.0); }
  bool b(const std::string& name) const { return i(name) != 0; }
  std::string s(const std::string& name) const {
    auto it = strings_.find(name);
    return it == strings_.end() ? std::string() : it->second;
  }
  std::vector<int64_t> ints(const std::string& name) const { return all(ints_, name); }
  std::vector<double> floats(const std::string& name) const { return all(floats_, name); }

 private:
  template <class T>
  static T one(const std::map<std::string, std::vector<T>>& m, const std::string& name, T dflt) {
    auto it = m.find(name);
    return it == m.end() || it->second.empty() ? dflt : it->second.front();
  }
  template <class T>
  static std::vector<T> all(const std::map<std::string, std::vector<T>>& m,
                            const std::string& name) {
    auto it = m.find(name);
    return it == m.end() ? std::vector<T>() : it->second;
  }
  std::map<std::string, std::vector<int64_t>> ints_;
  std::map<std::string, std::vector<double>> floats_;
  std::map<std::string, std::string> strings_;
};

// NumPy broadcasting of the present inputs into `n_outputs` equal shapes (elementwise ops).
inline std::string Broadcast(const Inputs& in, size_t n_outputs, std::vector<Dims>& out) {
  Dims acc;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] == nullptr) continue;
    const Dims& d = *in[k];
    const size_t rank = d.size() > acc.size() ? d.size() : acc.size();
    Dims next(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t a = i + acc.size() >= rank ? acc[i + acc.size() - rank] : 1;
      const int64_t b = i + d.size() >= rank ? d[i + d.size() - rank] : 1;
      if (a == b || b == 1) {
        next[i] = a;
      } else if (a == 1) {
        next[i] = b;
      } else if (a < 0 || b < 0) {
        next[i] = a < 0 ? b : a;  // an unknown dim broadcast with a known one > 1 is that one
      } else {
        return "input " + std::to_string(k) + " does not broadcast with the inputs before it";
      }
    }
    acc = next;
  }
  out.assign(n_outputs, acc);
  return "";
}

}  // namespace shape
}  // namespace opsdk
