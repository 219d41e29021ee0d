// tiling/tiling_api.h of opsdk's CPU model of the Ascend C API, host side: the high-level APIs'
// host tiling that the model has (the Matmul API's, lib/matmul_tiling.h).
#ifndef OPSDK_HOST_TILING_API_H
#define OPSDK_HOST_TILING_API_H
#include "../lib/matmul_tiling.h"
#include "platform/platform_ascendc.h"
#endif  // OPSDK_HOST_TILING_API_H
