// opsdk's CPU model of the Ascend C API: Brcb, one element broadcast to a whole 32-byte block.
// Part of opsdk (not CANN). Semantics of CANN 8.1.RC1's basic_api/impl/dav_c220/
// kernel_operator_vec_brcb_impl.h (vbrcb): repeat r takes src elements [8r, 8r + 8); element j
// fills block j of the repeat, blocks dstBlkStride blocks apart, repeats dstRepStride blocks apart.
#ifndef OPSDK_ASCENDC_MODEL_BRCB_H
#define OPSDK_ASCENDC_MODEL_BRCB_H

#include "opsdk_model_memory.h"

namespace AscendC {

// basic_api/interface/kernel_struct_brcb.h
struct BrcbRepeatParams {
    BrcbRepeatParams() = default;
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = 8;
    uint16_t dstRepStride = 8;
    uint16_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

template <typename T>
inline void Brcb(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const uint8_t repeatTimes,
                 const BrcbRepeatParams& repeatParams, opsdk_ascendc::Loc loc = {}) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4,
                  "Brcb takes half, bfloat16_t, int16_t, uint16_t, float, int32_t or uint32_t (16- or 32-bit types)");
    opsdk_ascendc::Issue is("Brcb", opsdk_ascendc::Pipe::V, loc);
    dstLocal.CheckAligned("Brcb", "dstLocal");
    src0Local.CheckAligned("Brcb", "src0Local");
    if (repeatTimes == 0) opsdk_ascendc::Fail("Brcb", "repeatTimes is 0; expected 1 to 255");
    constexpr uint64_t e = opsdk_ascendc::kBlockBytes / sizeof(T);
    const uint8_t* s = src0Local.Span("Brcb", "src0Local", 0, uint64_t(repeatTimes) * 8);
    std::vector<T> vals(uint64_t(repeatTimes) * 8);
    std::memcpy(vals.data(), s, vals.size() * sizeof(T));
    for (uint64_t r = 0; r < repeatTimes; ++r) {
        for (uint64_t j = 0; j < 8; ++j) {
            const uint64_t at = (r * repeatParams.dstRepStride + j * repeatParams.dstBlkStride) * e;
            T* d = reinterpret_cast<T*>(dstLocal.Span("Brcb", "dstLocal", at, e));
            for (uint64_t k = 0; k < e; ++k) d[k] = vals[r * 8 + j];
        }
    }
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_BRCB_H
