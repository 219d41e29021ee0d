// opsdk's CPU model of the Ascend C API: vector instructions (count form and mask/repeat form).
#ifndef OPSDK_ASCENDC_MODEL_VECTOR_H
#define OPSDK_ASCENDC_MODEL_VECTOR_H

#include "opsdk_model_memory.h"

namespace AscendC {

struct UnaryRepeatParams {
    UnaryRepeatParams() = default;
    UnaryRepeatParams(uint16_t dBlk, uint16_t sBlk, uint8_t dRep, uint8_t sRep)
        : dstBlkStride(dBlk), srcBlkStride(sBlk), dstRepStride(dRep), srcRepStride(sRep) {}
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t srcRepStride = 8;
};

struct BinaryRepeatParams {
    BinaryRepeatParams() = default;
    BinaryRepeatParams(uint8_t dBlk, uint8_t s0Blk, uint8_t s1Blk, uint8_t dRep, uint8_t s0Rep, uint8_t s1Rep)
        : dstBlkStride(dBlk), src0BlkStride(s0Blk), src1BlkStride(s1Blk),
          dstRepStride(dRep), src0RepStride(s0Rep), src1RepStride(s1Rep) {}
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t dstRepStride = 8;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
};

enum class RoundMode : uint8_t { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE : uint8_t { LT, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

}  // namespace AscendC

namespace opsdk_ascendc {

// Exp, Div, Sqrt and Ln flush a subnormal result to zero on the chip (CANN's Ascend C
// repository, issue 1604 of cann/asc-devkit: "Exp/Div/Sqrt/Log/Ln ... Flush to zero").
template <typename F> inline F Ftz(F v) {
    if constexpr (std::is_floating_point_v<F>) {
        return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(F(0), v) : v;
    } else {
        return v;
    }
}

template <typename T, typename... Ok> constexpr bool OneOf = (std::is_same_v<T, Ok> || ...);
template <typename T> constexpr bool kFloat = OneOf<T, half, float>;
template <typename T> constexpr bool kArith = OneOf<T, half, float, int16_t, int32_t>;

template <typename T> inline T Load(const uint8_t* p) { T v; std::memcpy(&v, p, sizeof(T)); return v; }
template <typename T> inline void Store(uint8_t* p, T v) { std::memcpy(p, &v, sizeof(T)); }

template <typename T> inline void CheckCount(const char* api, int64_t count) {
    if (count < 0) Fail(api, "calCount is " + std::to_string(count) + "; it must be >= 0");
}

// Element offsets [dst, src0, src1] of every active element of a mask/repeat instruction.
struct RepeatShape {
    uint64_t perRepeat;  // elements one repeat covers (256 bytes)
    uint64_t perBlock;   // elements in one 32-byte block
};

template <typename T> inline RepeatShape CheckMask(const char* api, const uint64_t mask[2], bool bitwise) {
    RepeatShape r{kRepeatBytes / sizeof(T), kBlockBytes / sizeof(T)};
    if (!bitwise) {
        if (mask[0] == 0 || mask[0] > r.perRepeat) {
            Fail(api, "mask is " + S(mask[0]) + "; for " + TypeName<T>() + " a continuous mask is 1 to " +
                          S(r.perRepeat) + " elements of a repeat");
        }
    } else {
        if (sizeof(T) == 4 && mask[1] != 0) {
            Fail(api, "mask[1] is " + S(mask[1]) + "; for 32-bit " + TypeName<T>() +
                          " a repeat has 64 elements, so mask[1] must be 0");
        }
        if (mask[0] == 0 && mask[1] == 0) Fail(api, "mask selects no element (mask[0] = mask[1] = 0)");
    }
    return r;
}

inline bool MaskOn(const uint64_t mask[2], bool bitwise, uint64_t idx) {
    if (!bitwise) return idx < mask[0];
    return (mask[idx / 64] >> (idx % 64)) & 1u;
}

template <typename F>
inline void ForRepeats(const RepeatShape& r, uint8_t repeat, const uint64_t mask[2], bool bitwise, F f) {
    for (uint64_t rep = 0; rep < repeat; ++rep) {
        for (uint64_t idx = 0; idx < r.perRepeat; ++idx) {
            if (MaskOn(mask, bitwise, idx)) f(rep, idx / r.perBlock, idx % r.perBlock);
        }
    }
}

// Elements of an operand: rep/blk strides in blocks, element k of block b of repeat r.
inline uint64_t At(const RepeatShape& r, uint64_t rep, uint64_t blk, uint64_t k, uint64_t repStride,
                   uint64_t blkStride) {
    return (rep * repStride + blk * blkStride) * r.perBlock + k;
}

template <typename T, typename F>
inline void UnaryCount(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       int64_t n, F f, const Loc& loc = Loc()) {
    Issue is(api, Pipe::V, loc);
    CheckCount<T>(api, n);
    dst.CheckAligned(api, "dstLocal");
    src.CheckAligned(api, "srcLocal");
    uint8_t* d = dst.Span(api, "dstLocal", 0, n);
    uint8_t* s = src.Span(api, "srcLocal", 0, n);
    for (int64_t i = 0; i < n; ++i) Store<T>(d + i * sizeof(T), f(Load<T>(s + i * sizeof(T))));
}

template <typename T, typename F>
inline void UnaryRepeat(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        const uint64_t mask[2], bool bitwise, uint8_t repeat,
                        const AscendC::UnaryRepeatParams& p, F f, const Loc& loc = Loc()) {
    Issue is(api, Pipe::V, loc);
    RepeatShape r = CheckMask<T>(api, mask, bitwise);
    dst.CheckAligned(api, "dstLocal");
    src.CheckAligned(api, "srcLocal");
    ForRepeats(r, repeat, mask, bitwise, [&](uint64_t rep, uint64_t blk, uint64_t k) {
        T v = Load<T>(src.Span(api, "srcLocal", At(r, rep, blk, k, p.srcRepStride, p.srcBlkStride), 1));
        Store<T>(dst.Span(api, "dstLocal", At(r, rep, blk, k, p.dstRepStride, p.dstBlkStride), 1), f(v));
    });
}

template <typename T, typename F>
inline void BinaryCount(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
                        const AscendC::LocalTensor<T>& b, int64_t n, F f, const Loc& loc = Loc()) {
    Issue is(api, Pipe::V, loc);
    CheckCount<T>(api, n);
    dst.CheckAligned(api, "dstLocal");
    a.CheckAligned(api, "src0Local");
    b.CheckAligned(api, "src1Local");
    uint8_t* d = dst.Span(api, "dstLocal", 0, n);
    uint8_t* x = a.Span(api, "src0Local", 0, n);
    uint8_t* y = b.Span(api, "src1Local", 0, n);
    for (int64_t i = 0; i < n; ++i) {
        Store<T>(d + i * sizeof(T), f(Load<T>(x + i * sizeof(T)), Load<T>(y + i * sizeof(T))));
    }
}

template <typename T, typename F>
inline void BinaryRepeat(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a,
                         const AscendC::LocalTensor<T>& b, const uint64_t mask[2], bool bitwise,
                         uint8_t repeat, const AscendC::BinaryRepeatParams& p, F f, const Loc& loc = Loc()) {
    Issue is(api, Pipe::V, loc);
    RepeatShape r = CheckMask<T>(api, mask, bitwise);
    dst.CheckAligned(api, "dstLocal");
    a.CheckAligned(api, "src0Local");
    b.CheckAligned(api, "src1Local");
    ForRepeats(r, repeat, mask, bitwise, [&](uint64_t rep, uint64_t blk, uint64_t k) {
        T x = Load<T>(a.Span(api, "src0Local", At(r, rep, blk, k, p.src0RepStride, p.src0BlkStride), 1));
        T y = Load<T>(b.Span(api, "src1Local", At(r, rep, blk, k, p.src1RepStride, p.src1BlkStride), 1));
        Store<T>(dst.Span(api, "dstLocal", At(r, rep, blk, k, p.dstRepStride, p.dstBlkStride), 1), f(x, y));
    });
}

// Arithmetic on the modelled types: floating types compute in float and round once.
template <typename T, typename F> inline T Arith1(T a, F f) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(f(static_cast<double>(a)));
    else return FromF<T>(static_cast<float>(f(ToF(a))));
}
template <typename T, typename F> inline T Arith2(T a, T b, F f) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(f(static_cast<double>(a), static_cast<double>(b)));
    else return FromF<T>(static_cast<float>(f(ToF(a), ToF(b))));
}

}  // namespace opsdk_ascendc

