// opsdk's CPU model of the Ascend C API: Cast, Compare, Select and reductions.
#ifndef OPSDK_ASCENDC_MODEL_MISC_H
#define OPSDK_ASCENDC_MODEL_MISC_H

#include "opsdk_model_vector.h"

namespace opsdk_ascendc {

// The neighbour of a 16-bit float (half, bfloat16_t) one step up or down.
template <typename D> inline D Step(D h, bool up) {
    static_assert(sizeof(D) == 2, "Step works on 16-bit floats");
    uint16_t b;
    std::memcpy(&b, &h, 2);
    const bool neg = (b & 0x8000u) != 0, zero = (b & 0x7fffu) == 0;
    if (zero) {
        b = up ? 0x0001u : 0x8001u;
    } else if (neg == up) {
        --b;  // toward zero
    } else {
        ++b;  // away from zero
    }
    D out;
    std::memcpy(&out, &b, 2);
    return out;
}

// float -> 16-bit float with a rounding mode: the nearest value, then its neighbour on the
// other side of v when the mode asks for it.
template <typename D> inline D RoundTo(float v, AscendC::RoundMode m) {
    using AscendC::RoundMode;
    D near = FromF<D>(v);  // round to nearest even (CAST_RINT, and CAST_NONE when inexact)
    float nf = ToF(near);
    if (std::isnan(v) || std::isinf(v) || nf == v || m == RoundMode::CAST_NONE || m == RoundMode::CAST_RINT) {
        return near;
    }
    D down = nf < v ? near : Step(near, false), up = nf > v ? near : Step(near, true);
    switch (m) {
        case RoundMode::CAST_FLOOR: return down;
        case RoundMode::CAST_CEIL: return up;
        case RoundMode::CAST_TRUNC: return v > 0 ? down : up;
        case RoundMode::CAST_ROUND: {
            float dd = v - ToF(down), du = ToF(up) - v;
            if (dd == du) return v > 0 ? up : down;
            return dd < du ? down : up;
        }
        default: {  // CAST_ODD: the neighbour whose last mantissa bit is 1
            uint16_t b;
            std::memcpy(&b, &down, 2);
            return (b & 1u) ? down : up;
        }
    }
}

// An integer -> float (int32_t -> float; exact below 2^24), with the mode's rounding above it.
inline float IntToFloat(int64_t s, AscendC::RoundMode m) {
    using AscendC::RoundMode;
    const double v = double(s);
    const float near = float(v);  // round to nearest even
    if (double(near) == v || m == RoundMode::CAST_NONE || m == RoundMode::CAST_RINT) {
        return near;
    }
    const float down = double(near) < v ? near : std::nextafter(near, -INFINITY);
    const float up = double(near) > v ? near : std::nextafter(near, INFINITY);
    switch (m) {
        case RoundMode::CAST_FLOOR: return down;
        case RoundMode::CAST_CEIL: return up;
        case RoundMode::CAST_TRUNC: return v > 0 ? down : up;
        case RoundMode::CAST_ROUND: {
            const double dd = v - double(down), du = double(up) - v;
            return dd == du ? (v > 0 ? up : down) : (dd < du ? down : up);
        }
        default: {  // CAST_ODD: the neighbour whose last mantissa bit is 1
            uint32_t b;
            std::memcpy(&b, &down, 4);
            return (b & 1u) ? down : up;
        }
    }
}

template <typename I> inline I RoundToInt(float v, AscendC::RoundMode m) {
    using AscendC::RoundMode;
    double r;
    switch (m) {
        case RoundMode::CAST_FLOOR: r = std::floor(v); break;
        case RoundMode::CAST_CEIL: r = std::ceil(v); break;
        case RoundMode::CAST_ROUND: r = std::round(v); break;
        case RoundMode::CAST_TRUNC: r = std::trunc(v); break;
        default: r = std::nearbyint(v); break;
    }
    if (std::isnan(r)) return 0;
    r = std::min<double>(std::max<double>(r, double(std::numeric_limits<I>::min())), double(std::numeric_limits<I>::max()));
    return static_cast<I>(r);
}

inline const char* ModeName(AscendC::RoundMode m) {
    static const char* names[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
    return names[static_cast<int>(m)];
}

template <typename D, typename S> constexpr bool kCastPair =
    (std::is_same_v<S, half> && OneOf<D, float, int32_t, int16_t, int8_t, uint8_t>) ||
    (std::is_same_v<S, float> && OneOf<D, half, bfloat16_t, int32_t, int16_t, int64_t>) ||
    (std::is_same_v<S, bfloat16_t> && OneOf<D, float, int32_t>) ||
    (std::is_same_v<S, int32_t> && OneOf<D, float, half, int16_t, int64_t>) ||
    (std::is_same_v<S, int16_t> && OneOf<D, half, float>) ||
    (std::is_same_v<S, int8_t> && OneOf<D, half>) || (std::is_same_v<S, uint8_t> && OneOf<D, half>) ||
    (std::is_same_v<S, half> && kInt4<D>) || (kInt4<S> && std::is_same_v<D, half>);

// The int4b_t casts: half -> int4b_t on 200 and 220, int4b_t -> half on 220 only
// (basic_api/impl/dav_c220 and dav_m200/kernel_operator_vec_vconv_impl.h, CheckCastDatatype).
template <typename D, typename S> constexpr bool kInt4CastOk =
    !(kInt4<D> || kInt4<S>) || (OPSDK_HAS_INT4_Cast && (kInt4<D> || OPSDK_AICORE_ARCH == 220));

template <typename D, typename S> inline D CastOne(S s, AscendC::RoundMode m) {
    if constexpr (kInt4<D>) {  // rounded, then saturated to [-8, 7] as the 8-bit casts saturate
        return D(std::clamp(RoundToInt<int32_t>(ToF(s), m), -8, 7));
    } else if constexpr (kInt4<S>) {
        return FromF<D>(static_cast<float>(static_cast<int32_t>(s)));  // exact
    } else if constexpr (std::is_integral_v<D>) {
        return RoundToInt<D>(static_cast<float>(ToF(s)), m);
    } else if constexpr (std::is_integral_v<S> && std::is_same_v<D, float>) {
        return IntToFloat(int64_t(s), m);
    } else if constexpr (std::is_integral_v<S>) {
        return RoundTo<D>(static_cast<float>(s), m);
    } else if constexpr (sizeof(D) >= sizeof(S) && !std::is_same_v<D, S>) {
        return FromF<D>(ToF(s));  // widening: exact
    } else {
        return RoundTo<D>(ToF(s), m);
    }
}

template <typename D, typename S> inline void CheckCastMode(AscendC::RoundMode m) {
    using AscendC::RoundMode;
    constexpr bool exact = std::is_floating_point_v<D> && !std::is_integral_v<S> && sizeof(D) > sizeof(S);
    constexpr bool exactBf = std::is_same_v<D, float> && std::is_same_v<S, bfloat16_t>;
    if ((exact || exactBf) && m != RoundMode::CAST_NONE) {
        Fail("Cast", std::string("round_mode ") + ModeName(m) + " for " + TypeName<S>() + " -> " + TypeName<D>() +
                         ": this conversion is exact and takes CAST_NONE only");
    }
    // half -> int8_t/uint8_t takes CAST_NONE (vconv_f162s8 / vconv_f162u8, rounding to nearest:
    // basic_api/impl/dav_c220/kernel_operator_vec_vconv_impl.h); other float -> int casts do not.
    constexpr bool noneOk = std::is_same_v<S, half> && OneOf<D, int8_t, uint8_t>;
    if (std::is_integral_v<D> && m == RoundMode::CAST_NONE && !std::is_integral_v<S> && !noneOk) {
        Fail("Cast", std::string("round_mode CAST_NONE for ") + TypeName<S>() + " -> " + TypeName<D>() +
                         ": name the rounding (CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND or CAST_TRUNC)");
    }
    if (std::is_same_v<S, float> && std::is_same_v<D, bfloat16_t> && m == RoundMode::CAST_NONE) {
        // basic_api/impl/dav_c220/kernel_operator_vec_vconv_impl.h asserts on this mode
        Fail("Cast", "round_mode CAST_NONE for float -> bfloat16_t is not supported on the chip "
                     "(\"CAST_NONE from float to bfloat16_t not supported on current device\"); name the "
                     "rounding, e.g. CAST_RINT");
    }
    if (kInt4<S> && m != RoundMode::CAST_NONE) {
        Fail("Cast", std::string("round_mode ") + ModeName(m) + " for int4b_t -> half: this conversion is exact and "
                     "takes CAST_NONE only (dav_c220/kernel_operator_vec_vconv_impl.h)");
    }
    if (kInt4<D> && OPSDK_AICORE_ARCH != 220 && m != RoundMode::CAST_NONE) {
        Fail("Cast", std::string("round_mode ") + ModeName(m) + " for half -> int4b_t: __CCE_AICORE__ " +
                         std::to_string(OPSDK_AICORE_ARCH) + " takes CAST_NONE only (dav_m200/kernel_operator_vec_vconv_impl.h)");
    }
    if (m == RoundMode::CAST_ODD && !(std::is_same_v<S, float> && std::is_same_v<D, half>)) {
        Fail("Cast", std::string("round_mode CAST_ODD is for float -> half only, not ") + TypeName<S>() + " -> " +
                         TypeName<D>());
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T1, typename T2>
inline void Cast(const LocalTensor<T1>& dst, const LocalTensor<T2>& src, const RoundMode& round_mode,
                 const uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("Cast", opsdk_ascendc::Pipe::V, loc);
    static_assert(opsdk_ascendc::kCastPair<T1, T2>, "Cast: this source/destination dtype pair is not a documented Ascend C Cast");
    static_assert(OPSDK_HAS_BF16_Cast || !(std::is_same_v<T1, bfloat16_t> || std::is_same_v<T2, bfloat16_t>),
                  "Cast of bfloat16_t is not in the Ascend C of this SoC family (see opsdk/ascend/aicore_apis.py)");
    static_assert(opsdk_ascendc::kInt4CastOk<T1, T2>,
                  "Cast of int4b_t is not in the Ascend C of this SoC family (see opsdk/ascend/aicore_apis.py)");
    opsdk_ascendc::CheckCastMode<T1, T2>(round_mode);
    dst.CheckAligned("Cast", "dstLocal");
    src.CheckAligned("Cast", "srcLocal");
    uint8_t* d = dst.Span("Cast", "dstLocal", 0, calCount);
    uint8_t* s = src.Span("Cast", "srcLocal", 0, calCount);
    for (uint32_t i = 0; i < calCount; ++i) {
        opsdk_ascendc::StoreAt<T1>(d, i, opsdk_ascendc::CastOne<T1>(opsdk_ascendc::LoadAt<T2>(s, i), round_mode));
    }
}

template <typename T1, typename T2, bool isSetMask = true>
inline void Cast(const LocalTensor<T1>& dst, const LocalTensor<T2>& src, const RoundMode& round_mode,
                 const uint64_t mask, const uint8_t repeatTimes, const UnaryRepeatParams& p,
                 opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("Cast", opsdk_ascendc::Pipe::V, loc);
    static_assert(opsdk_ascendc::kCastPair<T1, T2>, "Cast: this source/destination dtype pair is not a documented Ascend C Cast");
    static_assert(OPSDK_HAS_BF16_Cast || !(std::is_same_v<T1, bfloat16_t> || std::is_same_v<T2, bfloat16_t>),
                  "Cast of bfloat16_t is not in the Ascend C of this SoC family (see opsdk/ascend/aicore_apis.py)");
    static_assert(opsdk_ascendc::kInt4CastOk<T1, T2>,
                  "Cast of int4b_t is not in the Ascend C of this SoC family (see opsdk/ascend/aicore_apis.py)");
    opsdk_ascendc::CheckCastMode<T1, T2>(round_mode);
    using W = std::conditional_t<(sizeof(T1) > sizeof(T2)), T1, T2>;  // the wider type sets the repeat
    const uint64_t m[2] = {mask, 0};
    opsdk_ascendc::RepeatShape r = opsdk_ascendc::CheckMask<W>("Cast", m, false);
    dst.CheckAligned("Cast", "dstLocal");
    src.CheckAligned("Cast", "srcLocal");
    const uint64_t dpb = opsdk_ascendc::ElemsOf<T1>(32), spb = opsdk_ascendc::ElemsOf<T2>(32);
    opsdk_ascendc::ForRepeats(r, repeatTimes, m, false, [&](uint64_t rep, uint64_t blk, uint64_t k) {
        uint64_t idx = blk * r.perBlock + k;
        uint64_t so = (rep * p.srcRepStride + (idx / spb) * p.srcBlkStride) * spb + idx % spb;
        uint64_t dO = (rep * p.dstRepStride + (idx / dpb) * p.dstBlkStride) * dpb + idx % dpb;
        T2 v = opsdk_ascendc::LoadAt<T2>(src.Span("Cast", "srcLocal", so, 1), opsdk_ascendc::kInt4<T2> ? so % 2 : 0);
        opsdk_ascendc::StoreAt<T1>(dst.Span("Cast", "dstLocal", dO, 1), opsdk_ascendc::kInt4<T1> ? dO % 2 : 0,
                                   opsdk_ascendc::CastOne<T1>(v, round_mode));
    });
}

// Scalar conversions as basic_api/impl/kernel_utils.h has them: ToBfloat16 keeps the upper
// 16 bits of the float (it truncates toward zero; it does not round to nearest).
#if OPSDK_HAS_ToBfloat16
inline bfloat16_t ToBfloat16(const float& fVal) {
    uint32_t u;
    std::memcpy(&u, &fVal, 4);
    bfloat16_t b;
    b.bits = static_cast<uint16_t>(u >> 16);
    return b;
}
#else
OPSDK_UNAVAILABLE(ToBfloat16)
#endif
#if OPSDK_HAS_ToFloat
inline float ToFloat(const bfloat16_t& bVal) { return static_cast<float>(bVal); }
#else
OPSDK_UNAVAILABLE(ToFloat)
#endif

}  // namespace AscendC

namespace opsdk_ascendc {

inline bool Cmp(float a, float b, AscendC::CMPMODE m) {
    using AscendC::CMPMODE;
    switch (m) {
        case CMPMODE::LT: return a < b;
        case CMPMODE::GT: return a > b;
        case CMPMODE::EQ: return a == b;
        case CMPMODE::LE: return a <= b;
        case CMPMODE::GE: return a >= b;
        default: return a != b;
    }
}

template <typename T> inline void CheckCmpCount(const char* api, uint32_t n) {
    if (uint64_t(n) * sizeof(T) % kRepeatBytes != 0) {
        Fail(api, "calCount is " + S(n) + " " + TypeName<T>() + " elements = " + S(n * sizeof(T)) +
                      " bytes; it must be a multiple of 256 bytes (whole repeats): round the count up and "
                      "size the buffers for it");
    }
}

template <typename T, typename U> inline void WriteBits(const char* api, const AscendC::LocalTensor<U>& dst, uint32_t n,
                                                         const std::function<bool(uint32_t)>& bit) {
    static_assert(OneOf<U, uint8_t>, "Compare: dstLocal must be a LocalTensor<uint8_t> bit mask");
    dst.CheckAligned(api, "dstLocal");
    uint8_t* d = dst.Span(api, "dstLocal", 0, (n + 7) / 8);
    for (uint32_t i = 0; i < (n + 7) / 8; ++i) d[i] = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (bit(i)) d[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("Compare", opsdk_ascendc::Pipe::V, loc);
    static_assert(kFloat<T>, OPSDK_DTYPES_MSG(Compare, "half, float"));
    opsdk_ascendc::CheckCmpCount<T>("Compare", calCount);
    src0.CheckAligned("Compare", "src0Local");
    src1.CheckAligned("Compare", "src1Local");
    uint8_t* a = src0.Span("Compare", "src0Local", 0, calCount);
    uint8_t* b = src1.Span("Compare", "src1Local", 0, calCount);
    opsdk_ascendc::WriteBits<T>("Compare", dst, calCount, [&](uint32_t i) {
        return opsdk_ascendc::Cmp(opsdk_ascendc::ToF(opsdk_ascendc::Load<T>(a + i * sizeof(T))),
                                  opsdk_ascendc::ToF(opsdk_ascendc::Load<T>(b + i * sizeof(T))), cmpMode);
    });
}

// Compare without dstLocal: one repeat's active elements compared into the CMPMASK register
// (bit i for element i; inactive bits 0), read back with GetCmpMask (basic_api/interface/
// kernel_operator_vec_cmpsel_intf.h).
template <typename T>
inline void CompareToRegister(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                              const uint64_t mask[2], bool bitwise, const BinaryRepeatParams& p,
                              const opsdk_ascendc::Loc& loc) {
    opsdk_ascendc::Issue is("Compare", opsdk_ascendc::Pipe::V, loc);
    static_assert(kFloat<T>, OPSDK_DTYPES_MSG(Compare, "half, float"));
    opsdk_ascendc::RepeatShape r = opsdk_ascendc::CheckMask<T>("Compare", mask, bitwise);
    src0.CheckAligned("Compare", "src0Local");
    src1.CheckAligned("Compare", "src1Local");
    uint8_t bits[16] = {};
    for (uint64_t idx = 0; idx < r.perRepeat; ++idx) {
        if (!opsdk_ascendc::MaskOn(mask, bitwise, idx)) continue;
        const uint64_t blk = idx / r.perBlock, k = idx % r.perBlock;
        float a = opsdk_ascendc::ToF(opsdk_ascendc::Load<T>(
            src0.Span("Compare", "src0Local", opsdk_ascendc::At(r, 0, blk, k, 0, p.src0BlkStride), 1)));
        float b = opsdk_ascendc::ToF(opsdk_ascendc::Load<T>(
            src1.Span("Compare", "src1Local", opsdk_ascendc::At(r, 0, blk, k, 0, p.src1BlkStride), 1)));
        if (opsdk_ascendc::Cmp(a, b, cmpMode)) bits[idx / 8] |= static_cast<uint8_t>(1u << (idx % 8));
    }
    std::memcpy(opsdk_ascendc::Cur().cmpMask, bits, sizeof bits);
}

template <typename T>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask[],
                    const BinaryRepeatParams& repeatParams, opsdk_ascendc::Loc loc = {}) {
    CompareToRegister(src0, src1, cmpMode, mask, true, repeatParams, loc);
}
template <typename T>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask,
                    const BinaryRepeatParams& repeatParams, opsdk_ascendc::Loc loc = {}) {
    const uint64_t m[2] = {mask, 0};
    CompareToRegister(src0, src1, cmpMode, m, false, repeatParams, loc);
}

// The CMPMASK register's 128 bits to / from the Unified Buffer (16 bytes).
template <typename T> inline void GetCmpMask(const LocalTensor<T>& dst, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("GetCmpMask", opsdk_ascendc::Pipe::V, loc);
    dst.CheckAligned("GetCmpMask", "dst");
    std::memcpy(dst.template ReinterpretCast<uint8_t>().Span("GetCmpMask", "dst", 0, 16),
                opsdk_ascendc::Cur().cmpMask, 16);
}
template <typename T> inline void SetCmpMask(const LocalTensor<T>& src, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("SetCmpMask", opsdk_ascendc::Pipe::V, loc);
    src.CheckAligned("SetCmpMask", "src");
    std::memcpy(opsdk_ascendc::Cur().cmpMask,
                src.template ReinterpretCast<uint8_t>().Span("SetCmpMask", "src", 0, 16), 16);
}

#if OPSDK_HAS_GatherMask
// GatherMask (vreducev2): the elements of src0 whose pattern bit is set, packed into dstLocal
// in order; rsvdCnt their count (basic_api/interface/kernel_operator_vec_gather_mask_intf.h).
enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
#if OPSDK_AICORE_ARCH == 220
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;
#else
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V1;
#endif
struct GatherMaskParams {
    GatherMaskParams() = default;
    GatherMaskParams(uint8_t src0BlockStrideIn, uint16_t repeatTimesIn, uint16_t src0RepeatStrideIn,
                     uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = 8;
    uint8_t src1RepeatStride = 8;
};

template <typename T, GatherMaskMode mode, typename Bit>
inline void GatherMaskRun(const LocalTensor<T>& dst, const LocalTensor<T>& src0, bool reduceMode, uint32_t mask,
                          const GatherMaskParams& p, uint64_t& rsvdCnt, Bit bit, const opsdk_ascendc::Loc& loc) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "GatherMask supports 16- and 32-bit types only (Ascend C API)");
    static_assert(mode == defaultGatherMaskMode,
                  "GatherMask: this SoC family takes GatherMaskMode::VERSION_V2 on 220 and VERSION_V1 elsewhere "
                  "(dav_*/kernel_operator_vec_gather_mask_impl.h)");
    opsdk_ascendc::Issue is("GatherMask", opsdk_ascendc::Pipe::V, loc);
    dst.CheckAligned("GatherMask", "dstLocal");
    src0.CheckAligned("GatherMask", "src0Local");
    const opsdk_ascendc::RepeatShape r{opsdk_ascendc::kRepeatBytes / sizeof(T), opsdk_ascendc::kBlockBytes / sizeof(T)};
    // normal mode: repeatTimes whole repeats. Counter mode (the API's GatherMask.md): on 220
    // every repeat takes mask elements, repeatTimes of them; on 200 mask elements in all, in
    // whole repeats (SetMaskCount)
    const bool perRepeatCount = reduceMode && OPSDK_AICORE_ARCH == 220;
    const uint64_t per = perRepeatCount ? uint64_t(mask) : r.perRepeat;
    const uint64_t total = !reduceMode ? uint64_t(p.repeatTimes) * r.perRepeat
                           : perRepeatCount ? uint64_t(mask) * p.repeatTimes : uint64_t(mask);
    if ((!reduceMode || perRepeatCount) && (p.repeatTimes < 1 || p.repeatTimes > 255)) {
        opsdk_ascendc::Fail("GatherMask", "repeatTimes is " + opsdk_ascendc::S(p.repeatTimes) + "; expected 1 to 255");
    }
    uint64_t out = 0;
    for (uint64_t e = 0; e < total; ++e) {
        const uint64_t rep = e / per, idx = e % per;
        if (!bit(rep, idx)) continue;
        const uint64_t at = opsdk_ascendc::At(r, rep, idx / r.perBlock, idx % r.perBlock, p.src0RepeatStride,
                                              p.src0BlockStride);
        std::memcpy(dst.Span("GatherMask", "dstLocal", out, 1), src0.Span("GatherMask", "src0Local", at, 1), sizeof(T));
        ++out;
    }
    rsvdCnt = out;
}

// src1Pattern a tensor: uint16_t bits for 16-bit types, uint32_t for 32-bit; src1RepeatStride
// blocks between the repeats' patterns (0: one pattern for all).
template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                       opsdk_ascendc::Loc loc = {}) {
    static_assert(sizeof(U) == sizeof(T) && std::is_unsigned_v<U>,
                  "GatherMask: src1Pattern is LocalTensor<uint16_t> for 16-bit and LocalTensor<uint32_t> for 32-bit types");
    const LocalTensor<uint8_t> bits = src1Pattern.template ReinterpretCast<uint8_t>();
    GatherMaskRun<T, mode>(dst, src0, reduceMode, mask, p, rsvdCnt, [&](uint64_t rep, uint64_t idx) {
        const uint64_t byte = rep * p.src1RepeatStride * opsdk_ascendc::kBlockBytes + idx / 8;
        return (*bits.Span("GatherMask", "src1Pattern", byte, 1) >> (idx % 8)) & 1;
    }, loc);
}

// src1Pattern built in: 1 even, 2 odd elements, 3..6 the first..fourth of every four, 7 all.
template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                       opsdk_ascendc::Loc loc = {}) {
    if (src1Pattern < 1 || src1Pattern > 7) {
        opsdk_ascendc::Fail("GatherMask", "src1Pattern is " + opsdk_ascendc::S(src1Pattern) + "; expected 1 to 7");
    }
    GatherMaskRun<T, mode>(dst, src0, reduceMode, mask, p, rsvdCnt, [&](uint64_t, uint64_t idx) {
        switch (src1Pattern) {
            case 1: return idx % 2 == 0;
            case 2: return idx % 2 == 1;
            case 7: return true;
            default: return idx % 4 == uint64_t(src1Pattern - 3);
        }
    }, loc);
}
#else
OPSDK_UNAVAILABLE(GatherMask)
#endif

