// Tiling of the high-level library test kernels, shared by the kernels and their host tiling
// functions (hl_host.cpp), as a kernel-launch sample shares its tiling header.
#ifndef HL_TILING_H
#define HL_TILING_H
#include "register/tilingdata_base.h"
#include "lib/activation/softmax_tilingdata.h"
#include "lib/normalization/norm_tilingdata.h"
#include "lib/sort/topk_tilingdata.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(HlTiling)
    TILING_DATA_FIELD_DEF(uint32_t, rowsPerBlock);  // rows of cols elements each block handles
    TILING_DATA_FIELD_DEF(uint32_t, cols);
    TILING_DATA_FIELD_DEF(uint32_t, tmpBytes);      // the sharedTmpBuffer the kernel allocates
    TILING_DATA_FIELD_DEF(float, epsilon);
    TILING_DATA_FIELD_DEF_STRUCT(SoftMaxTiling, softmaxTiling);
    TILING_DATA_FIELD_DEF_STRUCT(LayerNormTiling, layernormTiling);
    TILING_DATA_FIELD_DEF_STRUCT(RmsNormTiling, rmsnormTiling);
END_TILING_DATA_DEF;

BEGIN_TILING_DATA_DEF(HlTopKTiling)
    TILING_DATA_FIELD_DEF(uint32_t, rowsPerBlock);
    TILING_DATA_FIELD_DEF(uint32_t, cols);
    TILING_DATA_FIELD_DEF(uint32_t, tmpBytes);
    TILING_DATA_FIELD_DEF(int32_t, k);
    TILING_DATA_FIELD_DEF_STRUCT(TopkTiling, topk);
END_TILING_DATA_DEF;
}  // namespace optiling
#endif
