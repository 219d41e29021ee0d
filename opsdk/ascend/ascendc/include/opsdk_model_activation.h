// opsdk's CPU model of the Ascend C API: the high-level activations Silu and Swish of CANN
// 8.1.RC1 (highlevel_api/lib/activation/{silu,swish}.h), as their implementations
// (impl/activation/{silu,swish}/*_common_impl.h) compute them: four vector instructions in T,
// each rounded to T, dst = src / (1 + exp(-beta * src)) with beta 1 for Silu. Neither takes a
// tmp buffer. Part of opsdk (not CANN).
#ifndef OPSDK_ASCENDC_MODEL_ACTIVATION_H
#define OPSDK_ASCENDC_MODEL_ACTIVATION_H

#include "opsdk_model_vector.h"

namespace opsdk_ascendc {

template <typename T>
inline void SigmoidWeighted(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                            uint32_t dataSize, T negBeta, const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "Silu and Swish take half or float");
    if (dataSize == 0 || dataSize > src.GetSize() || dataSize > dst.GetSize()) {
        Fail(api, "dataSize is " + S(dataSize) + "; it must be above 0 and at most the elements of srcLocal (" +
                      S(src.GetSize()) + ") and dstLocal (" + S(dst.GetSize()) + ")");
    }
    // Div reads srcLocal after dstLocal was overwritten: with dstLocal and srcLocal the same
    // tensor the result is x / (1 + exp(-x)) of the overwritten values, as on the chip
    const int32_t n = static_cast<int32_t>(dataSize);
    AscendC::Muls(dst, src, negBeta, n, loc);
    AscendC::Exp(dst, dst, n, loc);
    AscendC::Adds(dst, dst, T(1), n, loc);
    AscendC::Div(dst, src, dst, n, loc);
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T, bool isReuseSource = false>
inline void Silu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, uint32_t dataSize,
                 opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::SigmoidWeighted("Silu", dstLocal, srcLocal, dataSize, T(-1), loc);
}

template <typename T, bool isReuseSource = false>
inline void Swish(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, uint32_t dataSize,
                  const T scalarValue, opsdk_ascendc::Loc loc = {}) {
    // the implementation negates beta in float, then rounds it to T
    const T negBeta = static_cast<T>(-1.0f * static_cast<float>(scalarValue));
    opsdk_ascendc::SigmoidWeighted("Swish", dstLocal, srcLocal, dataSize, negBeta, loc);
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_ACTIVATION_H
