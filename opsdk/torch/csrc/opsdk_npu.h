// opsdk's NPU kernels for torch (PrivateUse1 through torch_npu): the shared part.
//
// Each operator's kernel (generated from npu_op.cpp.jinja) wraps the torch tensors' device
// memory in aclTensor objects, asks the operator's generated aclnn<Op>GetWorkspaceSize for
// its workspace, takes the workspace from torch_npu's caching allocator (an at::Tensor on
// the same device) and enqueues aclnn<Op> on the current NPU stream through torch_npu's
// task queue (OpCommand::RunOpApi), as torch_npu's own operators do. No host copy, no
// synchronisation, no tiling copied from the host: the aclnn pair computes the tiling on
// the host and its launch carries it, so the call can be captured in an NPU graph.
//
// The aclnn objects (aclTensor, aclCreateTensor, ...) are declared here as CANN 8.1's
// include/aclnn/acl_meta.h declares them, because torch_npu's wheel does not ship that
// header; their addresses come from libnnopbase.so at run time. With the toolkit's
// header on the include path, -DOPSDK_CHECK_ACLNN_DECLS checks these declarations against
// it at compile time (static_assert on every function type).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <torch/extension.h>

#include "acl/acl_base.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

#ifdef OPSDK_CHECK_ACLNN_DECLS
#include "aclnn/acl_meta.h"
#else
typedef struct aclOpExecutor aclOpExecutor;
typedef struct aclTensor aclTensor;
typedef struct aclIntArray aclIntArray;
typedef struct aclFloatArray aclFloatArray;
typedef int32_t aclnnStatus;
#endif

namespace opsdk_npu {

// The function types of acl_meta.h's objects (CANN 8.1.RC1).
using CreateTensorFn = aclTensor *(*)(const int64_t *, uint64_t, aclDataType, const int64_t *,
                                      int64_t, aclFormat, const int64_t *, uint64_t, void *);
using DestroyTensorFn = aclnnStatus (*)(const aclTensor *);
using CreateIntArrayFn = aclIntArray *(*)(const int64_t *, uint64_t);
using DestroyIntArrayFn = aclnnStatus (*)(const aclIntArray *);
using CreateFloatArrayFn = aclFloatArray *(*)(const float *, uint64_t);
using DestroyFloatArrayFn = aclnnStatus (*)(const aclFloatArray *);
using LaunchFn = aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, aclrtStream);

#ifdef OPSDK_CHECK_ACLNN_DECLS
static_assert(std::is_same_v<CreateTensorFn, decltype(&aclCreateTensor)>);
static_assert(std::is_same_v<DestroyTensorFn, decltype(&aclDestroyTensor)>);
static_assert(std::is_same_v<CreateIntArrayFn, decltype(&aclCreateIntArray)>);
static_assert(std::is_same_v<DestroyIntArrayFn, decltype(&aclDestroyIntArray)>);
static_assert(std::is_same_v<CreateFloatArrayFn, decltype(&aclCreateFloatArray)>);
static_assert(std::is_same_v<DestroyFloatArrayFn, decltype(&aclDestroyFloatArray)>);
#endif

// A symbol of a shared library opened once (RTLD_GLOBAL: the vendor's op_api library
// resolves CANN's symbols through it); the error names the library, the symbol and the fix.
inline void *symbol(const std::string &library, const char *name) {
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    throw std::runtime_error("cannot open " + library + ": " + dlerror() +
                             " (source CANN's set_env.sh and install the operator package)");
  }
  void *fn = dlsym(handle, name);
  if (fn == nullptr) {
    throw std::runtime_error(library + " exports no " + name +
                             " (rebuild and reinstall the operator package: opsdk cann)");
  }
  return fn;
}

struct Meta {
  CreateTensorFn create_tensor;
  DestroyTensorFn destroy_tensor;
  CreateIntArrayFn create_int_array;
  DestroyIntArrayFn destroy_int_array;
  CreateFloatArrayFn create_float_array;
  DestroyFloatArrayFn destroy_float_array;
};

