// The test side of the stand-in AI CPU API: what CANN's AI CPU runtime does behind the
// headers (it is in no installed header). aicpu::CpuKernelUtils is the class the toolkit's
// headers name as friend of Tensor, TensorShape, AttrValue and CpuKernelContext; here it
// builds a context from a case file's tensors and attributes and runs a registered kernel.
#ifndef OPSDK_TEST_AICPU_STANDIN_RUNTIME_H
#define OPSDK_TEST_AICPU_STANDIN_RUNTIME_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu_kernel.h"

namespace aicpu {
class CpuKernelUtils {
 public:
  // A tensor over `data` (not owned) of `type` and `dims`.
  static std::shared_ptr<Tensor> MakeTensor(void *data, DataType type, std::vector<int64_t> dims);
  static std::shared_ptr<AttrValue> MakeAttr();
  static void AddInput(CpuKernelContext &ctx, std::shared_ptr<Tensor> t);
  static void AddOutput(CpuKernelContext &ctx, std::shared_ptr<Tensor> t);
  static void SetAttr(CpuKernelContext &ctx, const std::string &name, std::shared_ptr<AttrValue> a);
  // The kernel REGISTER_CPU_KERNEL registered for `op`, or null.
  static std::shared_ptr<CpuKernel> Kernel(const std::string &op);
};
}  // namespace aicpu
#endif
