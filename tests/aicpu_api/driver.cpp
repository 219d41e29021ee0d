// Runs one AI CPU kernel registered with REGISTER_CPU_KERNEL through the stand-in API (the
// toolkit's aicpu headers, standin_runtime.h behind them): builds the CpuKernelContext from
// a case file, calls Compute, writes outputs.
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

#include "standin_runtime.h"

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
  aicpu::CpuKernelContext ctx(aicpu::DEVICE);
  using U = aicpu::CpuKernelUtils;
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
      if (path == "-") { U::AddInput(ctx, nullptr); continue; }
      auto buf = std::make_shared<Buffer>();
      buf->path = path;
      buf->bytes.resize(static_cast<size_t>(n) * ElementSize(dtype));
      if (kind == "in") {
        std::ifstream f(path, std::ios::binary);
        f.read(buf->bytes.data(), static_cast<std::streamsize>(buf->bytes.size()));
      }
      auto t = U::MakeTensor(buf->bytes.data(), static_cast<aicpu::DataType>(dtype), dims);
      if (kind == "in") U::AddInput(ctx, t); else U::AddOutput(ctx, t);
      (kind == "in" ? keep : outs).push_back(buf);
    } else if (kind == "attr") {
      std::string name, type;
      int count = 0;
      ls >> name >> type >> count;
      auto a = U::MakeAttr();
      for (int i = 0; i < count; ++i) {
        if (type == "int") { int64_t v; ls >> v; a->SetInt(v); }
        else if (type == "float") { float v; ls >> v; a->SetFloat(v); }
        else if (type == "bool") { bool v; ls >> v; a->SetBool(v); }
        else if (type == "string") { std::string v; ls >> v; a->SetString(v); }
        else if (type == "ints") { int64_t v; ls >> v; a->AddListInt(v); }
        else { float v; ls >> v; a->AddListFloat(v); }
      }
      U::SetAttr(ctx, name, a);
    }
  }
  std::shared_ptr<aicpu::CpuKernel> kernel = U::Kernel(op);
  if (kernel == nullptr) {
    std::cout << "no kernel registered for " << op << std::endl;
    return 3;
  }
  const uint32_t status = kernel->Compute(ctx);
  for (auto& b : outs) {
    std::ofstream f(b->path, std::ios::binary);
    f.write(b->bytes.data(), static_cast<std::streamsize>(b->bytes.size()));
  }
  std::cout << "status " << status << std::endl;
  return 0;
}
