// Runs one AI CPU kernel registered with REGISTER_CPU_KERNEL through the stand-in API of
// cpu_kernel.h: builds the CpuKernelContext from a case file, calls Compute, writes outputs.
//
//   driver <case file>
//   op <CANN op type>
//   in <aicpu dtype number> <rank> <dims...> <raw file | ->     ("-": optional input absent)
//   out <aicpu dtype number> <rank> <dims...> <raw file>
//   attr <name> int|float|bool|string|ints|floats <count> <values...>
// Prints "status <Compute's return value>".
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cpu_kernel.h"

namespace {
size_t ElementSize(int dtype) {
  switch (dtype) {
    case aicpu::DT_FLOAT: case aicpu::DT_INT32: return 4;
    case aicpu::DT_FLOAT16: case aicpu::DT_BFLOAT16: case aicpu::DT_INT16: return 2;
    case aicpu::DT_DOUBLE: case aicpu::DT_INT64: return 8;
    default: return 1;
  }
}

struct Buffer {
  std::vector<char> bytes;
  std::string path;
};
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::ifstream in(argv[1]);
  aicpu::CpuKernelContext ctx;
  std::string op, line;
  std::vector<std::shared_ptr<Buffer>> outs;
  std::vector<std::shared_ptr<Buffer>> keep;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string kind;
    ls >> kind;
    if (kind == "op") {
      ls >> op;
    } else if (kind == "in" || kind == "out") {
      int dtype = 0, rank = 0;
      ls >> dtype >> rank;
      std::vector<int64_t> dims(rank);
      int64_t n = 1;
      for (auto& d : dims) { ls >> d; n *= d; }
      std::string path;
      ls >> path;
      if (path == "-") { ctx.inputs.push_back(nullptr); continue; }
      auto buf = std::make_shared<Buffer>();
      buf->path = path;
      buf->bytes.resize(static_cast<size_t>(n) * ElementSize(dtype));
      if (kind == "in") {
        std::ifstream f(path, std::ios::binary);
        f.read(buf->bytes.data(), static_cast<std::streamsize>(buf->bytes.size()));
      }
      auto t = std::make_shared<aicpu::Tensor>(buf->bytes.data(),
                                               static_cast<aicpu::DataType>(dtype), dims);
      (kind == "in" ? ctx.inputs : ctx.outputs).push_back(t);
      (kind == "in" ? keep : outs).push_back(buf);
    } else if (kind == "attr") {
      std::string name, type;
      int count = 0;
      ls >> name >> type >> count;
      auto a = std::make_shared<aicpu::AttrValue>();
      for (int i = 0; i < count; ++i) {
        if (type == "int") ls >> a->i;
        else if (type == "float") ls >> a->f;
        else if (type == "bool") ls >> a->b;
        else if (type == "string") ls >> a->s;
        else if (type == "ints") { int64_t v; ls >> v; a->ints.push_back(v); }
        else { float v; ls >> v; a->floats.push_back(v); }
      }
      ctx.attrs[name] = a;
    }
  }
  auto it = aicpu::Registry().find(op);
  if (it == aicpu::Registry().end()) {
    std::cout << "no kernel registered for " << op << std::endl;
    return 3;
  }
  const uint32_t status = it->second()->Compute(ctx);
  for (auto& b : outs) {
    std::ofstream f(b->path, std::ios::binary);
    f.write(b->bytes.data(), static_cast<std::streamsize>(b->bytes.size()));
  }
  std::cout << "status " << status << std::endl;
  return 0;
}
