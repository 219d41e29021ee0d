// Stand-in for CANN's cpu_kernel_utils.h (see cpu_kernel.h here): the one call the adapter makes.
#pragma once

#include "cpu_kernel.h"

namespace aicpu {
class CpuKernelUtils {
 public:
  static uint32_t GetCPUNum(const CpuKernelContext& ctx) { return ctx.cpus; }
};
}  // namespace aicpu
