// opsdk's CPU model of the Ascend C API: the high-level activations Silu, Swish and Sigmoid of
// CANN 8.1.RC1 (highlevel_api/lib/activation/{silu,swish,sigmoid}.h), as their implementations
// (impl/activation/*/) compute them: vector instructions in T, each rounded to T. Silu and Swish:
// dst = src / (1 + exp(-beta * src)) (beta 1 for Silu), no tmp buffer. Sigmoid: dst = 1 / (1 +
// exp(-src)) in chunks of the tmp buffer's elements (its 1s are the Div's numerator). Part of
// opsdk (not CANN).
#ifndef OPSDK_ASCENDC_MODEL_ACTIVATION_H
#define OPSDK_ASCENDC_MODEL_ACTIVATION_H

#include "opsdk_model_memory.h"
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

// Sigmoid over calCount elements in chunks of `tmp`'s elements (SigmoidImpl/SigmoidCompute).
template <typename T>
inline void SigmoidChunks(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                          const AscendC::LocalTensor<T>& tmp, uint32_t calCount, const char* where, const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "Sigmoid takes half or float");
    if (calCount > src.GetSize()) {
        Fail("Sigmoid", "calCount is " + S(calCount) + ", which should not be larger than srcTensor size " +
                            S(src.GetSize()));
    }
    const uint32_t split = tmp.GetSize();
    if (split == 0) {
        Fail("Sigmoid", std::string("has less than one ") + TypeName<T>() + " element of tmp space (" + where +
                            "): splitSize 0; pass a sharedTmpBuffer of at least 32 bytes (a chunk is its bytes / " +
                            "sizeof(T) elements) or leave Unified Buffer free after the TPipe's buffers");
    }
    for (uint32_t at = 0; at < calCount; at += split) {
        const int32_t n = static_cast<int32_t>(std::min(split, calCount - at));
        const AscendC::LocalTensor<T> d = dst[at], s = src[at];
        AscendC::Muls(d, s, T(-1), n, loc);
        AscendC::Exp(d, d, n, loc);
        AscendC::Adds(d, d, T(1), n, loc);
        AscendC::Duplicate(tmp, T(1), n, loc);
        AscendC::Div(d, tmp, d, n, loc);
    }
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

#if OPSDK_AICORE_ARCH == 100 || OPSDK_AICORE_ARCH == 200 || OPSDK_AICORE_ARCH == 220
template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    sharedTmpBuffer.Check("Sigmoid", "sharedTmpBuffer");
    opsdk_ascendc::SigmoidChunks(dstTensor, srcTensor, sharedTmpBuffer.template ReinterpretCast<T>(), calCount,
                                 "the sharedTmpBuffer", loc);
}

// Without sharedTmpBuffer: the tmp-buffer stack, the Unified Buffer after the TPipe's buffers.
template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount,
                    opsdk_ascendc::Loc loc = {}) {
    const uint64_t bytes = opsdk_ascendc::StackBytes() / 32 * 32;
    opsdk_ascendc::Slot* stack = opsdk_ascendc::RawSlot(opsdk_ascendc::Cur().ubUsed, bytes);
    const LocalTensor<T> tmp(stack, 0, static_cast<uint32_t>(bytes / sizeof(T)));
    opsdk_ascendc::SigmoidChunks(dstTensor, srcTensor, tmp, calCount,
                                 "the tmp-buffer stack: the Unified Buffer after the TPipe's buffers", loc);
}

template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, opsdk_ascendc::Loc loc = {}) {
    Sigmoid<T, isReuseSource>(dstTensor, srcTensor, sharedTmpBuffer, srcTensor.GetSize(), loc);
}

template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, opsdk_ascendc::Loc loc = {}) {
    Sigmoid<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), loc);
}
#endif

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_ACTIVATION_H
