// The host tiling of matmul_custom.cpp in the style of Huawei's kernel-launch samples: the
// Matmul API's TCubeTiling from MultiCoreMatmulTiling, then the UB size, into tilingBuf. The
// shape and base split are macros so the tests can vary them (defaults: 256 x 320 x 192 on two
// blocks, half in, float out, no bias).
#include <cstdint>
#include <iostream>

#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"
using namespace matmul_tiling;

#ifndef SHAPE_M
#define SHAPE_M 256
#define SHAPE_N 320
#define SHAPE_K 192
#endif
#ifndef BASE_M
#define BASE_M 128
#define BASE_N 128
#endif
#ifndef IN_DTYPE
#define IN_DTYPE DT_FLOAT16
#endif
#ifndef IS_TRANS_B
#define IS_TRANS_B false
#endif
#ifndef OUT_DTYPE
#define OUT_DTYPE DT_FLOAT
#endif
#ifndef IS_BIAS
#define IS_BIAS false
#endif

void GenerateTiling(const char *socVersion, uint8_t *tilingBuf)
{
    int M = SHAPE_M;
    int N = SHAPE_N;
    int K = SHAPE_K;

    TPosition leftPosition = TPosition::GM;
    CubeFormat leftFormat = CubeFormat::ND;
    DataType leftDtype = DataType::IN_DTYPE;
    bool isTransA = false;

    TPosition rightPosition = TPosition::GM;
    CubeFormat rightFormat = CubeFormat::ND;
    DataType rightDtype = DataType::IN_DTYPE;
    bool isTransB = IS_TRANS_B;

    TPosition resultPosition = TPosition::GM;
    CubeFormat resultFormat = CubeFormat::ND;
    DataType resultDtype = DataType::OUT_DTYPE;

    bool isBias = IS_BIAS;

    int usedCoreNum = 2;
    int32_t baseM = BASE_M;
    int32_t baseN = BASE_N;

    optiling::TCubeTiling tilingData;
    auto ascendcPlatform = platform_ascendc::PlatformAscendCManager::GetInstance(socVersion);
    MultiCoreMatmulTiling tilingApi(*ascendcPlatform);

    tilingApi.SetDim(usedCoreNum);
    tilingApi.SetAType(leftPosition, leftFormat, leftDtype, isTransA);
    tilingApi.SetBType(rightPosition, rightFormat, rightDtype, isTransB);
    tilingApi.SetCType(resultPosition, resultFormat, resultDtype);
    tilingApi.SetBiasType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT);

    tilingApi.SetOrgShape(M, N, K);
    tilingApi.SetShape(M, N, K);
    tilingApi.SetFixSplit(baseM, baseN, -1);
    tilingApi.SetBias(isBias);
    tilingApi.SetBufferSpace(-1, -1, -1);
#ifdef TRAVERSE
    tilingApi.SetTraverse(MatrixTraverse::TRAVERSE);
#endif

    int64_t res = tilingApi.GetTiling(tilingData);
    if (res == -1) {
        std::cout << "gen tiling failed" << std::endl;
    }
    uint32_t tcubeTilingSize = tilingData.GetDataSize();
    tilingData.SaveToBuffer(tilingBuf, tcubeTilingSize);

    uint64_t localMemSize;
    ascendcPlatform->GetCoreMemSize(platform_ascendc::CoreMemType::UB, localMemSize);
    *reinterpret_cast<uint64_t *>(tilingBuf + tcubeTilingSize) = localMemSize;
    return;
}
