// opsdk's CPU model of the Ascend C API: Gelu, FasterGelu and GeGLU of CANN 8.1.RC1's high-level
// library (lib/activation/{gelu,geglu}.h), as impl/activation/{gelu,geglu} compute them: the same
// sequence of vector instructions, each rounded to its type (T, or float for half with
// highPrecision and for GeGLU of half), over chunks of the tmp space. Gelu is
// x * exp(min(u, 0)) / (1 + exp(-|u|)) with u = 1.5957691 (x + 0.044715 x^3) (the tanh form);
// FasterGelu x / (1 + exp(-1.702 x)); GeGLU src0 * src1 / (1 + exp(-0.0713548 src1 (src1^2 +
// 22.36386))). A tmp space with no room for one chunk fails naming the host API's minimum.
// Part of opsdk (not CANN).
#ifndef OPSDK_ASCENDC_MODEL_HL_GELU_H
#define OPSDK_ASCENDC_MODEL_HL_GELU_H

#include <initializer_list>

#include "opsdk_model_hl_common.h"

namespace opsdk_ascendc {

// The instructions of one chunk of an elementwise high-level API: the first reads the sources,
// the last writes dst, each in between works in the tmp space; `f` computes an element.
template <typename T, typename C, typename F>
inline void HlChain(const char* api, std::initializer_list<const char*> ops, const AscendC::LocalTensor<T>& dst,
                    const AscendC::LocalTensor<T>& src0, const AscendC::LocalTensor<T>* src1,
                    const AscendC::LocalTensor<float>& tmp, uint64_t at, uint64_t n, F f, const Loc& loc) {
    std::vector<float> a, b, y(n);
    size_t k = 0;
    for (const char* op : ops) {
        HlStep s(api, op, loc);
        if (k == 0) {
            a = HlRead<T>(s, src0, "srcTensor", at, n);
            if (src1 != nullptr) b = HlRead<T>(s, *src1, "srcTensor1", at, n);
        }
        if (k + 1 == ops.size()) {
            for (uint64_t i = 0; i < n; ++i) y[i] = f(a[i], src1 ? b[i] : 0.0f);
            HlWrite<T>(s, dst, "dstTensor", at, y);
        } else if (tmp.GetSize() > 0) {
            tmp.Span(s.name(), "dst tmpBuffer", 0, std::min<uint64_t>(tmp.GetSize(), (n * sizeof(C) + 3) / 4));
        }
        ++k;
    }
}

template <typename C> inline float HlR(float v) { return ToF(FromF<C>(v)); }

template <typename C, bool highPerformance> inline float GeluOf(float x) {
    auto R = HlR<C>;
    float a = R(x * x), b = R(x * a);
    a = R(b * R(0.044715f));
    b = R(x + a);
    a = R(b * R(1.5957691216057308f));
    b = R(HlExp(std::min(a, 0.0f)));
    a = R(HlExp(R(-R(std::fabs(a)))));
    a = R(a + 1.0f);
    a = highPerformance ? R(x * R(1.0f / a)) : R(x / a);
    return R(a * b);
}

template <typename C, bool highPerformance> inline float FasterGeluOf(float x) {
    auto R = HlR<C>;
    float a = R(HlExp(R(x * R(-1.702f))));
    a = R(a + 1.0f);
    return highPerformance ? R(x * R(1.0f / a)) : R(x / a);
}

template <typename T, bool highPrecision, bool highPerformance, bool faster>
inline void GeluRun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const HlTmp& tmp,
                    uint32_t dataSize, const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "Gelu and FasterGelu take half or float");
    const char* api = faster ? "FasterGelu" : "Gelu";
    using C = std::conditional_t<highPrecision && sizeof(T) == 2, float, T>;
    constexpr bool conv = !std::is_same_v<C, T>;
    const uint32_t buffers = (faster ? 1 : 2) + (conv ? 1 : 0);
    const uint64_t stack = tmp.bytes / sizeof(C) / buffers / 32 * 32;
    if (dataSize > src.GetSize() || dataSize > dst.GetSize()) {
        HlFail(api, "dataSize is " + S(dataSize) + "; srcLocal has " + S(src.GetSize()) + " and dstLocal " +
                        S(dst.GetSize()) + " elements", loc);
    }
    if (stack == 0) {
        HlFail(api, "has " + S(tmp.bytes) + " bytes of tmp space (" + tmp.where + "): no room for " + S(buffers) +
                        " buffers of 32 elements (params.stackSize 0); GetGeluMaxMinTmpSize gives a minimum of 768 "
                        "bytes: pass a tmp buffer of at least that size", loc);
    }
    for (uint64_t at = 0; at < dataSize; at += stack) {
        const uint64_t n = std::min<uint64_t>(stack, dataSize - at);
        auto f = [](float x, float) { return faster ? FasterGeluOf<C, highPerformance>(x) : GeluOf<C, highPerformance>(x); };
        if constexpr (faster) {
            if (conv) HlChain<T, C>(api, {"Cast", "Muls", "Exp", "Adds", "Div", "Cast"}, dst, src, nullptr, tmp.f, at, n, f, loc);
            else HlChain<T, C>(api, {"Muls", "Exp", "Adds", "Div"}, dst, src, nullptr, tmp.f, at, n, f, loc);
        } else if (conv) {
            HlChain<T, C>(api, {"Cast", "Mul", "Mul", "Muls", "Add", "Muls", "Mins", "Exp", "Abs", "Muls", "Exp",
                                "Adds", "Div", "Mul", "Cast"}, dst, src, nullptr, tmp.f, at, n, f, loc);
        } else {
            HlChain<T, C>(api, {"Mul", "Mul", "Muls", "Add", "Muls", "Mins", "Exp", "Abs", "Muls", "Exp", "Adds", "Div",
                                "Mul"}, dst, src, nullptr, tmp.f, at, n, f, loc);
        }
    }
}

