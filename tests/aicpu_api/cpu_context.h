// Stand-in for the toolkit's aicpu/cpu_context.h (see cpu_types.h here).
#ifndef CPU_KERNELS_CONTEXT_H
#define CPU_KERNELS_CONTEXT_H

#include <string>
#include <unordered_map>
#include <vector>

#include "cpu_attr_value.h"
#include "cpu_tensor.h"
#include "cpu_types.h"

namespace aicpu {
class Device;
class NodeDef;
class AICPU_VISIBILITY CpuKernelContext {
  friend class CpuKernelUtils;
  friend class CustCpuKernelUtils;
  friend class CustCpuKernelDlogUtils;

 public:
  explicit CpuKernelContext(DeviceType type);
  CpuKernelContext() = delete;
  ~CpuKernelContext() = default;
  CpuKernelContext(const CpuKernelContext &) = delete;
  CpuKernelContext(CpuKernelContext &&) = delete;
  CpuKernelContext &operator=(const CpuKernelContext &) = delete;
  CpuKernelContext &operator=(CpuKernelContext &&) = delete;
  uint32_t Init(NodeDef *nodeDef);
  uint32_t Init(void *nodeDef);
  std::string GetOpType() const;
  Tensor *Input(uint32_t index) const;
  Tensor *Output(uint32_t index) const;
  AttrValue *GetAttr(std::string name) const;
  uint32_t GetInputsSize() const;
  uint32_t GetOutputsSize() const;

 private:
  std::string op_;
  std::vector<std::shared_ptr<Tensor> > inputs_;
  std::vector<std::shared_ptr<Tensor> > outputs_;
  std::unordered_map<std::string, std::shared_ptr<AttrValue> > attrs_;
  std::shared_ptr<Device> device_{nullptr};
  uint64_t workspace_size_{0UL};
  uint64_t workspace_addr_{0UL};
};
}  // namespace aicpu
#endif  // CPU_KERNELS_CONTEXT_H
