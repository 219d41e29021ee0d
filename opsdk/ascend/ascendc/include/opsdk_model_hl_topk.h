// opsdk's CPU model of the Ascend C API: TopK of CANN 8.1.RC1's high-level library
// (lib/sort/topk.h), normal mode on 220, as impl/sort/topk computes it: each of the outter rows'
// `inner` elements (all of them, as Sort32 sorts them: pad the elements after n with the lowest
// value) sorted into (score, index) pairs, largest first (isLargest false: the scores negated, so
// smallest first), merged, and the first k values and indices gathered into rows of
// kAlignTwoBytes (half) / kAlignFourBytes (float, and the int32 indices). Equal scores keep their
// input order (the model's choice, as its Sort32). The indices are 0..inner-1, or srcIndexLocal's
// with isInitIndex. A tmp space below the tiling's tmpLocalSize fails naming
// GetTopKMaxMinTmpSize's minimum. Part of opsdk (not CANN).
#ifndef OPSDK_ASCENDC_MODEL_HL_TOPK_H
#define OPSDK_ASCENDC_MODEL_HL_TOPK_H

#include <algorithm>
#include <numeric>

#include "opsdk_model_hl_common.h"
#include "lib/sort/topk_tilingdata.h"

using TopkTiling = optiling::TopkTiling;

namespace AscendC {
struct TopKInfo {
    int32_t outter = 1;
    int32_t inner;  // n rounded up to 32 elements
    int32_t n;      // elements of a row
};
#ifndef OPSDK_TOPK_MODE_DEFINED
#define OPSDK_TOPK_MODE_DEFINED
enum class TopKMode { TOPK_NORMAL, TOPK_NSMALL };
#endif
}  // namespace AscendC

namespace opsdk_ascendc {

template <typename T, bool isInitIndex>
inline void TopKRun(const AscendC::LocalTensor<T>& dstValue, const AscendC::LocalTensor<int32_t>& dstIndex,
                    const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<int32_t>& srcIndex,
                    const HlTmp& tmp, int32_t k, const TopkTiling& tl, const AscendC::TopKInfo& info, bool isLargest,
                    const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "TopK takes half or float");
    const char* api = "TopK";
    const int32_t inner = info.inner, rows = info.outter;
    if (k < 1 || k > info.n || info.n < 1 || info.n > inner || inner % 32 != 0 || inner > 4096 || rows < 1) {
        HlFail(api, "k " + S(k) + ", TopKInfo {outter " + S(rows) + ", inner " + S(inner) + ", n " + S(info.n) +
                        "}: k must be 1 to n, n 1 to inner, inner a multiple of 32 up to 4096 (normal mode)", loc);
    }
    const int32_t kAlign = sizeof(T) == 4 ? tl.kAlignFourBytes : tl.kAlignTwoBytes;
    if (tl.kAlignFourBytes < k || kAlign < k || tl.tmpLocalSize <= 0) {
        HlFail(api, "the tiling's kAlignFourBytes (" + S(tl.kAlignFourBytes) + "), kAlignTwoBytes (" +
                        S(tl.kAlignTwoBytes) + ") or tmpLocalSize (" + S(tl.tmpLocalSize) + ") do not fit k " + S(k) +
                        ": make it with TopKTilingFunc for this k", loc);
    }
    const uint64_t need = uint64_t(tl.tmpLocalSize) * sizeof(T), minBytes = uint64_t(inner) * (isInitIndex ? 16 : 20);
    if (tmp.bytes < std::max(need, minBytes)) {
        HlFail(api, "has " + S(tmp.bytes) + " bytes of tmp space (" + tmp.where + "); the tiling's tmpLocalSize is " +
                        S(need) + " bytes; GetTopKMaxMinTmpSize gives a minimum of " + S(minBytes) + " bytes for inner " +
                        S(inner), loc);
    }
    const AscendC::LocalTensor<float> w = tmp.f;
    for (int32_t r = 0; r < rows; ++r) {
        std::vector<float> x, idx(inner);
        {
            HlStep s(api, "Sort32", loc);
            x = HlRead<T>(s, src, "srcLocal", uint64_t(r) * inner, inner);
            if constexpr (isInitIndex) {
                const uint8_t* p = srcIndex.Span(s.name(), "srcIndexLocal", 0, inner);
                for (int32_t i = 0; i < inner; ++i) idx[i] = static_cast<float>(Load<int32_t>(p + 4 * i));
            } else {
                std::iota(idx.begin(), idx.end(), 0.0f);
            }
            w.Span(s.name(), "dst tmpBuffer", 0, uint64_t(inner) * 2);
        }
        std::vector<int32_t> order(inner);
        {
            HlStep s(api, "MrgSort", loc);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
                return isLargest ? x[a] > x[b] : -x[a] > -x[b];
            });
            w.Span(s.name(), "dst tmpBuffer", uint64_t(inner) * 2, uint64_t(inner) * 2);
        }
        HlStep s(api, "GatherMask", loc);
        std::vector<float> v(k);
        for (int32_t i = 0; i < k; ++i) v[i] = x[order[i]];
        HlWrite<T>(s, dstValue, "dstValueLocal", uint64_t(r) * kAlign, v);
        uint8_t* d = dstIndex.Span(s.name(), "dstIndexLocal", uint64_t(r) * tl.kAlignFourBytes, k);
        for (int32_t i = 0; i < k; ++i) Store<int32_t>(d + 4 * i, static_cast<int32_t>(idx[order[i]]));
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          enum TopKMode topkMode = TopKMode::TOPK_NORMAL>
inline void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<int32_t>& dstIndexLocal,
                 const LocalTensor<T>& srcLocal, const LocalTensor<int32_t>& srcIndexLocal,
                 const LocalTensor<bool>& finishLocal, const LocalTensor<uint8_t>& tmpLocal, const int32_t k,
                 const TopkTiling& tilling, const TopKInfo& topKInfo, const bool isLargest = true,
                 opsdk_ascendc::Loc loc = {}) {
    static_assert(topkMode == TopKMode::TOPK_NORMAL, "opsdk's model has TopK's normal mode only (not TOPK_NSMALL)");
    static_assert(!isHasfinish, "opsdk's model has TopK without finishLocal (isHasfinish false) only");
    (void)finishLocal;
    opsdk_ascendc::TopKRun<T, isInitIndex>(dstValueLocal, dstIndexLocal, srcLocal, srcIndexLocal,
                                           opsdk_ascendc::HlShared("TopK", tmpLocal), k, tilling, topKInfo, isLargest,
                                           loc);
}
template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          enum TopKMode topkMode = TopKMode::TOPK_NORMAL>
inline void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<int32_t>& dstIndexLocal,
                 const LocalTensor<T>& srcLocal, const LocalTensor<int32_t>& srcIndexLocal,
                 const LocalTensor<bool>& finishLocal, const int32_t k, const TopkTiling& tilling,
                 const TopKInfo& topKInfo, const bool isLargest = true, opsdk_ascendc::Loc loc = {}) {
    static_assert(topkMode == TopKMode::TOPK_NORMAL, "opsdk's model has TopK's normal mode only (not TOPK_NSMALL)");
    static_assert(!isHasfinish, "opsdk's model has TopK without finishLocal (isHasfinish false) only");
    (void)finishLocal;
    opsdk_ascendc::TopKRun<T, isInitIndex>(dstValueLocal, dstIndexLocal, srcLocal, srcIndexLocal,
                                           opsdk_ascendc::HlStack(), k, tilling, topKInfo, isLargest, loc);
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_HL_TOPK_H
