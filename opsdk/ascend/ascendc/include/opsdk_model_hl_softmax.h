// opsdk's CPU model of the Ascend C API: the SoftMax family of CANN 8.1.RC1's high-level library
// (lib/activation/{softmax,simplesoftmax,softmaxflashv2,logsoftmax}.h), ND format, last axis, as
// impl/activation/softmax computes it on 220: half is cast to float, the row max and row sum are
// taken in float, every step is one vector instruction, and the result is rounded to T once.
// The rows run in chunks of the tiling's splitM rows (a tiling made for another shape is made
// again from the tmp space, as the implementation does), each chunk's float scratch in the tmp
// space laid out as the implementation lays it out; a tmp space that cannot hold the tiling's
// chunk fails naming the size the host's Get...MinTmpSize gives. Max and sum outputs hold each
// row's value in one 32-byte block (reduceK elements). Part of opsdk (not CANN).
#ifndef OPSDK_ASCENDC_MODEL_HL_SOFTMAX_H
#define OPSDK_ASCENDC_MODEL_HL_SOFTMAX_H

#include "opsdk_model_hl_common.h"
#include "lib/activation/softmax_tilingdata.h"

using SoftMaxTiling = optiling::SoftMaxTiling;
using LogSoftMaxTiling = optiling::LogSoftMaxTiling;

namespace AscendC {
struct SoftMaxShapeInfo {
    uint32_t srcM{0};
    uint32_t srcK{0};
    uint32_t oriSrcM{0};
    uint32_t oriSrcK{0};
};
enum class SoftmaxMode { SOFTMAX_NORMAL = 0, SOFTMAX_OUTPUT_WITHOUT_BRC = 1 };
struct SoftmaxConfig {
    constexpr SoftmaxConfig(const bool isCheckTilingIn) : isCheckTiling(isCheckTilingIn) {}
    constexpr SoftmaxConfig(const bool isCheckTilingIn, const uint32_t oriSrcMIn, const uint32_t oriSrcKIn)
        : isCheckTiling(isCheckTilingIn), oriSrcM(oriSrcMIn), oriSrcK(oriSrcKIn) {}
    constexpr SoftmaxConfig(const bool isCheckTilingIn, const uint32_t oriSrcMIn, const uint32_t oriSrcKIn,
                            const SoftmaxMode modeIn)
        : isCheckTiling(isCheckTilingIn), oriSrcM(oriSrcMIn), oriSrcK(oriSrcKIn), mode(modeIn) {}
    bool isCheckTiling = true;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    SoftmaxMode mode = SoftmaxMode::SOFTMAX_NORMAL;
};
constexpr SoftmaxConfig SOFTMAX_DEFAULT_CFG = {true, 0, 0, SoftmaxMode::SOFTMAX_NORMAL};
}  // namespace AscendC

