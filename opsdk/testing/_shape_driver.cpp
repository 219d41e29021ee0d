// opsdk's driver of one operator's C++ shape function, the one CANN's InferShape calls
// (operators/<op>/shape.h, or NumPy broadcasting for an elementwise operator). opsdk test and
// opsdk check compile it (cached) and run it on every generated case.
//
// One case a line on stdin: `in RANK D0 D1 ...` per input (`in -1` for an absent one), then
// attributes: `int NAME V`, `ints NAME N V...`, `float NAME V`, `floats NAME N V...`,
// `string NAME xHEX`. One answer a line on stdout: `ok RANK D0 ...;RANK D0 ...;` or
// `error MESSAGE`.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "opsdk/shape_fn.h"
#include "op_shape.h"  // the operator's shape.h (empty for an elementwise one)

static double number(const std::string& word) { return std::strtod(word.c_str(), nullptr); }

static std::string unhex(const std::string& word) {
  std::string out;
  for (size_t i = 1; i + 1 < word.size(); i += 2) {
    out.push_back(static_cast<char>(std::strtol(word.substr(i, 2).c_str(), nullptr, 16)));
  }
  return out;
}

static void read_attr(const std::string& kind, std::istringstream& ls,
                      opsdk::shape::Attrs& attrs) {
  std::string name, word;
  ls >> name;
  if (kind == "string") {
    ls >> word;
    attrs.set(name, unhex(word));
    return;
  }
  size_t n = 1;
  if (kind == "ints" || kind == "floats") ls >> n;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  for (size_t k = 0; k < n && ls >> word; ++k) {
    if (kind == "int" || kind == "ints") ints.push_back(std::strtoll(word.c_str(), nullptr, 10));
    else floats.push_back(number(word));
  }
  if (kind == "int") attrs.set(name, ints.empty() ? int64_t{0} : ints[0]);
  else if (kind == "ints") attrs.set(name, ints);
  else if (kind == "float") attrs.set(name, floats.empty() ? 0.0 : floats[0]);
  else attrs.set(name, floats);
}

static std::string infer(std::vector<opsdk::shape::Dims>& dims, const std::vector<bool>& present,
                         const opsdk::shape::Attrs& attrs, std::vector<opsdk::shape::Dims>& out) {
  opsdk::shape::Inputs in;
  for (size_t i = 0; i < dims.size(); ++i) in.push_back(present[i] ? &dims[i] : nullptr);
  (void)attrs;
#ifdef OPSDK_SHAPE_BROADCAST  // elementwise: -DOPSDK_SHAPE_BROADCAST=<outputs>
  return opsdk::shape::Broadcast(in, OPSDK_SHAPE_BROADCAST, out);
#else  // -DOPSDK_SHAPE_OP=<op type>
  return opsdk::shape::OPSDK_SHAPE_OP(in, attrs, out);
#endif
}

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream ls(line);
    std::vector<opsdk::shape::Dims> dims;
    std::vector<bool> present;
    opsdk::shape::Attrs attrs;
    std::string word;
    while (ls >> word) {
      if (word == "in") {
        int64_t rank = 0;
        ls >> rank;
        present.push_back(rank >= 0);
        dims.emplace_back(static_cast<size_t>(rank < 0 ? 0 : rank));
        for (auto& d : dims.back()) ls >> d;
      } else {
        read_attr(word, ls, attrs);
      }
    }
    std::vector<opsdk::shape::Dims> out;
    const std::string error = infer(dims, present, attrs, out);
    if (!error.empty()) {
      std::cout << "error " << error << std::endl;
      continue;
    }
    std::cout << "ok ";
    for (const auto& o : out) {
      std::cout << o.size();
      for (auto d : o) std::cout << " " << d;
      std::cout << ";";
    }
    std::cout << std::endl;
  }
  return 0;
}
