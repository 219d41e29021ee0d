// tiling/tiling_api.h, the name op_host code includes CANN's host tiling API by: opsdk's
// model of it (lib/tiling_api.h). Part of opsdk (not CANN).
#ifndef OPSDK_HOST_TILING_API_H
#define OPSDK_HOST_TILING_API_H
#include "lib/tiling_api.h"
#endif  // OPSDK_HOST_TILING_API_H