inline const Meta &meta() {
  static const Meta m = [] {
    const std::string lib = "libnnopbase.so";
    return Meta{reinterpret_cast<CreateTensorFn>(symbol(lib, "aclCreateTensor")),
                reinterpret_cast<DestroyTensorFn>(symbol(lib, "aclDestroyTensor")),
                reinterpret_cast<CreateIntArrayFn>(symbol(lib, "aclCreateIntArray")),
                reinterpret_cast<DestroyIntArrayFn>(symbol(lib, "aclDestroyIntArray")),
                reinterpret_cast<CreateFloatArrayFn>(symbol(lib, "aclCreateFloatArray")),
                reinterpret_cast<DestroyFloatArrayFn>(symbol(lib, "aclDestroyFloatArray"))};
  }();
  return m;
}

// The aclnn objects of one call, destroyed when the call has been enqueued (the executor
// keeps what it needs, as torch_npu's own operators rely on).
class Args {
 public:
  Args() = default;
  Args(const Args &) = delete;
  Args &operator=(const Args &) = delete;
  ~Args() {
    const Meta &m = meta();
    for (auto *t : tensors_) m.destroy_tensor(t);
    for (auto *a : ints_) m.destroy_int_array(a);
    for (auto *a : floats_) m.destroy_float_array(a);
  }

  // An ND aclTensor over the tensor's device memory: its view (sizes, strides, offset)
  // and its storage, as torch_npu's ConvertType does; nullptr for an absent optional.
  const aclTensor *tensor(const c10::optional<at::Tensor> &maybe, aclDataType dtype,
                          const char *what) {
    if (!maybe.has_value() || !maybe->defined()) return nullptr;
    const at::Tensor &t = *maybe;
    if (t.device().type() != c10::DeviceType::PrivateUse1) {
      throw std::invalid_argument(std::string(what) + " is on " + t.device().str() +
                                  ", expected an npu tensor (move it with .to('npu'))");
    }
    std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
    std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
    const int64_t storage = static_cast<int64_t>(t.storage().nbytes() / t.itemsize());
    aclTensor *a = meta().create_tensor(sizes.data(), sizes.size(), dtype, strides.data(),
                                        t.storage_offset(), ACL_FORMAT_ND, &storage, 1,
                                        const_cast<void *>(t.storage().data()));
    if (a == nullptr) throw std::runtime_error(std::string("aclCreateTensor failed for ") + what);
    tensors_.push_back(a);
    return a;
  }

  const aclIntArray *ints(const std::vector<int64_t> &v) {
    aclIntArray *a = meta().create_int_array(v.data(), v.size());
    ints_.push_back(a);
    return a;
  }

  const aclFloatArray *floats(const std::vector<double> &v) {
    std::vector<float> f(v.begin(), v.end());
    aclFloatArray *a = meta().create_float_array(f.data(), f.size());
    floats_.push_back(a);
    return a;
  }

 private:
  std::vector<aclTensor *> tensors_;
  std::vector<aclIntArray *> ints_;
  std::vector<aclFloatArray *> floats_;
};

inline void check(aclnnStatus status, const std::string &what) {
  if (status != 0) {
    throw std::runtime_error(what + " returned " + std::to_string(status) +
                             " (CANN's log under ~/ascend/log says why)");
  }
}

// The workspace from torch_npu's caching allocator, then aclnn<Op> enqueued on the current
// stream behind the work already queued (torch_npu's task queue keeps the order).
inline void launch(const std::string &op, LaunchFn fn, uint64_t workspace_size,
                   aclOpExecutor *executor, const at::Device &device) {
  at::Tensor workspace;
  void *ws = nullptr;
  if (workspace_size > 0) {
    workspace = at::empty({static_cast<int64_t>(workspace_size)},
                          at::TensorOptions().dtype(at::kByte).device(device));
    ws = workspace.data_ptr();
  }
  auto run = [op, fn, ws, workspace_size, executor, device]() -> int {
    aclrtStream stream = c10_npu::getCurrentNPUStream(device.index()).stream(false);
    check(fn(ws, workspace_size, executor, stream), "aclnn" + op);
    return 0;
  };
  at_npu::native::OpCommand::RunOpApi("aclnn" + op, run);
}

}  // namespace opsdk_npu