// GatherRepeatParams as basic_api/interface/kernel_struct_gather.h declares it (Gatherb reads
// dstBlkStride and dstRepStride, in 32-byte blocks).
struct GatherRepeatParams {
    GatherRepeatParams() = default;
    GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = 8;
    uint16_t dstRepStride = 8;
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t src0RepStride = 8;
    uint8_t src1RepStride = 8;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

}  // namespace AscendC

namespace opsdk_ascendc {

// The source element a Gather offset names: srcBaseAddr + offset bytes from srcLocal's start
// (vgather's address is srcLocal + srcBaseAddr, each offset added in bytes: basic_api/impl/
// dav_c220/kernel_operator_vec_gather_impl.h), a whole element inside srcLocal.
template <typename T>
inline uint64_t GatherSource(const char* api, const char* arg, const AscendC::LocalTensor<T>& src, uint32_t base,
                             uint32_t offset, uint64_t i, uint64_t unit) {
    const uint64_t at = uint64_t(base) + offset, have = uint64_t(src.GetSize()) * sizeof(T);
    if (at % unit != 0 || at + unit > have) {
        Fail(api, std::string(arg) + "[" + S(i) + "] = " + S(offset) + " bytes (+ srcBaseAddr " + S(base) +
                      ") names source bytes [" + S(at) + ", " + S(at + unit) + "); expected a multiple of " +
                      S(unit) + " within the source tensor's " + S(have) +
                      " bytes (the offsets are byte offsets, not element indices: index * sizeof(T))");
    }
    return at / sizeof(T);
}

template <typename T>
inline void GatherRepeats(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                          const AscendC::LocalTensor<uint32_t>& offsets, uint32_t base, const uint64_t mask[2],
                          bool bitwise, uint8_t repeatTimes, uint16_t dstRepStride, const Loc& loc) {
    static_assert(OneOf<T, half, bfloat16_t, uint16_t, int16_t, float, uint32_t, int32_t>,
                  "Gather supports half, bfloat16_t, uint16_t, int16_t, float, uint32_t, int32_t only "
                  "(basic_api/inner_interface/inner_kernel_operator_vec_gather_intf.cppm)");
    static_assert(OPSDK_AICORE_ARCH != 200 || !std::is_same_v<T, bfloat16_t>,
                  "Gather of bfloat16_t is not in the Ascend C of __CCE_AICORE__ 200");
    Issue is("Gather", Pipe::V, loc);
    RepeatShape r = CheckMask<T>("Gather", mask, bitwise);
    dst.CheckAligned("Gather", "dstLocal");
    src.CheckAligned("Gather", "srcLocal");
    offsets.CheckAligned("Gather", "srcOffsetLocal");
    ForRepeats(r, repeatTimes, mask, bitwise, [&](uint64_t rep, uint64_t blk, uint64_t k) {
        const uint64_t e = rep * r.perRepeat + blk * r.perBlock + k;
        const uint32_t off = Load<uint32_t>(offsets.Span("Gather", "srcOffsetLocal", e, 1));
        const uint64_t from = GatherSource("Gather", "srcOffsetLocal", src, base, off, e, sizeof(T));
        std::memcpy(dst.Span("Gather", "dstLocal", At(r, rep, blk, k, dstRepStride, 1), 1),
                    src.Span("Gather", "srcLocal", from, 1), sizeof(T));
    });
}

}  // namespace opsdk_ascendc

