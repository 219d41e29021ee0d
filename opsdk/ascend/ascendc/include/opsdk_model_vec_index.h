// opsdk's CPU model of the Ascend C API: CreateVecIndex, count form (dst[i] = firstValue + i).
// Part of opsdk (not CANN). As CANN 8.1.RC1's basic_api/impl/dav_c220/
// kernel_operator_vec_createvecindex_impl.h builds it, and so with the same pipes: the scalar
// unit stores the first 32-byte block (a whole block, even for fewer elements), sets and waits
// an S_V flag, then the vector unit fills the rest with Adds, block by block up to one repeat
// (256 bytes), then repeat by repeat, each from the one before. The instructions are recorded at
// the kernel's call (its source line). The mask forms are not modelled (a compile error).
#ifndef OPSDK_ASCENDC_MODEL_VEC_INDEX_H
#define OPSDK_ASCENDC_MODEL_VEC_INDEX_H

#include "opsdk_model_memory.h"
#include "opsdk_model_vector.h"

namespace AscendC {

template <typename T>
inline void CreateVecIndex(LocalTensor<T> dstLocal, const T& firstValue, uint32_t calCount,
                           opsdk_ascendc::Loc loc = {}) {
    static_assert(opsdk_ascendc::OneOf<T, half, float, int16_t, int32_t>,
                  "CreateVecIndex takes half, float, int16_t or int32_t (basic_api/interface/"
                  "kernel_operator_vec_createvecindex_intf.h)");
    constexpr uint32_t blk = uint32_t(opsdk_ascendc::kBlockBytes / sizeof(T));
    constexpr uint32_t rep = uint32_t(opsdk_ascendc::kRepeatBytes / sizeof(T));
    if (calCount == 0) opsdk_ascendc::Fail("CreateVecIndex", "calCount is 0; expected at least 1");
    for (uint32_t i = 0; i < blk; ++i) {
        dstLocal.SetValue(i, static_cast<T>(static_cast<float>(firstValue) + static_cast<float>(i)), loc);
    }
    const int32_t e = GetTPipePtr()->FetchEventID(HardEvent::S_V);
    SetFlag<HardEvent::S_V>(e, loc);
    WaitFlag<HardEvent::S_V>(e, loc);
    if (calCount <= blk) return;
    const uint32_t inRep = calCount < rep ? calCount : rep;  // blocks 2..8 of the first repeat
    for (uint32_t b = 1; b * blk < inRep; ++b) {
        const uint32_t n = inRep - b * blk < blk ? inRep - b * blk : blk;
        Adds(dstLocal[b * blk], dstLocal[(b - 1) * blk], static_cast<T>(blk), static_cast<int32_t>(n), loc);
    }
    for (uint32_t r = 1; r * rep < calCount; ++r) {  // repeats 2..n, each from the one before
        const uint32_t n = calCount - r * rep < rep ? calCount - r * rep : rep;
        Adds(dstLocal[r * rep], dstLocal[(r - 1) * rep], static_cast<T>(rep), static_cast<int32_t>(n), loc);
    }
}

template <typename T>
inline void CreateVecIndex(LocalTensor<T>& dstLocal, const T& firstValue, uint64_t mask, uint8_t repeatTimes,
                           uint16_t dstBlkStride, uint8_t dstRepStride, opsdk_ascendc::Loc loc = {}) {
    static_assert(sizeof(T) == 0, "CreateVecIndex's mask forms are not modelled by opsdk; use the count form "
                                  "CreateVecIndex(dstLocal, firstValue, calCount)");
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_VEC_INDEX_H