#define OPSDK_DTYPES_MSG(api, list) #api " supports " list " only (Ascend C API documentation)"

// Binary instruction: count form and both mask/repeat forms.
#define OPSDK_BINARY(NAME, OKTYPES, LIST, EXPR)                                                        \
    template <typename T>                                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, \
                     const int32_t& calCount, opsdk_ascendc::Loc loc = {}) {                                                        \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        opsdk_ascendc::BinaryCount<T>(#NAME, dst, src0, src1, calCount, [](T a, T b) {                \
            return opsdk_ascendc::Arith2<T>(a, b, [](auto x, auto y) { return EXPR; });                \
        });                                                                                            \
    }                                                                                                  \
    template <typename T, bool isSetMask = true>                                                       \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, \
                     uint64_t mask, const uint8_t repeatTimes, const BinaryRepeatParams& p, opsdk_ascendc::Loc loc = {}) {          \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        const uint64_t m[2] = {mask, 0};                                                               \
        opsdk_ascendc::BinaryRepeat<T>(#NAME, dst, src0, src1, m, false, repeatTimes, p, [](T a, T b) { \
            return opsdk_ascendc::Arith2<T>(a, b, [](auto x, auto y) { return EXPR; });                \
        });                                                                                            \
    }                                                                                                  \
    template <typename T, bool isSetMask = true>                                                       \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, \
                     uint64_t mask[2], const uint8_t repeatTimes, const BinaryRepeatParams& p, opsdk_ascendc::Loc loc = {}) {       \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        opsdk_ascendc::BinaryRepeat<T>(#NAME, dst, src0, src1, mask, true, repeatTimes, p, [](T a, T b) { \
            return opsdk_ascendc::Arith2<T>(a, b, [](auto x, auto y) { return EXPR; });                \
        });                                                                                            \
    }