namespace AscendC {

#if OPSDK_HAS_Gather
// Gather: dstLocal[i] = the srcLocal element at srcBaseAddr + srcOffsetLocal[i] bytes; offsets
// in bytes, as the API takes them (basic_api/interface/kernel_operator_vec_gather_intf.h).
// Mask form: repeatTimes repeats of one repeat's elements, offsets continuous, dst repeats
// dstRepStride blocks apart.
template <typename T>
inline void Gather(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                   const LocalTensor<uint32_t>& srcOffsetLocal, const uint32_t srcBaseAddr, const uint64_t mask,
                   const uint8_t repeatTimes, const uint16_t dstRepStride, opsdk_ascendc::Loc loc = {}) {
    const uint64_t m[2] = {mask, 0};
    opsdk_ascendc::GatherRepeats(dstLocal, srcLocal, srcOffsetLocal, srcBaseAddr, m, false, repeatTimes,
                                 dstRepStride, loc);
}
template <typename T>
inline void Gather(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                   const LocalTensor<uint32_t>& srcOffsetLocal, const uint32_t srcBaseAddr, const uint64_t mask[],
                   const uint8_t repeatTimes, const uint16_t dstRepStride, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::GatherRepeats(dstLocal, srcLocal, srcOffsetLocal, srcBaseAddr, mask, true, repeatTimes,
                                 dstRepStride, loc);
}
// Count form: the first count elements, as the interface splits them into whole repeats and a
// tail (inner_kernel_operator_vec_gather_intf.cppm; its repeat count is a uint8_t).
template <typename T>
inline void Gather(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                   const LocalTensor<uint32_t>& srcOffsetLocal, const uint32_t srcBaseAddr, const uint32_t count,
                   opsdk_ascendc::Loc loc = {}) {
    const uint32_t per = uint32_t(opsdk_ascendc::kRepeatBytes / sizeof(T)), repeats = count / per, tail = count % per;
    if (repeats > 255) {
        opsdk_ascendc::Fail("Gather", "count " + opsdk_ascendc::S(count) + " " + opsdk_ascendc::TypeName<T>() +
                                          " elements is " + opsdk_ascendc::S(repeats) +
                                          " whole repeats; the interface takes at most 255 (split the gather)");
    }
    if (repeats > 0) Gather(dstLocal, srcLocal, srcOffsetLocal, srcBaseAddr, uint64_t(per), uint8_t(repeats), 8, loc);
    if (tail > 0) {
        Gather(dstLocal[count - tail], srcLocal, srcOffsetLocal[count - tail], srcBaseAddr, uint64_t(tail), 1, 8, loc);
    }
}
#else
OPSDK_UNAVAILABLE(Gather)
#endif

#if OPSDK_HAS_Gatherb
// Gatherb: 8 blocks of 32 bytes per repeat, block j from srcLocal + offsetLocal[8 * rep + j]
// bytes, to dstLocal block rep * dstRepStride + j * dstBlkStride (vgatherb: basic_api/impl/
// dav_c220/kernel_operator_vec_gather_impl.h; uint16_t and uint32_t on 220).
template <typename T>
inline void Gatherb(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local,
                    const LocalTensor<uint32_t>& offsetLocal, const uint8_t repeatTimes,
                    const GatherRepeatParams& repeatParams, opsdk_ascendc::Loc loc = {}) {
    static_assert(OPSDK_AICORE_ARCH != 220 || opsdk_ascendc::OneOf<T, uint16_t, uint32_t>,
                  "Gatherb supports uint16_t and uint32_t only on __CCE_AICORE__ 220 (dav_c220/"
                  "kernel_operator_vec_gather_impl.h)");
    opsdk_ascendc::Issue is("Gatherb", opsdk_ascendc::Pipe::V, loc);
    dstLocal.CheckAligned("Gatherb", "dstLocal");
    src0Local.CheckAligned("Gatherb", "src0Local");
    offsetLocal.CheckAligned("Gatherb", "offsetLocal");
    const uint64_t per = opsdk_ascendc::kBlockBytes / sizeof(T);
    for (uint64_t rep = 0; rep < repeatTimes; ++rep) {
        for (uint64_t j = 0; j < 8; ++j) {
            const uint64_t e = rep * 8 + j;
            const uint32_t off = opsdk_ascendc::Load<uint32_t>(offsetLocal.Span("Gatherb", "offsetLocal", e, 1));
            const uint64_t from = opsdk_ascendc::GatherSource("Gatherb", "offsetLocal", src0Local, 0, off, e,
                                                             opsdk_ascendc::kBlockBytes);
            const uint64_t to = (rep * repeatParams.dstRepStride + j * repeatParams.dstBlkStride) * per;
            std::memcpy(dstLocal.Span("Gatherb", "dstLocal", to, per), src0Local.Span("Gatherb", "src0Local", from, per),
                        opsdk_ascendc::kBlockBytes);
        }
    }
}
#else
OPSDK_UNAVAILABLE(Gatherb)
#endif

#if OPSDK_HAS_CompareScalar
template <typename T, typename U>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                          uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("CompareScalar", opsdk_ascendc::Pipe::V, loc);
    static_assert(kFloat<T>, OPSDK_DTYPES_MSG(CompareScalar, "half, float"));
    opsdk_ascendc::CheckCmpCount<T>("CompareScalar", calCount);
    src0.CheckAligned("CompareScalar", "src0Local");
    uint8_t* a = src0.Span("CompareScalar", "src0Local", 0, calCount);
    float s = opsdk_ascendc::ToF(src1Scalar);
    opsdk_ascendc::WriteBits<T>("CompareScalar", dst, calCount, [&](uint32_t i) {
        return opsdk_ascendc::Cmp(opsdk_ascendc::ToF(opsdk_ascendc::Load<T>(a + i * sizeof(T))), s, cmpMode);
    });
}

