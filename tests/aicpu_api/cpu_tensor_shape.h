// Stand-in for the toolkit's aicpu/cpu_tensor_shape.h (see cpu_types.h here).
#ifndef CPU_KERNEL_TENSOR_SHAPE_H
#define CPU_KERNEL_TENSOR_SHAPE_H

#include <memory>
#include <vector>

#include "cpu_types.h"

namespace aicpu {
class TensorShapeImpl;
class AICPU_VISIBILITY TensorShape {
  friend class CpuKernelUtils;

 public:
  TensorShape() = delete;
  ~TensorShape() = default;
  void SetFormat(Format format);
  Format GetFormat() const;
  bool GetUnknownRank() const;
  void SetUnknownRank(bool unknownRank);
  void SetDimSizes(const std::vector<int64_t> &dims);
  std::vector<int64_t> GetDimSizes() const;
  int64_t GetDimSize(int32_t index) const;
  int32_t GetDims() const;
  int64_t NumElements() const;

 private:
  explicit TensorShape(TensorShapeImpl *tensorShape);
  std::shared_ptr<TensorShapeImpl> impl_{nullptr};
};
}  // namespace aicpu
#endif  // CPU_KERNEL_TENSOR_SHAPE_H
