// A stand-in for CANN's AI CPU kernel API (aicpu::CpuKernel, CpuKernelContext, Tensor,
// TensorShape, AttrValue, REGISTER_CPU_KERNEL), written for opsdk's tests from the API's
// documented signatures so the generated adapter can be compiled and run on this machine.
// It is not CANN's header and runs nothing on an NPU; on a host, the toolkit's own
// cpu_kernel.h is used.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace aicpu {
enum DataType {
  DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6,
  DT_UINT16 = 7, DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12,
  DT_STRING = 13, DT_BFLOAT16 = 27
};

class TensorShape {
 public:
  explicit TensorShape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  std::vector<int64_t> GetDimSizes() const { return dims_; }
  int32_t GetDims() const { return static_cast<int32_t>(dims_.size()); }

 private:
  std::vector<int64_t> dims_;
};

class Tensor {
 public:
  Tensor(void* data, DataType type, std::vector<int64_t> dims)
      : data_(data), type_(type), shape_(std::make_shared<TensorShape>(std::move(dims))) {}
  void* GetData() const { return data_; }
  DataType GetDataType() const { return type_; }
  std::shared_ptr<TensorShape> GetTensorShape() const { return shape_; }
  int64_t NumElements() const {
    int64_t n = 1;
    for (int64_t d : shape_->GetDimSizes()) n *= d;
    return n;
  }

 private:
  void* data_;
  DataType type_;
  std::shared_ptr<TensorShape> shape_;
};

class AttrValue {
 public:
  int64_t i = 0;
  float f = 0.f;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  int64_t GetInt() const { return i; }
  float GetFloat() const { return f; }
  bool GetBool() const { return b; }
  std::string GetString() const { return s; }
  std::vector<int64_t> GetListInt() const { return ints; }
  std::vector<float> GetListFloat() const { return floats; }
};

class CpuKernelContext {
 public:
  std::vector<std::shared_ptr<Tensor>> inputs, outputs;
  std::map<std::string, std::shared_ptr<AttrValue>> attrs;
  uint32_t cpus = 2;
  Tensor* Input(uint32_t i) const { return i < inputs.size() ? inputs[i].get() : nullptr; }
  Tensor* Output(uint32_t i) const { return i < outputs.size() ? outputs[i].get() : nullptr; }
  AttrValue* GetAttr(std::string name) const {
    auto it = attrs.find(name);
    return it == attrs.end() ? nullptr : it->second.get();
  }
  uint32_t GetInputsSize() const { return static_cast<uint32_t>(inputs.size()); }
  uint32_t GetOutputsSize() const { return static_cast<uint32_t>(outputs.size()); }
};

class CpuKernel {
 public:
  virtual uint32_t Compute(CpuKernelContext& ctx) = 0;
  virtual ~CpuKernel() {}
};

using KERNEL_CREATOR_FUN = std::function<std::shared_ptr<CpuKernel>(void)>;

inline std::map<std::string, KERNEL_CREATOR_FUN>& Registry() {
  static std::map<std::string, KERNEL_CREATOR_FUN> r;
  return r;
}

inline bool RegistCpuKernel(const std::string& type, const KERNEL_CREATOR_FUN& fun) {
  Registry()[type] = fun;
  return true;
}

#define REGISTER_CPU_KERNEL(type, clazz)                                        \
  std::shared_ptr<CpuKernel> Creator_##type##_Kernel() {                        \
    return std::make_shared<clazz>();                                           \
  }                                                                             \
  bool g_##type##_Kernel_Creator __attribute__((unused)) =                      \
      RegistCpuKernel(type, Creator_##type##_Kernel)
}  // namespace aicpu
