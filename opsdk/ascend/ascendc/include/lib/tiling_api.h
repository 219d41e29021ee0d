// lib/tiling_api.h of opsdk's CPU model of the Ascend C API, host side (as tiling/tiling_api.h).
#ifndef OPSDK_HOST_LIB_TILING_API_H
#define OPSDK_HOST_LIB_TILING_API_H
#include "../tiling/tiling_api.h"
#endif  // OPSDK_HOST_LIB_TILING_API_H