template <typename T>
inline void GeGLURun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src0,
                     const AscendC::LocalTensor<T>& src1, const HlTmp& tmp, uint32_t calCount, const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "GeGLU takes half or float");
    const char* api = "GeGLU";
    if (src0.GetSize() != src1.GetSize() || calCount > src0.GetSize() || calCount > dst.GetSize()) {
        HlFail(api, "srcTensor0 has " + S(src0.GetSize()) + ", srcTensor1 " + S(src1.GetSize()) + ", dstTensor " +
                        S(dst.GetSize()) + " elements and calCount is " + S(calCount) +
                        "; the sources must be equal and calCount at most each", loc);
    }
    auto f = [](float x0, float x1) {  // in T for float, in float for half (GeGLUCompute)
        auto R = HlR<std::conditional_t<sizeof(T) == 2, float, T>>;
        float d = R(x1 * x1);
        d = R(d + 2.2363860002236e1f);
        d = R(d * x1);
        d = R(d * -0.0713548162726f);
        d = R(HlExp(d));
        d = R(d + 1.0f);
        d = R(x1 / d);
        return R(x0 * d);
    };
    if constexpr (sizeof(T) == 4) {
        HlChain<T, T>(api, {"Mul", "Adds", "Mul", "Muls", "Exp", "Adds", "Div", "Mul"}, dst, src0, &src1,
                      AscendC::LocalTensor<float>(), 0, calCount, f, loc);
    } else {
        const uint64_t chunk = tmp.bytes / 8 * sizeof(T) / 32 * 32 / sizeof(T);  // two floats per element
        if (chunk == 0) {
            HlFail(api, "has " + S(tmp.bytes) + " bytes of tmp space (" + tmp.where + "): no room for one chunk of "
                            "16 half elements (8 bytes each); GetGeGLUMaxMinTmpSize gives a minimum of 1024 bytes "
                            "for half: pass a tmp buffer of at least that size (the chip would loop forever)", loc);
        }
        for (uint64_t at = 0; at < calCount; at += chunk) {
            HlChain<T, float>(api, {"Cast", "Mul", "Adds", "Mul", "Muls", "Exp", "Adds", "Div", "Cast", "Mul", "Cast"},
                              dst, src0, &src1, tmp.f, at, std::min<uint64_t>(chunk, calCount - at), f, loc);
        }
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

#define OPSDK_GELU(NAME, FASTER)                                                                                  \
    template <typename T, bool highPrecision = false, bool highPerformance = false>                              \
    inline void NAME(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,                             \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t dataSize,                       \
                     opsdk_ascendc::Loc loc = {}) {                                                              \
        opsdk_ascendc::GeluRun<T, highPrecision, highPerformance, FASTER>(                                       \
            dstLocal, srcLocal, opsdk_ascendc::HlShared(#NAME, sharedTmpBuffer), dataSize, loc);                 \
    }                                                                                                             \
    template <typename T, bool highPrecision = false, bool highPerformance = false>                              \
    inline void NAME(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dataSize,   \
                     opsdk_ascendc::Loc loc = {}) {                                                              \
        opsdk_ascendc::GeluRun<T, highPrecision, highPerformance, FASTER>(dstLocal, srcLocal,                    \
                                                                         opsdk_ascendc::HlStack(), dataSize, loc); \
    }
OPSDK_GELU(Gelu, false)
OPSDK_GELU(FasterGelu, true)
#undef OPSDK_GELU

template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::GeGLURun<T>(dstTensor, srcTensor0, srcTensor1, opsdk_ascendc::HlShared("GeGLU", sharedTmpBuffer),
                               calCount, loc);
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::GeGLURun<T>(dstTensor, srcTensor0, srcTensor1, opsdk_ascendc::HlStack(), calCount, loc);
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_HL_GELU_H