// Unary instruction: count form and both mask/repeat forms.
#define OPSDK_UNARY(NAME, OKTYPES, LIST, EXPR)                                                         \
    template <typename T>                                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount, opsdk_ascendc::Loc loc = {}) {  \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        opsdk_ascendc::UnaryCount<T>(#NAME, dst, src, calCount, [](T a) {                              \
            return opsdk_ascendc::Arith1<T>(a, [](auto x) { return EXPR; });                           \
        });                                                                                            \
    }                                                                                                  \
    template <typename T, bool isSetMask = true>                                                       \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,              \
                     const uint8_t repeatTimes, const UnaryRepeatParams& p, opsdk_ascendc::Loc loc = {}) {                          \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        const uint64_t m[2] = {mask, 0};                                                               \
        opsdk_ascendc::UnaryRepeat<T>(#NAME, dst, src, m, false, repeatTimes, p, [](T a) {             \
            return opsdk_ascendc::Arith1<T>(a, [](auto x) { return EXPR; });                           \
        });                                                                                            \
    }                                                                                                  \
    template <typename T, bool isSetMask = true>                                                       \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[2],           \
                     const uint8_t repeatTimes, const UnaryRepeatParams& p, opsdk_ascendc::Loc loc = {}) {                          \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        opsdk_ascendc::UnaryRepeat<T>(#NAME, dst, src, mask, true, repeatTimes, p, [](T a) {           \
            return opsdk_ascendc::Arith1<T>(a, [](auto x) { return EXPR; });                           \
        });                                                                                            \
    }

