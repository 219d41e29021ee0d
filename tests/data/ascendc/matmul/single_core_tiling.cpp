// A single-core host tiling with MatmulApiTiling for opsdk's tests: int8 A and B (B
// transposed), int32 C, 300 x 200 x 5000, returned as the kernel's TCubeTiling.
#include "tiling/tiling_api.h"
TCubeTiling MakeTiling() {
    matmul_tiling::MatmulApiTiling api(*platform_ascendc::PlatformAscendCManager::GetInstance());
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_INT8);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_INT8, true);
    api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_INT32);
    api.SetShape(300, 200, 5000);
    TCubeTiling t;
    return api.GetTiling(t) == 0 ? t : TCubeTiling{};
}