namespace opsdk_ascendc {

enum class SmKind { Normal, Simple, Flash, FlashUpdate, Log };

// Float elements of tmp space one row needs (the implementation's CalculateNDSplitM and
// SoftMaxFlashV2's tiling), and the host's Get...MinTmpSize in bytes (one row).
inline uint32_t SmRowFloats(SmKind kind, uint32_t typeBytes, uint32_t reduceK, uint32_t k) {
    const bool flash = kind == SmKind::Flash || kind == SmKind::FlashUpdate;
    if (typeBytes == 2) return (flash ? 2 * reduceK : reduceK) + k + 64;
    return reduceK + 64;
}
inline const char* SmMinName(SmKind kind) {
    if (kind == SmKind::Flash || kind == SmKind::FlashUpdate) return "GetSoftMaxFlashV2MinTmpSize";
    return kind == SmKind::Log ? "GetLogSoftMaxMinTmpSize" : "GetSoftMaxMinTmpSize";
}
inline uint32_t SmMinBytes(SmKind kind, uint32_t typeBytes, uint32_t reduceK, uint32_t k) {
    if (kind == SmKind::Flash || kind == SmKind::FlashUpdate) return SmRowFloats(kind, typeBytes, reduceK, k) * 4;
    return (reduceK + k + 64) * 4;
}

struct SmArgs {
    SmKind kind;
    uint32_t m, k, oriK, reduceK;
};

// The tiling the API runs with: the kernel's, or made again for the shape from the tmp space.
inline SoftMaxTiling SmTiling(const char* api, const SmArgs& a, const SoftMaxTiling& given, const HlTmp& tmp,
                              uint32_t typeBytes, const Loc& loc) {
    const uint32_t row = SmRowFloats(a.kind, typeBytes, a.reduceK, a.k);
    const uint64_t floats = tmp.bytes / 4;
    const std::string fix = std::string("; ") + SmMinName(a.kind) + " gives " +
                            S(SmMinBytes(a.kind, typeBytes, a.reduceK, a.k)) + " bytes for " + S(a.m) + " x " +
                            S(a.k) + " " + (typeBytes == 2 ? "half" : "float") +
                            ": pass a tmp buffer of at least that size and give its size to the tiling function";
    SoftMaxTiling t = given;
    if (given.srcM != a.m || given.srcK != a.k) {  // the implementation's SoftMaxTilingFunc on the kernel
        uint32_t rows = static_cast<uint32_t>(floats / row);
        if (rows < a.m && rows > 8) rows = rows / 8 * 8;
        rows = std::min(rows, a.m);
        if (rows == 0) HlFail(api, "has " + S(tmp.bytes) + " bytes of tmp space (" + tmp.where + "), less than one row" + fix, loc);
        t.srcM = a.m; t.srcK = a.k; t.srcSize = a.m * a.k;
        t.splitM = t.reduceM = rows; t.splitK = a.k; t.splitSize = rows * a.k;
        t.reduceK = a.reduceK; t.reduceSize = rows * a.reduceK;
        t.rangeM = a.m / rows; t.tailM = a.m % rows;
    }
    if (t.splitM == 0) HlFail(api, "the tiling's splitM is 0 (the tiling function had too little tmp space)" + fix, loc);
    if (uint64_t(t.splitM) * row > floats) {
        HlFail(api, "has " + S(tmp.bytes) + " bytes of tmp space (" + tmp.where + "); the tiling's chunk of " +
                        S(t.splitM) + " rows needs " + S(uint64_t(t.splitM) * row * 4) + " bytes" + fix, loc);
    }
    return t;
}

template <typename T1, typename T2>
struct SmTensors {
    AscendC::LocalTensor<T1> dst, src, expMax;
    AscendC::LocalTensor<T2> sum, max, inSum, inMax;
    bool sumMax;  // the call writes sum and max
};

// Each row's value v[r], written to reduceK elements of row r.
template <typename U>
inline void SmPutRows(const HlStep& s, const AscendC::LocalTensor<U>& t, const char* arg, uint64_t row0,
                      const std::vector<float>& v, uint32_t per) {
    std::vector<float> b(v.size() * per);
    for (size_t r = 0; r < v.size(); ++r) std::fill(b.begin() + r * per, b.begin() + (r + 1) * per, v[r]);
    HlWrite<U>(s, t, arg, row0 * per, b);
}
template <typename U>
inline std::vector<float> SmGetRows(const HlStep& s, const AscendC::LocalTensor<U>& t, const char* arg,
                                    uint64_t row0, uint32_t rows, uint32_t per) {
    const std::vector<float> b = HlRead<U>(s, t, arg, row0 * per, uint64_t(rows) * per);
    std::vector<float> v(rows);
    for (uint32_t r = 0; r < rows; ++r) v[r] = b[r * per];
    return v;
}

// One chunk of rows [r0, r0 + m): the family's steps, in float. half works in the float tmp
// space (Cast in, Cast out); float reads srcTensor and writes dstTensor directly.
template <typename T1, typename T2>
inline void SmChunk(const char* api, const SmArgs& a, const SmTensors<T1, T2>& t, const SoftMaxTiling& tl,
                    const HlTmp& tmp, uint32_t r0, uint32_t m, const Loc& loc) {
    const uint64_t off = uint64_t(r0) * a.k, n = uint64_t(m) * a.k;
    const AscendC::LocalTensor<float> work = tmp.f;
    constexpr bool half = sizeof(T1) == 2;
    const bool flash = a.kind == SmKind::Flash || a.kind == SmKind::FlashUpdate;
    std::vector<float> x;
    auto readX = [&](const HlStep& s) {  // the first step reading the input
        if (x.empty()) x = HlRead<T1>(s, t.src, "srcTensor", off, n);
    };
    auto putData = [&](const HlStep& s, const std::vector<float>& v) {  // the chunk's float data
        if (half) HlWrite<float>(s, work, "dst tmpBuffer", 0, v);
        else HlWrite<T1>(s, t.dst, "dstTensor", off, v);
    };
    if (half) {
        HlStep s(api, "Cast", loc);
        readX(s);
        HlWrite<float>(s, work, "dst tmpBuffer", 0, x);
    }
    std::vector<float> mx(m), sm(m, 0.0f), emax(m, 1.0f);
    if (a.kind == SmKind::Simple) {
        HlStep s(api, "Brcb", loc);
        mx = SmGetRows<T2>(s, t.inMax, "inMaxTensor", r0, m, a.reduceK);
        sm = SmGetRows<T2>(s, t.inSum, "inSumTensor", r0, m, a.reduceK);
    } else {
        HlStep s(api, "ReduceMax", loc);
        readX(s);
        for (uint32_t r = 0; r < m; ++r) {
            float v = x[r * a.k];
            for (uint32_t j = 1; j < a.oriK; ++j) v = MaxNan(v, x[r * a.k + j]);
            mx[r] = v;
        }
        work.Span(s.name(), "dst tmpBuffer", half ? tl.splitSize : 0, uint64_t(m) * a.reduceK);
        if (a.kind == SmKind::FlashUpdate) {
            const std::vector<float> in = SmGetRows<T2>(s, t.inMax, "inMaxTensor", r0, m, a.reduceK);
            for (uint32_t r = 0; r < m; ++r) {
                const float nm = MaxNan(in[r], mx[r]);
                emax[r] = HlExp(in[r] - nm);
                mx[r] = nm;
            }
            SmPutRows<T1>(s, t.expMax, "dstExpMaxTensor", r0, emax, 32 / sizeof(T1));
            HlRound<T1>(emax);
        }
        if (t.sumMax || flash) SmPutRows<T2>(s, t.max, "dstMaxTensor", r0, mx, a.reduceK);
    }
    std::vector<float> e(n);
    {
        HlStep s(api, "Sub", loc);
        readX(s);
        for (uint64_t i = 0; i < n; ++i) e[i] = x[i] - mx[i / a.k];
        putData(s, e);
    }
    {
        HlStep s(api, "Exp", loc);
        for (float& v : e) v = HlExp(v);
        putData(s, e);
    }
    if (a.kind != SmKind::Simple) {
        HlStep s(api, "ReduceSum", loc);
        for (uint32_t r = 0; r < m; ++r) {
            float v = 0.0f;
            for (uint32_t j = 0; j < a.oriK; ++j) v += e[r * a.k + j];
            sm[r] = v;
        }
        if (a.kind == SmKind::FlashUpdate) {
            const std::vector<float> in = SmGetRows<T2>(s, t.inSum, "inExpSumTensor", r0, m, a.reduceK);
            for (uint32_t r = 0; r < m; ++r) sm[r] = emax[r] * in[r] + sm[r];
        }
        if (t.sumMax || flash) SmPutRows<T2>(s, t.sum, "dstSumTensor", r0, sm, a.reduceK);
    }
    if (a.kind == SmKind::Normal || a.kind == SmKind::Simple) {
        HlStep s(api, "Div", loc);
        for (uint64_t i = 0; i < n; ++i) e[i] = Ftz(e[i] / sm[i / a.k]);
        putData(s, e);
    } else if (a.kind == SmKind::Log) {
        HlStep s(api, "Ln", loc);
        for (uint64_t i = 0; i < n; ++i) e[i] = x[i] - mx[i / a.k] - HlLn(sm[i / a.k]);
        putData(s, e);
    }
    if (half) {
        HlStep s(api, "Cast", loc);
        HlRead<float>(s, work, "tmpBuffer", 0, n);
        HlWrite<T1>(s, t.dst, "dstTensor", off, e);
    }
}

template <typename T1, typename T2>
inline void SmRun(const char* api, SmKind kind, const SmTensors<T1, T2>& t, const HlTmp& tmp,
                  const SoftMaxTiling& tiling, const AscendC::SoftMaxShapeInfo& info, const Loc& loc) {
    static_assert(OneOfT<T1, half, float> && OneOfT<T2, half, float>, "the SoftMax family takes half or float");
    SmArgs a{kind, info.srcM ? info.srcM : tiling.srcM, info.srcK ? info.srcK : tiling.srcK, 0,
             static_cast<uint32_t>(32 / sizeof(T2))};
    a.oriK = info.oriSrcK ? info.oriSrcK : a.k;
    if (a.m == 0 || a.k == 0) {
        HlFail(api, "has no shape: the SoftMaxShapeInfo is empty and the tiling's srcM x srcK is " + S(tiling.srcM) +
                        " x " + S(tiling.srcK) + "; pass {srcM, srcK, oriSrcM, oriSrcK}", loc);
    }
    if ((uint64_t(a.k) * sizeof(T1)) % 32 != 0 || a.oriK > a.k) {
        HlFail(api, "srcK is " + S(a.k) + " (oriSrcK " + S(a.oriK) + "); a row must be whole 32-byte blocks (" +
                        S(32 / sizeof(T1)) + " elements) and oriSrcK at most srcK", loc);
    }
    const uint64_t need = uint64_t(a.m) * a.k;
    if (t.src.GetSize() < need || t.dst.GetSize() < need) {
        HlFail(api, "srcTensor has " + S(t.src.GetSize()) + " and dstTensor " + S(t.dst.GetSize()) +
                        " elements; the shape " + S(a.m) + " x " + S(a.k) + " needs " + S(need), loc);
    }
    const SoftMaxTiling tl = SmTiling(api, a, tiling, tmp, sizeof(T1), loc);
    for (uint32_t r0 = 0; r0 < a.m; r0 += tl.splitM) {
        SmChunk<T1, T2>(api, a, t, tl, tmp, r0, std::min(tl.splitM, a.m - r0), loc);
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

#define OPSDK_SM_TMPL template <typename T, bool isReuseSource = false, bool isBasicBlock = false, \
                               bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
#define OPSDK_SM_RUN(KIND, T1, T2, TMP, ...)                                                          \
    static_assert(!isDataFormatNZ, "opsdk's model has the ND format of the SoftMax family only");    \
    opsdk_ascendc::SmRun<T1, T2>(opsdk_api, opsdk_ascendc::SmKind::KIND,                              \
                                 opsdk_ascendc::SmTensors<T1, T2>{__VA_ARGS__}, TMP, tiling, softmaxShapeInfo, loc)

// SoftMax: dst = exp(x - rowmax) / rowsum, with or without the row sum and max.
OPSDK_SM_TMPL inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor,
                                  const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                                  const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                                  const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SoftMax";
    OPSDK_SM_RUN(Normal, T, T, opsdk_ascendc::HlShared(opsdk_api, sharedTmpBuffer), dstTensor, srcTensor, {},
                 sumTensor, maxTensor, {}, {}, true);
}
OPSDK_SM_TMPL inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor,
                                  const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                                  const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                                  opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SoftMax";
    OPSDK_SM_RUN(Normal, T, T, opsdk_ascendc::HlStack(), dstTensor, srcTensor, {}, sumTensor, maxTensor, {}, {}, true);
}
OPSDK_SM_TMPL inline void SoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& sumTensor,
                                  const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                                  const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                                  const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SoftMax";
    OPSDK_SM_RUN(Normal, half, float, opsdk_ascendc::HlShared(opsdk_api, sharedTmpBuffer), dstTensor, srcTensor,
                 {}, sumTensor, maxTensor, {}, {}, true);
}
OPSDK_SM_TMPL inline void SoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& sumTensor,
                                  const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                                  const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                                  opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SoftMax";
    OPSDK_SM_RUN(Normal, half, float, opsdk_ascendc::HlStack(), dstTensor, srcTensor, {}, sumTensor, maxTensor,
                 {}, {}, true);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SoftMax";
    constexpr bool isDataFormatNZ = false;
    OPSDK_SM_RUN(Normal, T, T, opsdk_ascendc::HlShared(opsdk_api, sharedTmpBuffer), dstTensor, srcTensor, {}, {},
                 {}, {}, {}, false);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SoftMax";
    constexpr bool isDataFormatNZ = false;
    OPSDK_SM_RUN(Normal, T, T, opsdk_ascendc::HlStack(), dstTensor, srcTensor, {}, {}, {}, {}, {}, false);
}