// Vector-scalar instruction: count form and both mask/repeat forms.
#define OPSDK_SCALAR(NAME, OKTYPES, LIST, EXPR)                                                        \
    template <typename T>                                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,       \
                     const int32_t& calCount, opsdk_ascendc::Loc loc = {}) {                                                        \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        const T s = scalarValue;                                                                       \
        opsdk_ascendc::UnaryCount<T>(#NAME, dst, src, calCount, [s](T a) {                             \
            return opsdk_ascendc::Arith2<T>(a, s, [](auto x, auto y) { return EXPR; });                \
        });                                                                                            \
    }                                                                                                  \
    template <typename T, bool isSetMask = true>                                                       \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,       \
                     uint64_t mask, const uint8_t repeatTimes, const UnaryRepeatParams& p, opsdk_ascendc::Loc loc = {}) {           \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        const uint64_t m[2] = {mask, 0};                                                               \
        const T s = scalarValue;                                                                       \
        opsdk_ascendc::UnaryRepeat<T>(#NAME, dst, src, m, false, repeatTimes, p, [s](T a) {            \
            return opsdk_ascendc::Arith2<T>(a, s, [](auto x, auto y) { return EXPR; });                \
        });                                                                                            \
    }                                                                                                  \
    template <typename T, bool isSetMask = true>                                                       \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,       \
                     uint64_t mask[2], const uint8_t repeatTimes, const UnaryRepeatParams& p, opsdk_ascendc::Loc loc = {}) {        \
        static_assert(OKTYPES, OPSDK_DTYPES_MSG(NAME, LIST));                                          \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        const T s = scalarValue;                                                                       \
        opsdk_ascendc::UnaryRepeat<T>(#NAME, dst, src, mask, true, repeatTimes, p, [s](T a) {          \
            return opsdk_ascendc::Arith2<T>(a, s, [](auto x, auto y) { return EXPR; });                \
        });                                                                                            \
    }

namespace AscendC {

using opsdk_ascendc::kArith;
using opsdk_ascendc::kFloat;

OPSDK_BINARY(Add, kArith<T>, "half, float, int16_t, int32_t", x + y)
OPSDK_BINARY(Sub, kArith<T>, "half, float, int16_t, int32_t", x - y)
OPSDK_BINARY(Mul, kArith<T>, "half, float, int16_t, int32_t", x * y)
OPSDK_BINARY(Div, kFloat<T>, "half, float", opsdk_ascendc::Ftz(x / y))
OPSDK_BINARY(Max, kArith<T>, "half, float, int16_t, int32_t", (std::isnan(x) || std::isnan(y)) ? NAN : (x > y ? x : y))
OPSDK_BINARY(Min, kArith<T>, "half, float, int16_t, int32_t", (std::isnan(x) || std::isnan(y)) ? NAN : (x < y ? x : y))

OPSDK_UNARY(Exp, kFloat<T>, "half, float", opsdk_ascendc::Ftz(std::exp(x)))
OPSDK_UNARY(Ln, kFloat<T>, "half, float", opsdk_ascendc::Ftz(std::log(x)))
OPSDK_UNARY(Abs, kFloat<T>, "half, float", std::fabs(x))
OPSDK_UNARY(Sqrt, kFloat<T>, "half, float", opsdk_ascendc::Ftz(std::sqrt(x)))
OPSDK_UNARY(Rsqrt, kFloat<T>, "half, float", 1.0f / std::sqrt(x))
OPSDK_UNARY(Reciprocal, kFloat<T>, "half, float", 1.0f / x)
OPSDK_UNARY(Relu, (opsdk_ascendc::OneOf<T, half, float, int32_t>), "half, float, int32_t", (std::isnan(x) ? x : (x > 0 ? x : 0 * x)))

OPSDK_SCALAR(Adds, kArith<T>, "half, float, int16_t, int32_t", x + y)
OPSDK_SCALAR(Muls, kArith<T>, "half, float, int16_t, int32_t", x * y)
OPSDK_SCALAR(Maxs, kArith<T>, "half, float, int16_t, int32_t", (std::isnan(x) || std::isnan(y)) ? NAN : (x > y ? x : y))
OPSDK_SCALAR(Mins, kArith<T>, "half, float, int16_t, int32_t", (std::isnan(x) || std::isnan(y)) ? NAN : (x < y ? x : y))
OPSDK_SCALAR(LeakyRelu, kFloat<T>, "half, float", (x >= 0 ? x : x * y))

}  // namespace AscendC

