// opsdk's CPU model of the Ascend C API: the kernel-side integer helpers
// (basic_api/impl/utils/kernel_utils_ceil_oom_que.h: DivCeil, AlignUp).
#ifndef OPSDK_ASCENDC_MODEL_UTILS_H
#define OPSDK_ASCENDC_MODEL_UTILS_H

#include "opsdk_model_pipes.h"

namespace AscendC {

// a / b rounded up; b = 0 is refused (on the chip a division by zero).
inline uint32_t DivCeil(uint32_t a, uint32_t b, opsdk_ascendc::Loc loc = {}) {
    if (b == 0) {
        opsdk_ascendc::Fail("DivCeil", "b is 0 (DivCeil(" + std::to_string(a) + ", 0)" +
                                           opsdk_ascendc::Where(loc) + "): a division by zero; check the tiling");
    }
    return (a + b - 1) / b;
}

// a rounded up to a multiple of b.
inline uint32_t AlignUp(uint32_t a, uint32_t b, opsdk_ascendc::Loc loc = {}) { return DivCeil(a, b, loc) * b; }

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_UTILS_H