// SimpleSoftMax: dst = exp(x - inMax) / inSum with the row max and sum given.
OPSDK_SM_TMPL inline void SimpleSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& inSumTensor,
                                        const LocalTensor<T>& inMaxTensor, const LocalTensor<T>& srcTensor,
                                        const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                                        const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SimpleSoftMax";
    OPSDK_SM_RUN(Simple, T, T, opsdk_ascendc::HlShared(opsdk_api, sharedTmpBuffer), dstTensor, srcTensor, {}, {},
                 {}, inSumTensor, inMaxTensor, false);
}
OPSDK_SM_TMPL inline void SimpleSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& inSumTensor,
                                        const LocalTensor<T>& inMaxTensor, const LocalTensor<T>& srcTensor,
                                        const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                                        opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SimpleSoftMax";
    OPSDK_SM_RUN(Simple, T, T, opsdk_ascendc::HlStack(), dstTensor, srcTensor, {}, {}, {}, inSumTensor, inMaxTensor,
                 false);
}
OPSDK_SM_TMPL inline void SimpleSoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& inSumTensor,
                                        const LocalTensor<float>& inMaxTensor, const LocalTensor<half>& srcTensor,
                                        const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                                        const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "SimpleSoftMax";
    OPSDK_SM_RUN(Simple, half, float, opsdk_ascendc::HlShared(opsdk_api, sharedTmpBuffer), dstTensor, srcTensor,
                 {}, {}, {}, inSumTensor, inMaxTensor, false);
}

