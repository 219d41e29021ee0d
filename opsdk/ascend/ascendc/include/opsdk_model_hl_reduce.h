// opsdk's CPU model of the Ascend C API: Sum and Mean (lib/reduce/{sum,mean}.h) and CumSum
// (lib/math/cumsum.h) of CANN 8.1.RC1's high-level library, as impl/reduce and impl/math/cumsum
// compute them. Sum: per row of `inner` elements, the first n summed by RepeatReduceSum passes in
// T (each pass sums 256-byte repeats and rounds to T; the partial sums sit in the tmp space), into
// dstTensor[row]. Mean: that sum times 1/n in accType (half may accumulate in float). CumSum over
// [outter, inner]: along the last axis (isLastAxis) or the first; half accumulates in float and
// rounds once; lastRowTensor gets the last row with outputLastRow. A tmp space smaller than the
// implementation needs fails naming the host API's minimum. Part of opsdk (not CANN).
#ifndef OPSDK_ASCENDC_MODEL_HL_REDUCE_H
#define OPSDK_ASCENDC_MODEL_HL_REDUCE_H

#include "opsdk_model_hl_common.h"

namespace AscendC {
struct SumParams {
    uint32_t outter = 1;
    uint32_t inner;  // n rounded up to 32 bytes
    uint32_t n;      // elements summed per row
};
struct MeanParams {
    uint32_t outter = 1;
    uint32_t inner;  // n rounded up to 32 bytes
    uint32_t n;      // elements averaged per row
};
struct CumSumInfo {
    uint32_t outter{0};
    uint32_t inner{0};  // 32-byte aligned
};
struct CumSumConfig {
    bool isLastAxis{true};
    bool isReuseSource{false};
    bool outputLastRow{false};
};
constexpr CumSumConfig defaultCumSumConfig = {true, false, true};
}  // namespace AscendC

namespace opsdk_ascendc {

// Sum, or Mean (the sum times 1/n in Acc): RepeatReduceSum passes over 256-byte repeats, each
// partial sum rounded to Acc; Mean of half with a float Acc casts each row to float first.
template <typename T, typename Acc, bool mean>
inline void SumRun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const HlTmp& tmp,
                   uint32_t outter, uint32_t inner, uint32_t n, const Loc& loc) {
    static_assert(OneOfT<T, half, float> && (std::is_same_v<Acc, T> || std::is_same_v<Acc, float>),
                  "Sum and Mean take half or float (Mean of half may accumulate in float)");
    const char* api = mean ? "Mean" : "Sum";
    const uint32_t perRep = 256 / sizeof(Acc);
    if (inner == 0 || (uint64_t(inner) * sizeof(T)) % 32 != 0 || n < 1 || n > inner ||
        uint64_t(outter) * inner > src.GetSize() ||
        uint64_t(dst.GetSize()) * sizeof(T) < HlAlign(outter * sizeof(T), 32)) {
        HlFail(api, std::string(mean ? "MeanParams" : "SumParams") + " {outter " + S(outter) + ", inner " + S(inner) +
                        ", n " + S(n) + "}: inner must be whole 32-byte blocks, n 1 to inner, outter x inner at most "
                        "srcTensor's " + S(src.GetSize()) + " elements and dstTensor hold outter elements rounded up "
                        "to 32 bytes (it has " + S(dst.GetSize()) + ")", loc);
    }
    const uint32_t first = (n + perRep - 1) / perRep;
    constexpr bool cast = !std::is_same_v<Acc, T>;
    // Sum: the first pass's partial sums; Mean: what its implementation asserts (MeanCast, MeanCommon)
    const uint64_t need = !mean ? (first > 1 ? HlAlign(first * sizeof(T), 32) : 0)
                                : (cast ? uint64_t(inner) * 4 : 0) + HlAlign(first, 32);
    if (tmp.bytes < need || tmp.bytes == 0) {
        HlFail(api, "has " + S(tmp.bytes) + " bytes of tmp space (" + tmp.where + "); a row of " + S(n) + " " +
                        TypeName<T>() + " needs " + S(need) + ": " + (mean ? "GetMeanMaxMinTmpSize" : "GetSumMaxMinTmpSize") +
                        " gives a minimum of " + S(std::max<uint64_t>(need, 32)) + " bytes", loc);
    }
    const AscendC::LocalTensor<Acc> part = tmp.f.template ReinterpretCast<Acc>()[cast ? inner : 0];
    const float inv = ToF(FromF<Acc>(1.0f / static_cast<float>(n)));
    for (uint32_t r = 0; r < outter; ++r) {
        std::vector<float> level;
        {
            HlStep s(api, cast ? "Cast" : "ReduceSum", loc);
            const std::vector<float> x = HlRead<T>(s, src, "srcTensor", uint64_t(r) * inner, n);
            for (uint32_t at = 0; at < n; at += perRep) {
                float v = 0.0f;
                for (uint32_t j = at; j < std::min(n, at + perRep); ++j) v += x[j];
                level.push_back(ToF(FromF<Acc>(v)));
            }
            if (first > 1 || cast) HlWrite<Acc>(s, part, "dst tmpBuffer", 0, level);
            else if (!mean) HlWrite<T>(s, dst, "dstTensor", r, level);
        }
        while (level.size() > 1) {
            HlStep s(api, "ReduceSum", loc);
            std::vector<float> next;
            for (size_t at = 0; at < level.size(); at += perRep) {
                float v = 0.0f;
                for (size_t j = at; j < std::min(level.size(), size_t(at + perRep)); ++j) v += level[j];
                next.push_back(ToF(FromF<Acc>(v)));
            }
            level = next;
            if (level.size() > 1 || mean) HlWrite<Acc>(s, part, "dst tmpBuffer", 0, level);
            else HlWrite<T>(s, dst, "dstTensor", r, level);
        }
        if (mean) {
            HlStep s(api, "Muls", loc);
            HlWrite<T>(s, dst, "dstTensor", r, {ToF(FromF<Acc>(level[0] * inv))});
        }
    }
}

