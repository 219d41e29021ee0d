// opsdk's C calling convention for a loaded operator module: run one registration's kernel
// from another shared library (the torch dispatcher extension, opsdk/torch/csrc/dispatch.cpp)
// with plain C structs, so the caller may be built with another C++ standard library ABI
// (torch's -D_GLIBCXX_USE_CXX11_ABI) than the module.
//
// The module hands out one opsdk_kernel_abi through the capsule its `kernel_abi()` returns
// (named OPSDK_KERNEL_ABI_CAPSULE). Tensors are contiguous and in the registration's dtypes;
// outputs are allocated by the caller (destination passing, as everywhere in opsdk).
#pragma once

#include <stddef.h>
#include <stdint.h>

#define OPSDK_KERNEL_ABI_VERSION 1
#define OPSDK_KERNEL_ABI_CAPSULE "opsdk.kernel_abi"

#ifdef __cplusplus
extern "C" {
#endif

// One contiguous input or output; data == NULL for an optional input that was not given.
typedef struct {
  void* data;
  int32_t dtype;  // opsdk::DType (custom_op.h)
  int32_t ndim;
  const int64_t* shape;
} opsdk_abi_tensor;

enum {
  OPSDK_ABI_INT = 0,
  OPSDK_ABI_FLOAT = 1,
  OPSDK_ABI_BOOL = 2,
  OPSDK_ABI_STRING = 3,
  OPSDK_ABI_INTS = 4,
  OPSDK_ABI_FLOATS = 5
};

// One attribute value, by name. `i` holds int and bool; `s` a NUL-terminated string;
// `ints`/`floats` hold `n` values.
typedef struct {
  const char* name;
  int32_t type;  // OPSDK_ABI_*
  int64_t i;
  double f;
  const char* s;
  int64_t n;
  const int64_t* ints;
  const double* floats;
} opsdk_abi_attr;

typedef struct {
  uint32_t version;  // OPSDK_KERNEL_ABI_VERSION
  // Runs registration `index` (as `registrations()` lists them). Returns 0, or 1 with
  // "<op>: <what>" written to `error` (NUL-terminated, at most error_size bytes).
  int (*run)(size_t index, const opsdk_abi_tensor* inputs, size_t n_inputs,
             const opsdk_abi_tensor* outputs, size_t n_outputs, const opsdk_abi_attr* attrs,
             size_t n_attrs, char* error, size_t error_size);
} opsdk_kernel_abi;

#ifdef __cplusplus
}
#endif