// SoftmaxFlashV2: dst = exp(x - max) unnormalised, expSum and max per row; with isUpdate the
// running max and sum of the earlier blocks (inMax, inExpSum) are updated, expMax = exp(inMax - max).
#define OPSDK_FLASH_TMPL template <typename T, bool isUpdate = false, bool isReuseSource = false, \
    bool isBasicBlock = false, bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
#define OPSDK_FLASH_BODY(T1, T2, TMP)                                                                               \
    const char* opsdk_api = "SoftmaxFlashV2";                                                                     \
    if constexpr (isUpdate) {                                                                                      \
        OPSDK_SM_RUN(FlashUpdate, T1, T2, TMP, dstTensor, srcTensor, expMaxTensor, expSumTensor, maxTensor,        \
                     inExpSumTensor, inMaxTensor, true);                                                           \
    } else {                                                                                                       \
        OPSDK_SM_RUN(Flash, T1, T2, TMP, dstTensor, srcTensor, expMaxTensor, expSumTensor, maxTensor, {}, {}, true); \
    }
OPSDK_FLASH_TMPL inline void SoftmaxFlashV2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& expSumTensor,
                                            const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                                            const LocalTensor<T>& expMaxTensor, const LocalTensor<T>& inExpSumTensor,
                                            const LocalTensor<T>& inMaxTensor,
                                            const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                                            const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    OPSDK_FLASH_BODY(T, T, opsdk_ascendc::HlShared(opsdk_api, sharedTmpBuffer))
}
OPSDK_FLASH_TMPL inline void SoftmaxFlashV2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& expSumTensor,
                                            const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                                            const LocalTensor<T>& expMaxTensor, const LocalTensor<T>& inExpSumTensor,
                                            const LocalTensor<T>& inMaxTensor, const SoftMaxTiling& tiling,
                                            const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    OPSDK_FLASH_BODY(T, T, opsdk_ascendc::HlStack())
}
OPSDK_FLASH_TMPL inline void SoftmaxFlashV2(const LocalTensor<half>& dstTensor, const LocalTensor<float>& expSumTensor,
                                            const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                                            const LocalTensor<half>& expMaxTensor,
                                            const LocalTensor<float>& inExpSumTensor,
                                            const LocalTensor<float>& inMaxTensor,
                                            const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                                            const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    OPSDK_FLASH_BODY(half, float, opsdk_ascendc::HlShared(opsdk_api, sharedTmpBuffer))
}

// LogSoftMax: dst = x - rowmax - ln(rowsum), with the row sum and max.
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void LogSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor,
                       const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                       const LocalTensor<uint8_t>& sharedTmpBuffer, const LogSoftMaxTiling& logTiling,
                       const SoftMaxShapeInfo& softmaxShapeInfo = {}, opsdk_ascendc::Loc loc = {}) {
    const char* opsdk_api = "LogSoftMax";
    SoftMaxTiling tiling;
    static_assert(sizeof(tiling) == sizeof(logTiling), "LogSoftMaxTiling and SoftMaxTiling share their fields");
    std::memcpy(static_cast<void*>(&tiling), &logTiling, sizeof(tiling));
    OPSDK_SM_RUN(Log, T, T, opsdk_ascendc::HlShared(opsdk_api, sharedTmpBuffer), dstTensor, srcTensor, {}, sumTensor,
                 maxTensor, {}, {}, true);
}

#undef OPSDK_FLASH_BODY
#undef OPSDK_FLASH_TMPL
#undef OPSDK_SM_RUN
#undef OPSDK_SM_TMPL

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_HL_SOFTMAX_H