#else
OPSDK_UNAVAILABLE(CompareScalar)
#endif

// Select, tensor-tensor: bit i of selMask set -> src0[i], else src1[i]. VSEL_TENSOR_TENSOR_MODE
// reads one bit per element; VSEL_CMPMASK_SPR loads the first repeat's bits of selMask into the
// CMPMASK register and uses them for every repeat (the Select API documentation's mode 0).
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("Select", opsdk_ascendc::Pipe::V, loc);
    static_assert(kFloat<T>, OPSDK_DTYPES_MSG(Select, "half, float"));
    const bool spr = selMode == SELMODE::VSEL_CMPMASK_SPR;
    if (selMode != SELMODE::VSEL_TENSOR_TENSOR_MODE && !spr) {
        opsdk_ascendc::Fail("Select", "selMode must be VSEL_TENSOR_TENSOR_MODE or VSEL_CMPMASK_SPR when src1 is "
                                      "a tensor");
    }
    opsdk_ascendc::CheckCmpCount<T>("Select", calCount);
    dst.CheckAligned("Select", "dstLocal");
    const uint32_t per = uint32_t(opsdk_ascendc::kRepeatBytes / sizeof(T));  // bits of one repeat
    uint8_t* m = nullptr;
    if (spr) {
        m = selMask.template ReinterpretCast<uint8_t>().Span("Select", "selMask", 0, per / 8);
        opsdk_ascendc::Block& blk = opsdk_ascendc::Cur();
        std::memset(blk.cmpMask, 0, sizeof blk.cmpMask);
        std::memcpy(blk.cmpMask, m, per / 8);
    } else {
        opsdk_ascendc::ClobberScratch("Select", 32 * sizeof(uint32_t));  // the mask address, 32 x uint32_t
        m = selMask.template ReinterpretCast<uint8_t>().Span("Select", "selMask", 0, (calCount + 7) / 8);
    }
    uint8_t* a = src0.Span("Select", "src0Local", 0, calCount);
    uint8_t* b = src1.Span("Select", "src1Local", 0, calCount);
    uint8_t* d = dst.Span("Select", "dstLocal", 0, calCount);
    for (uint32_t i = 0; i < calCount; ++i) {
        const uint32_t k = spr ? i % per : i;
        bool on = (m[k / 8] >> (k % 8)) & 1u;
        std::memmove(d + i * sizeof(T), (on ? a : b) + i * sizeof(T), sizeof(T));
    }
}

