// opsdk's model of the host tmp sizes of CANN 8.1's Gelu and GeGLU
// (lib/activation/{gelu,geglu}_tiling.h): Gelu three 256-byte repeats at least, three floats
// per element at most; GeGLU of half four repeats (two floats per element), of float none.
// Part of opsdk (not CANN).
#ifndef OPSDK_LIB_GELU_TILING_H
#define OPSDK_LIB_GELU_TILING_H

#include <algorithm>
#include <cstdint>

#include "graph/tensor.h"

namespace AscendC {
inline void GetGeluMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t, uint32_t& maxValue, uint32_t& minValue) {
    minValue = 3 * 256;
    maxValue = std::max<uint32_t>(minValue, static_cast<uint32_t>(3 * srcShape.GetShapeSize() * 4));
}
inline void GetGeGLUMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t typeSize, const bool,
                                  uint32_t& maxValue, uint32_t& minValue) {
    const uint32_t fac = typeSize == 4 ? 0 : 4;
    minValue = fac * 256;
    maxValue = fac * std::max<uint32_t>(static_cast<uint32_t>(srcShape.GetShapeSize()) * typeSize, 256);
}
}  // namespace AscendC

#endif  // OPSDK_LIB_GELU_TILING_H
