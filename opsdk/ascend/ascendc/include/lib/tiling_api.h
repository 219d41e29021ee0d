// opsdk's model of CANN 8.1's host tiling API (lib/tiling_api.h): each part of the high-level
// library brings its own header (the Matmul API's, the SoftMax family's, the norms', ...);
// this one includes them, with the host platform. Part of opsdk (not CANN).
#ifndef OPSDK_LIB_TILING_API_H
#define OPSDK_LIB_TILING_API_H

#include "lib/activation/gelu_tiling.h"
#include "lib/activation/softmax_tiling.h"
#include "lib/matmul_tiling.h"
#include "lib/normalization/norm_tiling.h"
#include "lib/reduce/sum_tiling.h"
#include "lib/sort/topk_tiling.h"
#include "tiling/platform/platform_ascendc.h"

#endif  // OPSDK_LIB_TILING_API_H