// Select, tensor-scalar: bit i set -> src0[i], else the scalar.
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   T src1, SELMODE selMode, uint32_t calCount, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("Select", opsdk_ascendc::Pipe::V, loc);
    static_assert(kFloat<T>, OPSDK_DTYPES_MSG(Select, "half, float"));
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        opsdk_ascendc::Fail("Select", "selMode must be VSEL_TENSOR_SCALAR_MODE when src1 is a scalar");
    }
    opsdk_ascendc::CheckCmpCount<T>("Select", calCount);
    dst.CheckAligned("Select", "dstLocal");
    opsdk_ascendc::ClobberScratch("Select", 32 * sizeof(T));  // the scalar, duplicated 32 times
    uint8_t* m = selMask.template ReinterpretCast<uint8_t>().Span("Select", "selMask", 0, (calCount + 7) / 8);
    uint8_t* a = src0.Span("Select", "src0Local", 0, calCount);
    uint8_t* d = dst.Span("Select", "dstLocal", 0, calCount);
    for (uint32_t i = 0; i < calCount; ++i) {
        bool on = (m[i / 8] >> (i % 8)) & 1u;
        T v = on ? opsdk_ascendc::Load<T>(a + i * sizeof(T)) : src1;
        opsdk_ascendc::Store<T>(d + i * sizeof(T), v);
    }
}

