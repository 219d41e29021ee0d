// Stand-in for the toolkit's aicpu/cpu_tensor.h (see cpu_types.h here).
#ifndef CPU_KERNEL_TENSOR_H
#define CPU_KERNEL_TENSOR_H

#include <memory>

#include "cpu_tensor_shape.h"

namespace aicpu {
class TensorImpl;
class AICPU_VISIBILITY Tensor {
  friend class CpuKernelUtils;

 public:
  Tensor() = delete;
  ~Tensor() = default;
  bool SetTensorShape(const TensorShape *shape);
  std::shared_ptr<TensorShape> GetTensorShape() const;
  void SetDataType(DataType type);
  DataType GetDataType() const;
  void SetData(void *addr);
  void *GetData() const;
  void SetDataSize(uint64_t size);
  uint64_t GetDataSize() const;
  int64_t CalcDataSizeByShape() const;
  int64_t NumElements() const;

 private:
  explicit Tensor(TensorImpl *impl);
  std::shared_ptr<TensorImpl> impl_{nullptr};
};
}  // namespace aicpu
#endif  // CPU_KERNEL_TENSOR_H
