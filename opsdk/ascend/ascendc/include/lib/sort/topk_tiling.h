// opsdk's model of the host functions of CANN 8.1's TopK (lib/sort/topk_tiling.h), normal mode on
// 220: the tmp size (16 bytes per inner element for the sorted (score, index) pairs, 4 more when
// TopK makes the indices) and the tiling fields the kernel reads. The platform argument is taken
// as CANN takes it and not read (the sizes are 220's). Part of opsdk (not CANN).
#ifndef OPSDK_LIB_TOPK_TILING_H
#define OPSDK_LIB_TOPK_TILING_H

#include <cstdint>

#include "lib/sort/topk_tilingdata.h"

namespace AscendC {
#ifndef OPSDK_TOPK_MODE_DEFINED
#define OPSDK_TOPK_MODE_DEFINED
enum class TopKMode { TOPK_NORMAL, TOPK_NSMALL };
#endif

template <typename Platform>
inline bool GetTopKMaxMinTmpSize(const Platform&, const int32_t inner, const int32_t, const bool,
                                 const bool isInitIndex, enum TopKMode mode, const bool, const uint32_t,
                                 uint32_t& maxValue, uint32_t& minValue) {
    if (mode != TopKMode::TOPK_NORMAL || inner <= 0) return false;
    minValue = maxValue = static_cast<uint32_t>(inner) * (isInitIndex ? 16 : 20);
    return true;
}

template <typename Platform>
inline bool TopKTilingFunc(const Platform&, const int32_t inner, const int32_t outter, const int32_t k,
                           const uint32_t dataTypeSize, const bool isInitIndex, enum TopKMode mode, const bool,
                           optiling::TopkTiling& tiling) {
    if (mode != TopKMode::TOPK_NORMAL || inner <= 0 || inner % 32 != 0 || k < 1 || k > inner ||
        (dataTypeSize != 2 && dataTypeSize != 4)) {
        return false;
    }
    const int32_t perPair = dataTypeSize == 4 ? 2 : 4;  // elements of T in one 8-byte (score, index) pair
    const int32_t k4 = (k + 7) / 8 * 8, k2 = (k + 15) / 16 * 16;
    tiling.set_kAlignFourBytes(k4);
    tiling.set_kAlignTwoBytes(k2);
    tiling.set_innerDataSize(inner * perPair);
    tiling.set_sortRepeat(static_cast<uint32_t>(inner / 32));
    tiling.set_mrgSortRepeat(inner / 4);
    tiling.set_copyUbToUbBlockCount(static_cast<uint32_t>(inner * 8 / 32));
    tiling.set_maskOffset(outter * (dataTypeSize == 4 ? k4 : k2));
    tiling.set_maskVreducev2FourBytes(2 * k);
    tiling.set_maskVreducev2TwoBytes(4 * k);
    tiling.set_mrgSortSrc1offset(perPair);
    tiling.set_mrgSortSrc2offset(2 * perPair);
    tiling.set_mrgSortSrc3offset(3 * perPair);
    tiling.set_mrgSortTwoQueueSrc1Offset(perPair);
    tiling.set_mrgFourQueueTailPara1(inner * 2);
    tiling.set_mrgFourQueueTailPara2(static_cast<int32_t>(4 / dataTypeSize));
    const int32_t pairs = 2 * inner * perPair;  // the sorted pairs and their merge, in T
    tiling.set_tmpLocalSize(isInitIndex ? pairs : pairs + inner * 4 / static_cast<int32_t>(dataTypeSize));
    tiling.set_srcIndexOffset(isInitIndex ? 0 : pairs);
    return true;
}
}  // namespace AscendC

#endif  // OPSDK_LIB_TOPK_TILING_H
