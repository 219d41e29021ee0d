// A Python-free driver of opsdk kernels: runs a batch of cases through opsdk::invoke.
//
//   harness CASES OUTPUTS
//
// Linked with an operator's kernel.cpp and runtime.cpp, it is how opsdk checks a kernel
// built for another machine (aarch64, the NPU's AI CPU) under an emulator: Python writes
// the operator's validation cases to CASES, one run of this program computes every case,
// and Python judges OUTPUTS against the NumPy reference (opsdk.runtime.cross).
//
// Both files are little-endian binary streams; strings are u32 length + bytes.
//   CASES:   "OPSDKH1\n" u32 n_cases, then per case:
//            str op; u32 n_in, per input: u8 present [str dtype, u32 ndim, i64 shape[ndim],
//            i64 strides[ndim] (elements), u64 nbytes, bytes]; u32 n_out, per output:
//            str dtype, u32 ndim, i64 shape[ndim]; u32 n_attr, per attribute: str name,
//            u8 kind (0 int, 1 float, 2 bool, 3 string, 4 ints, 5 floats), value
//            (i64 | f64 | u8 | str | u32 n + n i64 | u32 n + n f64)
//   OUTPUTS: "OPSDKR1\n" u32 n_cases, then per case: u8 ok; ok: per output u64 nbytes,
//            bytes; not ok: str error
// Exit status: 0 when the batch was read and every result written (a case whose kernel
// threw is reported in OUTPUTS, not by the status), 2 on a malformed file or I/O error.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "opsdk/invoke.h"

namespace {

class Reader {
 public:
  explicit Reader(std::FILE* f) : f_(f) {}
  void bytes(void* dst, size_t n) {
    if (n && std::fread(dst, 1, n, f_) != n) throw std::runtime_error("truncated case file");
  }
  template <class T> T pod() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }
  std::string str() {
    std::string s(pod<uint32_t>(), '\0');
    bytes(s.data(), s.size());
    return s;
  }
  std::vector<int64_t> dims(uint32_t n) {
    std::vector<int64_t> v(n);
    bytes(v.data(), n * sizeof(int64_t));
    return v;
  }

 private:
  std::FILE* f_;
};

class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) {}
  void bytes(const void* src, size_t n) {
    if (n && std::fwrite(src, 1, n, f_) != n) throw std::runtime_error("cannot write outputs");
  }
  template <class T> void pod(T v) { bytes(&v, sizeof v); }
  void str(const std::string& s) {
    pod(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }

 private:
  std::FILE* f_;
};

opsdk::DType dtype(const std::string& name) {
  const opsdk::DType d = opsdk::dtype_from_name(name);
  if (d == opsdk::DType::Invalid) throw std::runtime_error("unknown dtype " + name);
  return d;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

opsdk::AttrValue read_attr(Reader& in) {
  switch (in.pod<uint8_t>()) {
    case 0: return in.pod<int64_t>();
    case 1: return in.pod<double>();
    case 2: return in.pod<uint8_t>() != 0;
    case 3: return in.str();
    case 4: return in.dims(in.pod<uint32_t>());
    case 5: {
      std::vector<double> v(in.pod<uint32_t>());
      in.bytes(v.data(), v.size() * sizeof(double));
      return v;
    }
    default: throw std::runtime_error("unknown attribute kind");
  }
}

// One case: its buffers own the data the RawTensors point into.
struct Case {
  std::string op;
  std::vector<std::vector<char>> buffers;
  std::vector<opsdk::RawTensor> inputs, outputs;
  std::vector<opsdk::NamedAttr> attrs;
};

void read_case(Reader& in, Case& c) {
  c.op = in.str();
  const uint32_t n_in = in.pod<uint32_t>();
  for (uint32_t i = 0; i < n_in; ++i) {
    opsdk::RawTensor t;
    t.present = in.pod<uint8_t>() != 0;
    if (t.present) {
      t.dtype = dtype(in.str());
      const uint32_t nd = in.pod<uint32_t>();
      t.shape = in.dims(nd);
      t.strides = in.dims(nd);
      c.buffers.emplace_back(in.pod<uint64_t>());
      in.bytes(c.buffers.back().data(), c.buffers.back().size());
      t.data = c.buffers.back().data();
    }
    c.inputs.push_back(std::move(t));
  }
  const uint32_t n_out = in.pod<uint32_t>();
  for (uint32_t i = 0; i < n_out; ++i) {
    opsdk::RawTensor t;
    t.dtype = dtype(in.str());
    t.shape = in.dims(in.pod<uint32_t>());
    c.buffers.emplace_back(static_cast<size_t>(numel(t.shape)) * opsdk::dtype_size(t.dtype));
    t.data = c.buffers.back().data();
    c.outputs.push_back(std::move(t));
  }
  const uint32_t n_attr = in.pod<uint32_t>();
  for (uint32_t i = 0; i < n_attr; ++i) {
    std::string name = in.str();
    c.attrs.emplace_back(std::move(name), read_attr(in));
  }
}

void run_case(Reader& in, Writer& out) {
  Case c;
  read_case(in, c);
  try {
    opsdk::invoke(c.op, c.inputs, c.outputs, c.attrs);
  } catch (const std::exception& e) {
    out.pod<uint8_t>(0);
    out.str(e.what());
    return;
  }
  out.pod<uint8_t>(1);
  for (const auto& t : c.outputs) {
    const uint64_t n = static_cast<uint64_t>(numel(t.shape)) * opsdk::dtype_size(t.dtype);
    out.pod(n);
    out.bytes(t.data, n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CASES OUTPUTS\n", argv[0]);
    return 2;
  }
  std::FILE* fin = std::fopen(argv[1], "rb");
  std::FILE* fout = std::fopen(argv[2], "wb");
  if (!fin || !fout) {
    std::fprintf(stderr, "harness: cannot open %s\n", fin ? argv[2] : argv[1]);
    return 2;
  }
  try {
    Reader in(fin);
    Writer out(fout);
    char magic[8];
    in.bytes(magic, 8);
    if (std::memcmp(magic, "OPSDKH1\n", 8) != 0) throw std::runtime_error("not a case file");
    const uint32_t n = in.pod<uint32_t>();
    out.bytes("OPSDKR1\n", 8);
    out.pod(n);
    for (uint32_t i = 0; i < n; ++i) run_case(in, out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness: %s\n", e.what());
    return 2;
  }
  std::fclose(fin);
  return std::fclose(fout) == 0 ? 0 : 2;
}
