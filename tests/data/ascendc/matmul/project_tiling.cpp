// A CANN project's op_host tiling for opsdk's tests, in the style of Huawei's framework-launch
// matmul samples: a tiling class holding TCubeTiling (TILING_DATA_FIELD_DEF_STRUCT), filled by
// MultiCoreMatmulTiling::GetTiling and set_stepM, and the UB size.
#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(MatmulCustomTilingData)
TILING_DATA_FIELD_DEF(uint64_t, localMemSize);
TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData);
END_TILING_DATA_DEF;
}  // namespace optiling
optiling::MatmulCustomTilingData MakeTiling() {
    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance();
    matmul_tiling::MultiCoreMatmulTiling cubeTiling(*platform);
    cubeTiling.SetDim(2);
    cubeTiling.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND,
                        matmul_tiling::DataType::DT_FLOAT16);
    cubeTiling.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND,
                        matmul_tiling::DataType::DT_FLOAT16);
    cubeTiling.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND,
                        matmul_tiling::DataType::DT_FLOAT);
    cubeTiling.SetShape(1024, 640, 256);
    cubeTiling.SetOrgShape(1024, 640, 256);
    cubeTiling.SetFixSplit(128, 128, -1);
    cubeTiling.SetBias(true);
    cubeTiling.SetBufferSpace(-1, -1, -1);
    optiling::MatmulCustomTilingData tiling;
    if (cubeTiling.GetTiling(tiling.cubeTilingData) == -1) return tiling;
    tiling.cubeTilingData.set_stepM(1);
    uint64_t ub = 0;
    platform->GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    tiling.set_localMemSize(ub);
    return tiling;
}
