// opsdk's model of CANN 8.1's host tiling API (lib/tiling_api.h): each part of the high-level
// library brings its own header; this one includes them. Part of opsdk (not CANN).
#ifndef OPSDK_LIB_TILING_API_H
#define OPSDK_LIB_TILING_API_H

#include "lib/activation/gelu_tiling.h"
#include "lib/activation/softmax_tiling.h"
#include "lib/normalization/norm_tiling.h"
#include "lib/reduce/sum_tiling.h"
#include "lib/sort/topk_tiling.h"

#endif  // OPSDK_LIB_TILING_API_H
