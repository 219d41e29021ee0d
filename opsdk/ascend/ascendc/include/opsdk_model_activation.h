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
#include "opsdk_model_misc.h"

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

// SwiGLU: dst = src0 * src1 / (1 + exp(-beta * src1)) (SwiGLUImpl). float computes in place in
// dst; half casts each chunk to float in three float buffers of the tmp space, then back.
template <typename T>
inline void SwiGLURun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                      const AscendC::LocalTensor<T>& src1, float beta, const AscendC::LocalTensor<uint8_t>& tmp,
                      uint32_t calCount, const char* where, const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "SwiGLU takes half or float");
    const char* api = "SwiGLU";
    if (src0.GetSize() != src1.GetSize()) {
        Fail(api, "srcTensor0 has " + S(src0.GetSize()) + " elements, srcTensor1 " + S(src1.GetSize()) +
                      "; they must be equal");
    }
    if (calCount == 0 || calCount > src0.GetSize() || calCount > dst.GetSize() || (calCount * sizeof(T)) % 32 != 0) {
        Fail(api, "calCount is " + S(calCount) + "; it must be above 0, at most the elements of the tensors (" +
                      S(std::min(src0.GetSize(), dst.GetSize())) + ") and a multiple of 32 bytes");
    }
    const float negBeta = -1.0f * beta;
    const int32_t all = static_cast<int32_t>(calCount);
    if constexpr (std::is_same_v<T, float>) {
        AscendC::Muls(dst, src1, negBeta, all, loc);
        AscendC::Exp(dst, dst, all, loc);
        AscendC::Adds(dst, dst, 1.0f, all, loc);
        AscendC::Div(dst, src1, dst, all, loc);
        AscendC::Mul(dst, src0, dst, all, loc);
    } else {
        if (tmp.GetSize() % 32 != 0) Fail(api, "the tmp space (" + std::string(where) + ") is " + S(tmp.GetSize()) +
                                               " bytes; it must be a multiple of 32");
        const uint32_t stack = static_cast<uint32_t>(tmp.GetSize() / sizeof(float) / 3 / 16 * 16);
        if (stack == 0) {
            Fail(api, "has " + S(tmp.GetSize()) + " bytes of tmp space (" + where + "); half needs three float "
                      "buffers of a chunk of at least 16 elements: 192 bytes");
        }
        const AscendC::LocalTensor<float> f = tmp.template ReinterpretCast<float>();
        for (uint32_t at = 0; at < calCount; at += stack) {
            const uint32_t n = std::min(stack, calCount - at), len = (n + 15) / 16 * 16;
            const int32_t c = static_cast<int32_t>(n);
            const AscendC::LocalTensor<float> b1 = f, b2 = f[len], b0 = f[2 * len];
            AscendC::Cast(b1, src1[at], AscendC::RoundMode::CAST_NONE, c, loc);
            AscendC::Muls(b2, b1, negBeta, c, loc);
            AscendC::Exp(b2, b2, c, loc);
            AscendC::Adds(b2, b2, 1.0f, c, loc);
            AscendC::Div(b2, b1, b2, c, loc);
            AscendC::Cast(b0, src0[at], AscendC::RoundMode::CAST_NONE, c, loc);
            AscendC::Mul(b2, b0, b2, c, loc);
            AscendC::Cast(dst[at], b2, AscendC::RoundMode::CAST_NONE, c, loc);
        }
    }
}

// The tmp-buffer stack: the Unified Buffer after the TPipe's buffers, as a tensor of bytes.
inline AscendC::LocalTensor<uint8_t> StackTensor() {
    const uint64_t bytes = StackBytes() / 32 * 32;
    return AscendC::LocalTensor<uint8_t>(RawSlot(Cur().ubUsed, bytes), 0, static_cast<uint32_t>(bytes));
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

template <typename T, bool isReuseSource = false>
inline void SwiGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
                   opsdk_ascendc::Loc loc = {}) {
    sharedTmpBuffer.Check("SwiGLU", "sharedTmpBuffer");
    opsdk_ascendc::SwiGLURun(dstTensor, srcTensor0, srcTensor1, scalarValue, sharedTmpBuffer, calCount,
                             "the sharedTmpBuffer", loc);
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::SwiGLURun(dstTensor, srcTensor0, srcTensor1, scalarValue, opsdk_ascendc::StackTensor(), calCount,
                             "the tmp-buffer stack: the Unified Buffer after the TPipe's buffers", loc);
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const LocalTensor<uint8_t>& sharedTmpBuffer, opsdk_ascendc::Loc loc = {}) {
    SwiGLU<T, isReuseSource>(dstTensor, srcTensor0, srcTensor1, scalarValue, sharedTmpBuffer, srcTensor0.GetSize(), loc);
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, opsdk_ascendc::Loc loc = {}) {
    SwiGLU<T, isReuseSource>(dstTensor, srcTensor0, srcTensor1, scalarValue, srcTensor0.GetSize(), loc);
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
    const LocalTensor<T> tmp = opsdk_ascendc::StackTensor().template ReinterpretCast<T>();
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