namespace opsdk_ascendc {

// The high-level Tanh, Erf and Erfc as CANN 8.1.RC1 implements them
// (highlevel_api/impl/math/{tanh,erf,erfc}/*_common_impl.h): float arithmetic step by step.
inline float TanhChip(float x) {  // (e^2x - 1) / (e^2x + 1), x clipped to [-8.8, 8.8]
    float c = x > 8.8f ? 8.8f : x;
    c = c < -8.8f ? -8.8f : c;
    const float e = Ftz(std::exp(c * 2.0f));
    return Ftz((e - 1.0f) / (e + 1.0f));
}

inline float ErfChip(float x) {  // P(x) / Q(x), x clipped to [-3.92, 3.92]
    float c = x > 3.92f ? 3.92f : x;
    c = c < -3.92f ? -3.92f : c;
    const float x2 = c * c;
    float p = x2 * 0.053443748819f + 0.75517016694e1f;
    p = x2 * p + 0.10162808918e3f;
    p = x2 * p + 0.13938061484e4f;
    p = x2 * p + 0.50637915060e4f;
    p = x2 * p + 0.29639384698e5f;
    p = c * p;
    float q = x2 + 0.31212858877e2f;
    q = x2 * q + 0.39856963806e3f;
    q = x2 * q + 0.30231248150e4f;
    q = x2 * q + 0.13243365831e5f;
    q = x2 * q + 0.26267224157e5f;
    return Ftz(p / q);
}

inline float ErfcChip(float x) {  // exp(-z^2) R(z) / S(z) at z = |x|, reflected for x < 0
    float c = x < 10.0f ? x : 10.0f;
    c = c > -10.0f ? c : -10.0f;
    const float z = std::fabs(c) + 2.168404344971009e-19f;
    const float sign = Ftz(c / z);
    const float rk[] = {0.2517003236e-4f, -0.3848015171e-3f, 0.5681528564e0f, 0.5245623129e1f,
                        0.2107740710e2f, 0.4212761755e2f, 0.4380524149e2f};
    float r = z * 0.1735313680e-7f + -0.9856738394e-6f;
    for (float k : rk) r = z * r + k;
    float s = z + 0.9349684299e1f;
    const float s0[] = {0.3756930664e2f, 0.8058268949e2f, 0.9155653738e2f, 0.4380524152e2f};
    for (float k : s0) s = z * s + k;
    const float e = Ftz(std::exp(-(z * z)));
    const float v = e * Ftz(r / s);
    return v * sign + (1.0f - sign);
}

// The chunk (elements per pass) the API computes with `bytes` of tmp space, by the formulas
// of the implementation; 0 is an error there (CheckTmpBufferSize asserts, the NPU divides by 0).
template <typename T>
inline void CheckTmp(const char* api, uint64_t bytes, uint32_t perHalf, uint32_t perFloat, bool inFloats,
                     const char* where) {
    const uint64_t units = inFloats ? bytes / sizeof(float) : bytes / sizeof(T);
    const uint32_t k = sizeof(T) == 2 ? perHalf : perFloat;
    const uint64_t chunk = units / k / 32 * 32;
    if (chunk == 0) {
        const uint64_t need = uint64_t(k) * 32 * (inFloats ? sizeof(float) : sizeof(T));
        Fail(api, std::string("has ") + S(bytes) + " bytes of tmp space (" + where + "), a chunk of 0 " +
                      TypeName<T>() + " elements; it needs at least " + S(need) +
                      " bytes: pass a sharedTmpBuffer from a TBuf of that size (size it with Get" + api +
                      "MaxMinTmpSize) or leave that much Unified Buffer free after the TPipe's buffers");
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

// Advanced math API (count form), with and without sharedTmpBuffer; without it the API uses
// the tmp-buffer stack (the Unified Buffer after the TPipe's buffers).
#define OPSDK_ADV_UNARY(NAME, FN, PER_HALF, PER_FLOAT, IN_FLOATS)                                      \
    template <typename T, bool isReuseSource = false>                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                             \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,           \
                     opsdk_ascendc::Loc loc = {}) {                                                \
        static_assert(kFloat<T>, OPSDK_DTYPES_MSG(NAME, "half, float"));                               \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        sharedTmpBuffer.Check(#NAME, "sharedTmpBuffer");                                               \
        opsdk_ascendc::CheckTmp<T>(#NAME, sharedTmpBuffer.GetSize(), PER_HALF, PER_FLOAT, IN_FLOATS,   \
                                   "the sharedTmpBuffer");                                             \
        opsdk_ascendc::UnaryCount<T>(#NAME, dst, src, calCount, [](T a) {                              \
            return opsdk_ascendc::FromF<T>(opsdk_ascendc::FN(opsdk_ascendc::ToF(a)));                  \
        });                                                                                            \
        std::memset(sharedTmpBuffer.Span(#NAME, "sharedTmpBuffer", 0, sharedTmpBuffer.GetSize()),      \
                    0xff, sharedTmpBuffer.GetSize());                                                  \
    }                                                                                                  \
    template <typename T, bool isReuseSource = false>                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount,  \
                     opsdk_ascendc::Loc loc = {}) {                                                \
        static_assert(kFloat<T>, OPSDK_DTYPES_MSG(NAME, "half, float"));                               \
        opsdk_ascendc::Issue is(#NAME, opsdk_ascendc::Pipe::V, loc); \
        opsdk_ascendc::CheckTmp<T>(#NAME, opsdk_ascendc::StackBytes(), PER_HALF, PER_FLOAT, IN_FLOATS, \
                                   "the tmp-buffer stack: the Unified Buffer after the TPipe's buffers"); \
        opsdk_ascendc::UnaryCount<T>(#NAME, dst, src, calCount, [](T a) {                              \
            return opsdk_ascendc::FromF<T>(opsdk_ascendc::FN(opsdk_ascendc::ToF(a)));                  \
        });                                                                                            \
    }

#if OPSDK_HAS_Tanh
OPSDK_ADV_UNARY(Tanh, TanhChip, 2, 1, true)
#else
OPSDK_UNAVAILABLE(Tanh)
#endif
#if OPSDK_HAS_Erf
OPSDK_ADV_UNARY(Erf, ErfChip, 8, 3, false)
#else
OPSDK_UNAVAILABLE(Erf)
#endif
#if OPSDK_HAS_Erfc
OPSDK_ADV_UNARY(Erfc, ErfcChip, 12, 5, false)
#else
OPSDK_UNAVAILABLE(Erfc)
#endif

template <typename T> inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& calCount,
                                            opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("Duplicate", opsdk_ascendc::Pipe::V, loc);
    static_assert(opsdk_ascendc::OneOf<T, half, float, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t>,
                  OPSDK_DTYPES_MSG(Duplicate, "half, float, bfloat16_t, int16_t, uint16_t, int32_t, uint32_t"));
    opsdk_ascendc::CheckCount<T>("Duplicate", calCount);
    dst.CheckAligned("Duplicate", "dstLocal");
    uint8_t* d = dst.Span("Duplicate", "dstLocal", 0, calCount);
    for (int32_t i = 0; i < calCount; ++i) opsdk_ascendc::Store<T>(d + i * sizeof(T), scalarValue);
}

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask, const uint8_t repeatTimes,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("Duplicate", opsdk_ascendc::Pipe::V, loc);
    const uint64_t m[2] = {mask, 0};
    opsdk_ascendc::RepeatShape r = opsdk_ascendc::CheckMask<T>("Duplicate", m, false);
    dst.CheckAligned("Duplicate", "dstLocal");
    opsdk_ascendc::ForRepeats(r, repeatTimes, m, false, [&](uint64_t rep, uint64_t blk, uint64_t k) {
        uint64_t at = opsdk_ascendc::At(r, rep, blk, k, dstRepeatStride, dstBlockStride);
        opsdk_ascendc::Store<T>(dst.Span("Duplicate", "dstLocal", at, 1), scalarValue);
    });
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_VECTOR_H
