// Definitions behind the stand-in headers (see standin_runtime.h): plain in-memory tensors,
// attributes and a kernel registry; CUST_KERNEL_LOG_* write to stderr.
#include "standin_runtime.h"

#include <cstdarg>
#include <cstdio>
#include <map>

#include "cust_cpu_utils.h"

namespace aicpu {
class TensorShapeImpl {
 public:
  std::vector<int64_t> dims;
};
class TensorImpl {
 public:
  void *data = nullptr;
  DataType type = DT_FLOAT;
  std::shared_ptr<TensorShape> shape;
};
class AttrValueImpl {
 public:
  int64_t i = 0;
  float f = 0.f;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

TensorShape::TensorShape(TensorShapeImpl *tensorShape) : impl_(tensorShape) {}
std::vector<int64_t> TensorShape::GetDimSizes() const { return impl_->dims; }
int32_t TensorShape::GetDims() const { return static_cast<int32_t>(impl_->dims.size()); }
int64_t TensorShape::NumElements() const {
  int64_t n = 1;
  for (int64_t d : impl_->dims) n *= d;
  return n;
}

Tensor::Tensor(TensorImpl *impl) : impl_(impl) {}
void *Tensor::GetData() const { return impl_->data; }
DataType Tensor::GetDataType() const { return impl_->type; }
std::shared_ptr<TensorShape> Tensor::GetTensorShape() const { return impl_->shape; }
int64_t Tensor::NumElements() const { return impl_->shape->NumElements(); }

AttrValue::AttrValue(AttrValueImpl *impl) : impl_(impl) {}
int64_t AttrValue::GetInt() const { return impl_->i; }
float AttrValue::GetFloat() const { return impl_->f; }
bool AttrValue::GetBool() const { return impl_->b; }
std::string AttrValue::GetString() const { return impl_->s; }
std::vector<int64_t> AttrValue::GetListInt() const { return impl_->ints; }
std::vector<float> AttrValue::GetListFloat() const { return impl_->floats; }
void AttrValue::SetInt(int64_t i) { impl_->i = i; }
void AttrValue::SetFloat(float f) { impl_->f = f; }
void AttrValue::SetBool(bool b) { impl_->b = b; }
void AttrValue::SetString(const std::string &s) { impl_->s = s; }
void AttrValue::AddListInt(int64_t i) { impl_->ints.push_back(i); }
void AttrValue::AddListFloat(float f) { impl_->floats.push_back(f); }

CpuKernelContext::CpuKernelContext(DeviceType) {}
Tensor *CpuKernelContext::Input(uint32_t index) const {
  return index < inputs_.size() ? inputs_[index].get() : nullptr;
}
Tensor *CpuKernelContext::Output(uint32_t index) const {
  return index < outputs_.size() ? outputs_[index].get() : nullptr;
}
AttrValue *CpuKernelContext::GetAttr(std::string name) const {
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : it->second.get();
}
uint32_t CpuKernelContext::GetInputsSize() const { return static_cast<uint32_t>(inputs_.size()); }
uint32_t CpuKernelContext::GetOutputsSize() const {
  return static_cast<uint32_t>(outputs_.size());
}

namespace {
std::map<std::string, KERNEL_CREATOR_FUN> &Registry() {
  static std::map<std::string, KERNEL_CREATOR_FUN> r;
  return r;
}
}  // namespace

bool RegistCpuKernel(const std::string &type, const KERNEL_CREATOR_FUN &fun) {
  Registry()[type] = fun;
  return true;
}

void CustCpuKernelUtils::CustLogError(CpuKernelContext &, const char *fmt, ...) {
  va_list v;
  va_start(v, fmt);
  std::fputs("[ERROR] ", stderr);
  std::vfprintf(stderr, fmt, v);
  std::fputc('\n', stderr);
  va_end(v);
}

std::shared_ptr<Tensor> CpuKernelUtils::MakeTensor(void *data, DataType type,
                                                   std::vector<int64_t> dims) {
  auto *shape = new TensorShapeImpl;
  shape->dims = std::move(dims);
  auto *impl = new TensorImpl;
  impl->data = data;
  impl->type = type;
  impl->shape = std::shared_ptr<TensorShape>(new TensorShape(shape));
  return std::shared_ptr<Tensor>(new Tensor(impl));
}
std::shared_ptr<AttrValue> CpuKernelUtils::MakeAttr() {
  return std::shared_ptr<AttrValue>(new AttrValue(new AttrValueImpl));
}
void CpuKernelUtils::AddInput(CpuKernelContext &ctx, std::shared_ptr<Tensor> t) {
  ctx.inputs_.push_back(std::move(t));
}
void CpuKernelUtils::AddOutput(CpuKernelContext &ctx, std::shared_ptr<Tensor> t) {
  ctx.outputs_.push_back(std::move(t));
}
void CpuKernelUtils::SetAttr(CpuKernelContext &ctx, const std::string &name,
                             std::shared_ptr<AttrValue> a) {
  ctx.attrs_[name] = std::move(a);
}
std::shared_ptr<CpuKernel> CpuKernelUtils::Kernel(const std::string &op) {
  auto it = Registry().find(op);
  return it == Registry().end() ? nullptr : it->second();
}
}  // namespace aicpu