// Bitwise logic on masks (uint16_t / int16_t views), count form.
OPSDK_BINARY(And, (opsdk_ascendc::OneOf<T, uint16_t, int16_t>), "int16_t, uint16_t", double(int64_t(x) & int64_t(y)))
OPSDK_BINARY(Or, (opsdk_ascendc::OneOf<T, uint16_t, int16_t>), "int16_t, uint16_t", double(int64_t(x) | int64_t(y)))


enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

}  // namespace AscendC

namespace opsdk_ascendc {

// Mask/repeat-form reduction: each repeat's active elements reduce to dst[rep * dstRepStride].
template <typename T, typename F>
inline void WholeReduce(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                        const uint64_t mask[2], bool bitwise, int32_t repeat, int32_t dstRepStride,
                        int32_t srcBlkStride, int32_t srcRepStride, F f) {
    Issue is(api, Pipe::V);
    static_assert(kFloat<T>, "WholeReduceSum/Max/Min support half, float only (Ascend C API documentation)");
    if (repeat < 0 || repeat > 255) Fail(api, "repeatTimes is " + std::to_string(repeat) + "; expected 0 to 255");
    RepeatShape r = CheckMask<T>(api, mask, bitwise);
    dst.CheckAligned(api, "dstLocal");
    src.CheckAligned(api, "srcLocal");
    for (int32_t rep = 0; rep < repeat; ++rep) {
        bool any = false;
        float acc = 0.0f;
        for (uint64_t idx = 0; idx < r.perRepeat; ++idx) {
            if (!MaskOn(mask, bitwise, idx)) continue;
            uint64_t at = At(r, rep, idx / r.perBlock, idx % r.perBlock, srcRepStride, srcBlkStride);
            float v = ToF(Load<T>(src.Span(api, "srcLocal", at, 1)));
            acc = any ? f(acc, v) : v;
            any = true;
        }
        Store<T>(dst.Span(api, "dstLocal", uint64_t(rep) * dstRepStride, 1), FromF<T>(acc));
    }
}

inline float MaxNan(float a, float b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b); }
inline float MinNan(float a, float b) { return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b); }

