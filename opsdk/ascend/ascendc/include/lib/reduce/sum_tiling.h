// opsdk's model of the host tmp sizes of CANN 8.1's Sum, Mean and CumSum (lib/reduce/sum_tiling.h,
// mean_tiling.h, lib/math/cumsum_tiling.h). Sum: the partial sums of the first RepeatReduceSum pass, 32-byte
// aligned (what the kernel implementation keeps in the tmp space; CANN's host library itself is
// not public in 8.1). CumSum: CANN's (two transposes of 16 rows, plus a float copy for half).
// Part of opsdk (not CANN).
#ifndef OPSDK_LIB_SUM_TILING_H
#define OPSDK_LIB_SUM_TILING_H

#include <cstdint>

#include "graph/tensor.h"

namespace AscendC {
inline void GetSumMaxMinTmpSize(const uint32_t n, const uint32_t typeSize, const bool, uint32_t& maxSize,
                                uint32_t& minSize) {
    const uint32_t first = (n + 256 / typeSize - 1) / (256 / typeSize);
    minSize = maxSize = first > 1 ? (first * typeSize + 31) / 32 * 32 : 0;
}
// Mean: what its implementation asserts: the first pass's repeats rounded up to 32 bytes, plus a
// float row when half accumulates in float
inline void GetMeanMaxMinTmpSize(const uint32_t n, const uint32_t srcTypeSize, const uint32_t accTypeSize,
                                 const bool, uint32_t& maxSize, uint32_t& minSize) {
    const uint32_t first = (n + 256 / accTypeSize - 1) / (256 / accTypeSize);
    const uint32_t inner = (n * srcTypeSize + 31) / 32 * 32 / srcTypeSize;
    minSize = maxSize = (accTypeSize != srcTypeSize ? inner * 4 : 0) + (first + 31) / 32 * 32;
}
inline void GetCumSumMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t typeSize, const bool isLastAxis,
                                   const bool, uint32_t& maxValue, uint32_t& minValue) {
    const uint32_t m = static_cast<uint32_t>(srcShape.GetDim(0)), k = static_cast<uint32_t>(srcShape.GetDim(1));
    if (!isLastAxis) {
        maxValue = minValue = typeSize == 2 ? m * k * 4 : 0;
        return;
    }
    const uint32_t alignM = (m + 15) / 16 * 16;
    minValue = (typeSize == 2 ? k * 16 * 2 : 0) + 16 * k * typeSize * 2;
    maxValue = (typeSize == 2 ? k * alignM * 2 : 0) + alignM * k * typeSize * 2;
}
}  // namespace AscendC

#endif  // OPSDK_LIB_SUM_TILING_H
