// opsdk's CPU model of the Ascend C API: Sort32 and MrgSort (vbitsort / vmrgsort4 of
// __CCE_AICORE__ 220). Part of opsdk (not CANN). Semantics of CANN 8.1.RC1's basic_api/
// inner_interface/inner_kernel_operator_proposal_intf.cppm and impl/dav_c220/
// kernel_operator_proposal_impl.h: a sorted element is an 8-byte (score, index) pair, the score
// in the low bytes (a half score then 2 reserved bytes), the uint32_t index in the high 4 bytes;
// order is by score, descending. Equal scores keep their input order (and, in MrgSort, the
// earlier list first): the model's choice where the documentation does not say.
#ifndef OPSDK_ASCENDC_MODEL_SORT_H
#define OPSDK_ASCENDC_MODEL_SORT_H

#include <numeric>

#include "opsdk_model_memory.h"
#include "opsdk_model_vector.h"

namespace AscendC {

constexpr int32_t MRG_SORT_ELEMENT_LEN = 4;

// basic_api/interface/kernel_struct_proposal.h
struct MrgSort4Info {
    MrgSort4Info() = default;
    MrgSort4Info(const uint16_t elementLengthsIn[MRG_SORT_ELEMENT_LEN], const bool ifExhaustedSuspensionIn,
                 const uint16_t validBitIn, const uint16_t repeatTimesIn)
        : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn), repeatTimes(repeatTimesIn) {
        for (int32_t i = 0; i < MRG_SORT_ELEMENT_LEN; ++i) elementLengths[i] = elementLengthsIn[i];
    }
    uint16_t elementLengths[MRG_SORT_ELEMENT_LEN] = {0};
    bool ifExhaustedSuspension = false;
    uint16_t validBit = 0;
    uint8_t repeatTimes = 1;
};

template <typename T> struct MrgSortSrcList {
    MrgSortSrcList() = default;
    MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                   const LocalTensor<T>& src4In)
        : src1(src1In), src2(src2In), src3(src3In), src4(src4In) {}
    LocalTensor<T> src1;
    LocalTensor<T> src2;
    LocalTensor<T> src3;
    LocalTensor<T> src4;
};

}  // namespace AscendC