inline void CheckOrder(const char* api, AscendC::ReduceOrder order) {
    if (order != AscendC::ReduceOrder::ORDER_ONLY_VALUE) {
        Fail(api, "order other than ReduceOrder::ORDER_ONLY_VALUE (value and index pairs) is not modelled by opsdk");
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

#define OPSDK_WHOLE_REDUCE(NAME, FN, ORDER_PARAM, ORDER_CHECK)                                                    \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,                  \
                     const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,         \
                     const int32_t srcRepStride ORDER_PARAM) {                                                    \
        ORDER_CHECK;                                                                                              \
        const uint64_t m[2] = {static_cast<uint64_t>(mask), 0};                                                   \
        opsdk_ascendc::WholeReduce<T>(#NAME, dst, src, m, false, repeatTimes, dstRepStride, srcBlkStride,        \
                                      srcRepStride, FN);                                                          \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],               \
                     const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,         \
                     const int32_t srcRepStride ORDER_PARAM) {                                                    \
        ORDER_CHECK;                                                                                              \
        opsdk_ascendc::WholeReduce<T>(#NAME, dst, src, mask, true, repeatTimes, dstRepStride, srcBlkStride,      \
                                      srcRepStride, FN);                                                          \
    }

#define OPSDK_NO_ORDER
#define OPSDK_ORDER , ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX
OPSDK_WHOLE_REDUCE(WholeReduceSum, [](float a, float b) { return a + b; }, OPSDK_NO_ORDER, (void)0)
OPSDK_WHOLE_REDUCE(WholeReduceMax, opsdk_ascendc::MaxNan, OPSDK_ORDER, opsdk_ascendc::CheckOrder("WholeReduceMax", order))
OPSDK_WHOLE_REDUCE(WholeReduceMin, opsdk_ascendc::MinNan, OPSDK_ORDER, opsdk_ascendc::CheckOrder("WholeReduceMin", order))

}  // namespace AscendC

namespace opsdk_ascendc {

// The reduction's result into dstLocal: its value, and with calIndex its source element's
// offset, whose bits take the next T slot (uint16_t bits for half, uint32_t for float), as
// basic_api/impl/dav_c220/kernel_operator_vec_reduce_impl.h writes them
// (*(dstLocal + 1) = *reinterpret_cast<T*>(&index)).
template <typename T>
inline void StoreReduced(const char* api, const AscendC::LocalTensor<T>& dst, float value, bool calIndex,
                         uint64_t index) {
    uint8_t* d = dst.Span(api, "dstLocal", 0, calIndex ? 2 : 1);
    Store<T>(d, FromF<T>(value));
    if (!calIndex) return;
    using U = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    Store<U>(d + sizeof(T), static_cast<U>(index));
}

}  // namespace opsdk_ascendc

namespace AscendC {

// Reductions over count elements into dstLocal[0]; workLocal is scratch of the same type.
template <typename T, typename F>
inline void Reduce(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
                   int32_t count, F f, opsdk_ascendc::Loc loc = {}, bool calIndex = false) {
    opsdk_ascendc::Issue is(api, opsdk_ascendc::Pipe::V, loc);
    static_assert(kFloat<T>, "ReduceMax/ReduceMin/ReduceSum support half, float only (Ascend C API documentation)");
    if (count <= 0) opsdk_ascendc::Fail(api, "count is " + std::to_string(count) + "; it must be >= 1");
    dst.CheckAligned(api, "dstLocal");
    src.CheckAligned(api, "srcLocal");
    work.CheckAligned(api, "workLocal");
    uint64_t per = opsdk_ascendc::kRepeatBytes / sizeof(T);
    uint64_t need = (uint64_t(count) + per - 1) / per;  // one partial result per repeat
    work.Span(api, "workLocal", 0, std::max<uint64_t>(need, 1) * (calIndex ? 2 : 1));
    uint8_t* s = src.Span(api, "srcLocal", 0, count);
    float acc = opsdk_ascendc::ToF(opsdk_ascendc::Load<T>(s));
    uint64_t index = 0;  // the first element holding the result
    for (int32_t i = 1; i < count; ++i) {
        const float next = f(acc, opsdk_ascendc::ToF(opsdk_ascendc::Load<T>(s + i * sizeof(T))));
        if (next != acc && !(std::isnan(next) && std::isnan(acc))) index = uint64_t(i);
        acc = next;
    }
    opsdk_ascendc::StoreReduced(api, dst, acc, calIndex, index);
    if (std::strcmp(api, "ReduceSum") == 0 && OPSDK_AICORE_ARCH == 220) {
        // 220's count form sums with one vcadd that leaves the sum in ACC_VAL (ReduceSumImpl,
        // dav_c220/kernel_operator_vec_reduce_impl.h); GetAccVal reads it back
        opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
        const T v = opsdk_ascendc::FromF<T>(acc);
        b.accBits = 0;
        std::memcpy(&b.accBits, &v, sizeof(T));
        b.accInstr = static_cast<uint32_t>(b.pipes.current);
    }
}

// Mask/repeat form: the active elements of repeatTimes repeats (srcRepStride blocks apart)
// reduce into dstLocal[0] (basic_api/interface/kernel_operator_vec_reduce_intf.h).

template <typename T, typename F>
inline void MaskReduce(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                       const LocalTensor<T>& work, const uint64_t mask[2], bool bitwise, int32_t repeat,
                       int32_t srcRepStride, bool calIndex, F f, const opsdk_ascendc::Loc& loc) {
    opsdk_ascendc::Issue is(api, opsdk_ascendc::Pipe::V, loc);
    static_assert(kFloat<T>, "ReduceMax/ReduceMin/ReduceSum support half, float only (Ascend C API documentation)");
    if (repeat < 1 || repeat > 255) {
        opsdk_ascendc::Fail(api, "repeatTimes is " + std::to_string(repeat) + "; expected 1 to 255");
    }
    opsdk_ascendc::RepeatShape r = opsdk_ascendc::CheckMask<T>(api, mask, bitwise);
    dst.CheckAligned(api, "dstLocal");
    src.CheckAligned(api, "srcLocal");
    work.CheckAligned(api, "workLocal");
    work.Span(api, "workLocal", 0, uint64_t(repeat) * (calIndex ? 2 : 1));  // one partial result per repeat
    bool any = false;
    float acc = 0.0f;
    uint64_t index = 0;  // the first element holding the result
    for (int32_t rep = 0; rep < repeat; ++rep) {
        for (uint64_t idx = 0; idx < r.perRepeat; ++idx) {
            if (!opsdk_ascendc::MaskOn(mask, bitwise, idx)) continue;
            uint64_t at = opsdk_ascendc::At(r, rep, idx / r.perBlock, idx % r.perBlock, srcRepStride, 1);
            float v = opsdk_ascendc::ToF(opsdk_ascendc::Load<T>(src.Span(api, "srcLocal", at, 1)));
            const float next = any ? f(acc, v) : v;
            if (!any || (next != acc && !(std::isnan(next) && std::isnan(acc)))) index = at;
            acc = next;
            any = true;
        }
    }
    opsdk_ascendc::StoreReduced(api, dst, acc, calIndex, index);
}

#define OPSDK_MASK_REDUCE(NAME, FN, IDX_PARAM, IDX)                                                                \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,           \
                     const int32_t mask, const int32_t repeatTimes, const int32_t srcRepStride IDX_PARAM,       \
                     opsdk_ascendc::Loc loc = {}) {                                                               \
        const uint64_t m[2] = {static_cast<uint64_t>(mask), 0};                                                   \
        MaskReduce<T>(#NAME, dst, src, work, m, false, repeatTimes, srcRepStride, IDX, FN, loc);                 \
    }                                                                                                             \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,           \
                     const uint64_t mask[], const int32_t repeatTimes, const int32_t srcRepStride IDX_PARAM,    \
                     opsdk_ascendc::Loc loc = {}) {                                                               \
        MaskReduce<T>(#NAME, dst, src, work, mask, true, repeatTimes, srcRepStride, IDX, FN, loc);               \
    }

#define OPSDK_CAL_INDEX , bool calIndex = false
OPSDK_MASK_REDUCE(ReduceSum, [](float a, float b) { return a + b; }, , false)
OPSDK_MASK_REDUCE(ReduceMax, opsdk_ascendc::MaxNan, OPSDK_CAL_INDEX, calIndex)
OPSDK_MASK_REDUCE(ReduceMin, opsdk_ascendc::MinNan, OPSDK_CAL_INDEX, calIndex)

template <typename T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, const int32_t count,
                      opsdk_ascendc::Loc loc = {}) {
    Reduce<T>("ReduceSum", dst, src, work, count, [](float a, float b) { return a + b; }, loc);
}
template <typename T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, const int32_t count,
                      bool calIndex = false, opsdk_ascendc::Loc loc = {}) {
    Reduce<T>("ReduceMax", dst, src, work, count, opsdk_ascendc::MaxNan, loc, calIndex);
}
template <typename T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, const int32_t count,
                      bool calIndex = false, opsdk_ascendc::Loc loc = {}) {
    Reduce<T>("ReduceMin", dst, src, work, count, opsdk_ascendc::MinNan, loc, calIndex);
}