template <typename T, bool lastAxis, bool lastRow>
inline void CumSumRun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& lastRowT,
                      const AscendC::LocalTensor<T>& src, const HlTmp& tmp, const AscendC::CumSumInfo& info,
                      const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "CumSum takes half or float");
    const char* api = "CumSum";
    const uint32_t m = info.outter, k = info.inner;
    if (k == 0 || (uint64_t(k) * sizeof(T)) % 32 != 0 || uint64_t(m) * k > src.GetSize() ||
        uint64_t(m) * k > dst.GetSize() || (lastRow && lastRowT.GetSize() < k)) {
        HlFail(api, "CumSumInfo {outter " + S(m) + ", inner " + S(k) + "}: inner must be whole 32-byte blocks and "
                    "outter x inner at most srcTensor's " + S(src.GetSize()) + " and dstTensor's " +
                    S(dst.GetSize()) + " elements (lastRowTensor at least inner)", loc);
    }
    // the implementation's assert (CumSumImpl, CumSumFirstDim), the host's GetCumSumMaxMinTmpSize minimum
    const uint64_t need = lastAxis ? (sizeof(T) == 2 ? k * 16 * 2 : 0) + uint64_t(16) * k * sizeof(T) * 2
                                   : (sizeof(T) == 2 ? uint64_t(m) * k * 4 : 0);
    if (tmp.bytes < need) {
        HlFail(api, "has " + S(tmp.bytes) + " bytes of tmp space (" + tmp.where + "); GetCumSumMaxMinTmpSize gives "
                        "a minimum of " + S(need) + " bytes for " + S(m) + " x " + S(k) + " " + TypeName<T>() +
                        (lastAxis ? " along the last axis" : " along the first axis"), loc);
    }
    std::vector<float> x, y;
    {
        HlStep s(api, lastAxis ? "TransDataTo5HD" : (sizeof(T) == 2 ? "Cast" : "Adds"), loc);
        x = HlRead<T>(s, src, "srcTensor", 0, uint64_t(m) * k);
        if (need) tmp.f.Span(s.name(), "dst tmpBuffer", 0, need / 4);
    }
    y = x;
    {
        HlStep s(api, "Add", loc);  // one Add per row (or column) in the implementation, in float
        for (uint32_t r = 0; r < m; ++r) {
            for (uint32_t j = 0; j < k; ++j) {
                const uint64_t i = uint64_t(r) * k + j;
                if (lastAxis && j > 0) y[i] = y[i - 1] + x[i];
                if (!lastAxis && r > 0) y[i] = y[i - k] + x[i];
            }
        }
    }
    {
        HlStep s(api, lastAxis ? "TransDataTo5HD" : "Cast", loc);
        HlWrite<T>(s, dst, "dstTensor", 0, y);
    }
    if (lastRow) {
        HlStep s(api, "Adds", loc);
        HlRead<T>(s, dst, "srcTensor", uint64_t(m - 1) * k, k);
        HlWrite<T>(s, lastRowT, "dstLastRowTensor", 0, std::vector<float>(y.end() - k, y.end()));
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const SumParams& sumParams, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::SumRun<T, T, false>(dstTensor, srcTensor, opsdk_ascendc::HlShared("Sum", sharedTmpBuffer),
                                       sumParams.outter, sumParams.inner, sumParams.n, loc);
}
template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const SumParams& sumParams,
                opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::SumRun<T, T, false>(dstTensor, srcTensor, opsdk_ascendc::HlStack(), sumParams.outter,
                                       sumParams.inner, sumParams.n, loc);
}

template <typename T, typename accType = T, bool isReuseSource = false, bool isBasicBlock = false,
          int32_t reduceDim = -1>
inline void Mean(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const MeanParams& meanParams,
                 opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::SumRun<T, accType, true>(dstTensor, srcTensor, opsdk_ascendc::HlShared("Mean", sharedTmpBuffer),
                                            meanParams.outter, meanParams.inner, meanParams.n, loc);
}
template <typename T, typename accType = T, bool isReuseSource = false, bool isBasicBlock = false,
          int32_t reduceDim = -1>
inline void Mean(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const MeanParams& meanParams,
                 opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::SumRun<T, accType, true>(dstTensor, srcTensor, opsdk_ascendc::HlStack(), meanParams.outter,
                                            meanParams.inner, meanParams.n, loc);
}

template <typename T, const CumSumConfig& config = defaultCumSumConfig>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   LocalTensor<uint8_t>& sharedTmpBuffer, const CumSumInfo& cumSumInfo, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::CumSumRun<T, config.isLastAxis, config.outputLastRow>(
        dstTensor, lastRowTensor, srcTensor, opsdk_ascendc::HlShared("CumSum", sharedTmpBuffer), cumSumInfo, loc);
}
template <typename T, const CumSumConfig& config = defaultCumSumConfig>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   const CumSumInfo& cumSumInfo, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::CumSumRun<T, config.isLastAxis, config.outputLastRow>(dstTensor, lastRowTensor, srcTensor,
                                                                         opsdk_ascendc::HlStack(), cumSumInfo, loc);
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_HL_REDUCE_H