namespace opsdk_ascendc {

constexpr uint64_t kPairBytes = 8;  // one (score, index) pair

// The VMS4_SR register: proposals of each list the last MrgSort consumed (GetMrgSortResult).
inline thread_local uint16_t tMrgSortDone[4] = {0, 0, 0, 0};

// Merge `n` sorted lists of pairs (each `len` long, at `src`) into `dst`; returns the pairs taken per list.
template <typename T>
inline void MergeLists(const std::vector<const uint8_t*>& src, const std::vector<uint64_t>& len, bool suspend,
                       uint8_t* dst, uint16_t taken[4]) {
    std::vector<uint64_t> at(src.size(), 0);
    uint64_t out = 0;
    while (true) {
        int best = -1;
        bool exhausted = false;
        for (size_t k = 0; k < src.size(); ++k) {
            if (at[k] == len[k]) {
                exhausted = true;
                continue;
            }
            if (best < 0 || ToF(Load<T>(src[k] + at[k] * kPairBytes)) >
                                ToF(Load<T>(src[static_cast<size_t>(best)] + at[static_cast<size_t>(best)] * kPairBytes))) {
                best = static_cast<int>(k);
            }
        }
        if (best < 0 || (suspend && exhausted)) break;
        std::memcpy(dst + out * kPairBytes, src[static_cast<size_t>(best)] + at[static_cast<size_t>(best)] * kPairBytes,
                    kPairBytes);
        ++at[static_cast<size_t>(best)];
        ++out;
    }
    for (size_t k = 0; k < 4; ++k) taken[k] = k < at.size() ? static_cast<uint16_t>(at[k]) : 0;
}

template <typename T>
inline void MrgSortRun(const AscendC::LocalTensor<T>& dst, const AscendC::MrgSortSrcList<T>& list,
                       const AscendC::MrgSort4Info& p) {
    const char* api = "MrgSort";
    const int lists = p.validBit == 3 ? 2 : p.validBit == 7 ? 3 : p.validBit == 15 ? 4 : 0;
    if (lists == 0) {
        Fail(api, "validBit is " + std::to_string(p.validBit) + "; expected 0b11 (2 lists), 0b111 (3) or 0b1111 (4)");
    }
    if (p.repeatTimes == 0) Fail(api, "repeatTimes is 0; expected 1 to 255");
    if (p.repeatTimes > 1 && (lists != 4 || p.ifExhaustedSuspension ||
                              p.elementLengths[1] != p.elementLengths[0] || p.elementLengths[2] != p.elementLengths[0] ||
                              p.elementLengths[3] != p.elementLengths[0])) {
        Fail(api, "repeatTimes " + std::to_string(p.repeatTimes) + " > 1 needs 4 lists (validBit 0b1111) of equal "
                  "elementLengths, stored one after another, and ifExhaustedSuspension false");
    }
    const AscendC::LocalTensor<T>* srcs[4] = {&list.src1, &list.src2, &list.src3, &list.src4};
    constexpr uint64_t per = kPairBytes / sizeof(T);  // elements of T per pair
    uint64_t total = 0;
    for (int k = 0; k < lists; ++k) total += p.elementLengths[k];
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        std::vector<std::vector<uint8_t>> copies(static_cast<size_t>(lists));
        std::vector<const uint8_t*> src;
        std::vector<uint64_t> len;
        for (int k = 0; k < lists; ++k) {
            const uint64_t n = p.elementLengths[k];
            const char* arg = k == 0 ? "src1" : k == 1 ? "src2" : k == 2 ? "src3" : "src4";
            srcs[k]->CheckAligned(api, arg);
            const uint8_t* s = srcs[k]->Span(api, arg, r * total * per, n * per);
            copies[static_cast<size_t>(k)].assign(s, s + n * kPairBytes);
            src.push_back(copies[static_cast<size_t>(k)].data());
            len.push_back(n);
        }
        dst.CheckAligned(api, "dstLocal");
        uint8_t* d = dst.Span(api, "dstLocal", r * total * per, total * per);
        MergeLists<T>(src, len, p.ifExhaustedSuspension, d, tMrgSortDone);
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

// Sorts each of repeatTimes groups of 32 scores (src0Local) with their uint32_t indices
// (src1Local) into 32 (score, index) pairs in dstLocal, descending.
template <typename T>
inline void Sort32(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local,
                   const LocalTensor<uint32_t>& src1Local, const int32_t repeatTimes, opsdk_ascendc::Loc loc = {}) {
    static_assert(opsdk_ascendc::OneOfT<T, half, float>, "Sort32 takes half or float scores");
    opsdk_ascendc::Issue is("Sort32", opsdk_ascendc::Pipe::V, loc);
    if (repeatTimes < 1 || repeatTimes > 255) {
        opsdk_ascendc::Fail("Sort32", "repeatTimes is " + std::to_string(repeatTimes) + "; expected 1 to 255");
    }
    dstLocal.CheckAligned("Sort32", "dstLocal");
    src0Local.CheckAligned("Sort32", "src0Local");
    src1Local.CheckAligned("Sort32", "src1Local");
    const uint64_t n = uint64_t(repeatTimes) * 32, per = opsdk_ascendc::kPairBytes / sizeof(T);
    std::vector<T> score(n);
    std::vector<uint32_t> index(n);
    std::memcpy(score.data(), src0Local.Span("Sort32", "src0Local", 0, n), n * sizeof(T));
    std::memcpy(index.data(), src1Local.Span("Sort32", "src1Local", 0, n), n * 4);
    uint8_t* d = dstLocal.Span("Sort32", "dstLocal", 0, n * per);
    for (uint64_t r = 0; r < n / 32; ++r) {
        std::vector<uint32_t> order(32);
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
            return opsdk_ascendc::ToF(score[r * 32 + a]) > opsdk_ascendc::ToF(score[r * 32 + b]);
        });
        for (uint64_t k = 0; k < 32; ++k) {
            uint8_t* pair = d + (r * 32 + k) * opsdk_ascendc::kPairBytes;
            std::memset(pair, 0, opsdk_ascendc::kPairBytes);
            std::memcpy(pair, &score[r * 32 + order[k]], sizeof(T));
            std::memcpy(pair + 4, &index[r * 32 + order[k]], 4);
        }
    }
}

template <typename T>
inline void MrgSort(const LocalTensor<T>& dstLocal, const MrgSortSrcList<T>& srcLocal, const MrgSort4Info& params,
                    opsdk_ascendc::Loc loc = {}) {
    static_assert(opsdk_ascendc::OneOfT<T, half, float>, "MrgSort takes half or float scores");
    opsdk_ascendc::Issue is("MrgSort", opsdk_ascendc::Pipe::V, loc);
    opsdk_ascendc::MrgSortRun(dstLocal, srcLocal, params);
}

template <typename T>
inline void MrgSort(const LocalTensor<T>& dstLocal, const MrgSortSrcList<T>& sortList,
                    const uint16_t elementCountList[4], uint32_t sortedNum[4], uint16_t validBit,
                    const int32_t repeatTimes, opsdk_ascendc::Loc loc = {}) {
    MrgSort(dstLocal, sortList, MrgSort4Info(elementCountList, false, validBit, static_cast<uint16_t>(repeatTimes)), loc);
    for (int k = 0; k < 4; ++k) sortedNum[k] = opsdk_ascendc::tMrgSortDone[k];
}

// The proposals of each list the last MrgSort consumed (the VMS4_SR register): a scalar read.
inline void GetMrgSortResult(uint16_t& mrgSortList1, uint16_t& mrgSortList2, uint16_t& mrgSortList3,
                             uint16_t& mrgSortList4, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("GetMrgSortResult", opsdk_ascendc::Pipe::S, loc);
    mrgSortList1 = opsdk_ascendc::tMrgSortDone[0];
    mrgSortList2 = opsdk_ascendc::tMrgSortDone[1];
    mrgSortList3 = opsdk_ascendc::tMrgSortDone[2];
    mrgSortList4 = opsdk_ascendc::tMrgSortDone[3];
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_SORT_H