// The ACC_VAL register a count-form ReduceSum leaves (220): GetAccVal in CANN 8.1
// (basic_api/interface/kernel_operator_vec_reduce_intf.h, __inout_pipe__(S)), named
// GetReduceRepeatSumSpr in the newer asc-devkit. A scalar read of what pipe V wrote: it needs
// SetFlag<HardEvent::V_S>/WaitFlag after the ReduceSum, as the samples do.
template <typename T> inline T GetAccVal(opsdk_ascendc::Loc loc = {}) {
    static_assert(kFloat<T>, "GetAccVal supports half, float only (inner_kernel_operator_vec_reduce_intf.cppm)");
    opsdk_ascendc::Issue is("GetAccVal", opsdk_ascendc::Pipe::S, loc);
    opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    if (b.accInstr == 0) {
        opsdk_ascendc::Fail("GetAccVal", "the ACC_VAL register holds nothing: opsdk's model sets it by a count-form "
                                         "ReduceSum(dst, src, work, count) on __CCE_AICORE__ 220, and none ran before");
    }
    const opsdk_ascendc::Pipes& P = b.pipes;
    if (!opsdk_ascendc::Before(P, b.accInstr, opsdk_ascendc::Pipe::S)) {
        opsdk_ascendc::Fail("GetAccVal", "race on the ACC_VAL register: GetAccVal" + opsdk_ascendc::Where(loc) +
                                             " on pipe S reads what " + opsdk_ascendc::Describe(P.instrs[b.accInstr]) +
                                             " wrote, with no synchronisation between the two pipes. Fix: "
                                             "SetFlag<HardEvent::V_S>(id) after the ReduceSum and "
                                             "WaitFlag<HardEvent::V_S>(id) before reading the register");
    }
    T v;
    std::memcpy(&v, &b.accBits, sizeof(T));
    return v;
}
template <typename T> inline T GetReduceRepeatSumSpr(opsdk_ascendc::Loc loc = {}) { return GetAccVal<T>(loc); }

}  // namespace AscendC

namespace AscendC {

// Atomic accumulation of the copies UB -> GM that follow (basic_api/kernel_operator_set_atomic_intf.h).
template <typename T> inline void SetAtomicAdd() { opsdk_ascendc::Cur().atomic = 1; }
template <typename T> inline void SetAtomicMax() { opsdk_ascendc::Cur().atomic = 2; }
template <typename T> inline void SetAtomicMin() { opsdk_ascendc::Cur().atomic = 3; }
inline void SetAtomicNone() { opsdk_ascendc::Cur().atomic = 0; }

// InitGlobalMemory(gm, size, value): fills size elements of GM with value (on the chip a
// vector duplicate and MTE3 copies; here a checked store).
template <typename T> inline void InitGlobalMemory(GlobalTensor<T>& gm, const uint64_t size, const T value) {
    opsdk_ascendc::Issue is("InitGlobalMemory", opsdk_ascendc::Pipe::MTE3);
    std::vector<T> fill(size, value);
    opsdk_ascendc::GmWrite("InitGlobalMemory", gm.ptr_, size * sizeof(T), fill.data());
    std::memcpy(gm.ptr_, fill.data(), size * sizeof(T));
}

// The model has no SoC state to reset (CANN: clears the mask and atomic registers).
inline void InitSocState() { opsdk_ascendc::Cur().atomic = 0; }

// AscendC::printf / PRINTF: prints from the kernel, prefixed with the block.
template <typename... A> inline void printf(const char* fmt, A... args) {
    std::fprintf(stdout, "[block %lld] ", static_cast<long long>(opsdk_ascendc::Cur().idx));
    std::fprintf(stdout, fmt, args...);
}

// SyncAll, the barrier of all blocks: opsdk_model_sync_all.h.

}  // namespace AscendC

// KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_...), the kernel's core types: opsdk_model_mix.h.

#endif  // OPSDK_ASCENDC_MODEL_MISC_H
