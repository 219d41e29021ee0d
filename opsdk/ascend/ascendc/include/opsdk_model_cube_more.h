// opsdk's CPU model of the Ascend C API: the rest of the Cube's basic instructions
// (docs/ascendc_model.md, "The Cube"): the bias table (DataCopy C1 -> C2, Mmad with biasLocal),
// InitConstValue, LoadDataWithTranspose, Fixpipe with a per-channel dequant tensor, and
// LoadData with LoadData2DParamsV2 (which CANN 8.1.RC1's dav_c220 reports as not supported).
// Structures and field widths: CANN 8.1.RC1 basic_api/interface/kernel_struct_mm.h; dtype pairs,
// positions and alignment: basic_api/impl/kernel_operator_mm_base_impl.h (MmadImpl,
// InitConstValueImpl), impl/kernel_operator_mm_load2d_impl.h, impl/dav_c220/
// kernel_operator_mm_impl.h, inner_interface/inner_kernel_operator_data_copy_intf.cppm (C1 -> C2);
// the element semantics of LoadDataWithTranspose and InitConstValue: the Ascend C reference
// (asc-devkit docs: InitConstValue, asc_copy_l12l0b_trans). The code is opsdk's own.
#ifndef OPSDK_ASCENDC_MODEL_CUBE_MORE_H
#define OPSDK_ASCENDC_MODEL_CUBE_MORE_H

#include "opsdk_model_cube.h"

// The core type a kernel is compiled for (g_coreType, a constant per core type as CANN 8.1.RC1's
// kernel_utils_macros.h defines it for a device build, so template-library kernels may default
// a template argument to it) is in opsdk_model_core_type.h; AscendC::MIX/AIC/AIV in
// opsdk_model_mix.h.

namespace AscendC {

template <typename U> struct InitConstValueParams {
    InitConstValueParams() {}
    InitConstValueParams(const uint16_t repeatTimesIn, const uint16_t blockNumIn, const uint16_t dstGapIn,
                         const U initValueIn)
        : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn) {}
    InitConstValueParams(const uint16_t repeatTimesIn, const U initValueIn)
        : repeatTimes(repeatTimesIn), initValue(initValueIn) {}
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    U initValue = 0;
};

struct LoadData2dTransposeParams {
    LoadData2dTransposeParams() {}
    LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                              const uint16_t dstGapIn, const uint16_t dstfracGapIn, const uint8_t addrModeIn = 0)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstfracGapIn), addrMode(addrModeIn) {}
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
};

struct LoadData2DParamsV2 {
    LoadData2DParamsV2() {}
    LoadData2DParamsV2(const uint32_t mStartPositionIn, const uint32_t kStartPositionIn, const uint16_t mStepIn,
                       const uint16_t kStepIn, const int32_t srcStrideIn, const uint16_t dstStrideIn,
                       const bool ifTransposeIn, const uint8_t sidIn)
        : mStartPosition(mStartPositionIn), kStartPosition(kStartPositionIn), mStep(mStepIn), kStep(kStepIn),
          srcStride(srcStrideIn), dstStride(dstStrideIn), ifTranspose(ifTransposeIn), sid(sidIn) {}
    uint32_t mStartPosition = 0;
    uint32_t kStartPosition = 0;
    uint16_t mStep = 0;
    uint16_t kStep = 0;
    int32_t srcStride = 0;
    uint16_t dstStride = 0;
    bool ifTranspose = false;
    uint8_t sid = 0;
};

}  // namespace AscendC

namespace opsdk_ascendc {

// DataCopy L1 (A1/B1/C1) -> bias table (C2) on MTE1: blockCount blocks of blockLen x 64 bytes of
// the table (inner_kernel_operator_data_copy_intf.cppm: "BT blockLen is in unit of 64B"), read
// from L1 as the same type or as half converted to float. The table's tag carries the type, so
// an Mmad reading another type from it is refused.
template <typename DstT, typename SrcT>
inline void CopyToBiasTable(const AscendC::LocalTensor<DstT>& dst, const AscendC::LocalTensor<SrcT>& src,
                            const AscendC::DataCopyParams& p, Loc loc) {
    using AscendC::TPosition;
    const char* api = "DataCopy from C1 to C2";
    Issue is(api, Pipe::MTE1, loc);
    static_assert(std::is_same_v<DstT, SrcT> || (std::is_same_v<DstT, float> && std::is_same_v<SrcT, half>),
                  "DataCopy from C1 to C2 takes the same type or half -> float (inner_kernel_operator_data_copy_intf)");
    CheckPosition(api, "dstLocal", dst, {TPosition::C2});
    CheckPosition(api, "srcLocal", src, {TPosition::A1, TPosition::B1, TPosition::C1});
    CheckBlocks(api, p.blockCount, p.blockLen, 65535);
    if (p.srcStride != 0 || p.dstStride != 0) {
        Fail(api, "srcStride " + S(p.srcStride) + " / dstStride " + S(p.dstStride) + ": strides into the bias table "
                  "are not modelled by opsdk; copy contiguous blocks (0, 0)");
    }
    if (dst.UbAddr() % 64 != 0 || src.UbAddr() % 32 != 0) {
        Fail(api, "dstLocal must be 64-byte and srcLocal 32-byte aligned (CheckTensorAlign in DataCopy from C1 to C2)");
    }
    const uint64_t n = uint64_t(p.blockCount) * p.blockLen * 64 / sizeof(DstT);  // elements of the table
    const uint8_t* s = src.Span(api, "srcLocal", 0, n);
    TagRead(api, "srcLocal", src.UbAddr(), n * sizeof(SrcT), TypeName<SrcT>(), Form::ND,
            " (the bias is copied to L1 as ND data with DataCopy)");
    uint8_t* d = dst.Span(api, "dstLocal", 0, n);
    for (uint64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<DstT, SrcT>) {
            StoreAt<DstT>(d, i, LoadAt<SrcT>(s, i));
        } else {
            StoreAt<DstT>(d, i, static_cast<float>(LoadAt<SrcT>(s, i)));
        }
    }
    TagWrite(dst.UbAddr(), n * sizeof(DstT), TypeName<DstT>(), Form::ND);
}

template <typename DstT, typename SrcT>
inline void CopyToBiasTable(const AscendC::LocalTensor<DstT>& dst, const AscendC::LocalTensor<SrcT>& src, uint32_t count,
                            Loc loc) {
    constexpr uint32_t per = 64 / sizeof(DstT);
    if (count == 0 || count % per != 0) {
        Fail("DataCopy from C1 to C2", "calCount " + S(count) + " is not a multiple of the " + S(per) + " " +
                                           TypeName<DstT>() + " of a 64-byte bias-table block");
    }
    CopyToBiasTable(dst, src, AscendC::DataCopyParams(1, static_cast<uint16_t>(count / per), 0, 0), loc);
}

}  // namespace opsdk_ascendc

namespace AscendC {

// DataCopy C1 -> C2 converting half to float (same-type copies reach CopyToBiasTable from the
// LocalTensor -> LocalTensor DataCopy of opsdk_model_memory.h).
template <typename D, typename S, std::enable_if_t<!std::is_same_v<D, S>, bool> = true>
inline void DataCopy(const LocalTensor<D>& dst, const LocalTensor<S>& src, const DataCopyParams& p,
                     opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::CopyToBiasTable(dst, src, p, loc);
}

// Mmad with biasLocal in C2 (cmatrixSource: MmadImpl sets it for a bias-table tensor): every row
// of C starts from the n values of the table. cmatrixInitVal = true would start C at 0 and leave
// the table unread (MmadParams: "true: C starts at 0; false: C's initial value per
// cmatrixSource"), so it is refused; Huawei's matmul sets it false with a bias (scheduler_mdl_base.h).
template <typename DstT, typename Src0T, typename Src1T, typename BiasT>
inline void Mmad(const LocalTensor<DstT>& dst, const LocalTensor<Src0T>& fm, const LocalTensor<Src1T>& filter,
                 const LocalTensor<BiasT>& bias, const MmadParams& p, opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    Issue is("Mmad", Pipe::M, loc);
    static_assert(kMmadTypes<DstT, Src0T, Src1T> && std::is_same_v<BiasT, DstT>,
                  "Mmad with biasLocal takes (dst, fm, filter, bias) = (int32_t, int8_t, int8_t, int32_t), (float, "
                  "half, half, float), (float, float, float, float) or (float, bfloat16_t, bfloat16_t, float) on "
                  "__CCE_AICORE__ 220 (MmadImpl, kernel_operator_mm_base_impl.h)");
    if (bias.GetPosition() == TPosition::CO1) {
        Fail("Mmad", "biasLocal in CO1 (cmatrixSource 0 with a bias tensor) is not modelled by opsdk; copy the bias "
                     "to C2 (the bias table) with DataCopy from C1");
    }
    CheckPosition("Mmad", "biasLocal", bias, {TPosition::C2});
    MmadParams q = p;
    q.cmatrixSource = false;
    CheckMmad(dst, fm, filter, q);
    if (bias.UbAddr() % 128 != 0) Fail("Mmad", "biasLocal must be 128-byte aligned (MmadImpl)");
    if (p.cmatrixInitVal) {
        Fail("Mmad", "biasLocal is given but cmatrixInitVal is true: C would start at 0 and the bias table would not "
                     "be read; set cmatrixInitVal = false for the Mmad that starts the result from the bias");
    }
    const uint8_t* b = bias.Span("Mmad", "biasLocal", 0, p.n);
    TagRead("Mmad", "biasLocal", bias.UbAddr(), uint64_t(p.n) * sizeof(BiasT), TypeName<BiasT>(), Form::ND,
            " (the bias table holds the accumulator type, copied from L1 with DataCopy C1 -> C2)");
    MmadRun(dst, fm, filter, p, b);
}

// InitConstValue: A1/B1 (32-byte blocks) or A2/B2 (512-byte fractals) set to initValue; each of
// repeatTimes repeats writes blockNum blocks, then skips dstGap blocks.
template <typename T, typename U = T, std::enable_if_t<std::is_same_v<T, U>, bool> = true>
inline void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<U>& p, opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    const char* api = "InitConstValue";
    Issue is(api, Pipe::MTE1, loc);
    static_assert(OneOfT<T, half, int16_t, uint16_t, bfloat16_t, float, int32_t, uint32_t>,
                  "InitConstValue takes half / int16_t / uint16_t / bfloat16_t / float / int32_t / uint32_t "
                  "(dav_c220 InitL1BufferCal)");
    CheckPosition(api, "dstLocal", dst, {TPosition::A1, TPosition::B1, TPosition::A2, TPosition::B2});
    CheckRange(api, "repeatTimes", p.repeatTimes, 0, 32767);
    CheckRange(api, "blockNum", p.blockNum, 0, 32767);
    CheckRange(api, "dstGap", p.dstGap, 0, 32767);
    const bool l1 = dst.GetPosition() == TPosition::A1 || dst.GetPosition() == TPosition::B1;
    const uint64_t block = l1 ? 32 : kFractalBytes;
    if (dst.UbAddr() % block != 0) {
        Fail(api, std::string("dstLocal must be ") + (l1 ? "32" : "512") + "-byte aligned in " +
                      PositionName(dst.GetPosition()) + " (InitConstValueImpl)");
    }
    const uint64_t per = block / sizeof(T);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        const uint64_t at = r * (uint64_t(p.blockNum) + p.dstGap) * per, n = uint64_t(p.blockNum) * per;
        uint8_t* d = dst.Span(api, "dstLocal", at, n);
        for (uint64_t i = 0; i < n; ++i) StoreAt<T>(d, i, static_cast<T>(p.initValue));
        TagWrite(dst.UbAddr() + at * sizeof(T), n * sizeof(T), TypeName<T>(), Form::NZ);
    }
}

// LoadDataWithTranspose, A1 -> A2 or B1 -> B2: repeatTimes square blocks, the first at square
// startIndex of srcLocal and each next srcStride squares on. 2-byte types: a square is one 16 x 16
// fractal, transposed. 1-byte types: two consecutive 16 x 32 fractals form a 32 x 32 square (rows
// 0-15, 16-31); 4-byte types: two consecutive 16 x 8 fractals form a 16 x 16 square (columns 0-7,
// 8-15); the transposed square is split the same way into two fractals, dstFracGap fractals
// apart. The first fractal of repeat r is r * (1 + dstGap) fractals into dstLocal.
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& p, opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    const char* api = "LoadDataWithTranspose";
    Issue is(api, Pipe::MTE1, loc);
    static_assert(OneOfT<T, half, bfloat16_t, float, int32_t, uint32_t, uint8_t, int8_t>,
                  "LoadDataWithTranspose takes half / bfloat16_t / float / int32_t / uint32_t / uint8_t / int8_t "
                  "(dav_c220 LoadData2DL12L0ATransposeCal; int4b_t is not modelled)");
    CheckPosition(api, "srcLocal", src, {TPosition::A1, TPosition::B1});
    CheckPosition(api, "dstLocal", dst, {TPosition::A2, TPosition::B2});
    CheckRange(api, "repeatTimes", p.repeatTimes, 0, 255);
    if (p.addrMode != 0) Fail(api, "addrMode " + S(p.addrMode) + ": only 0 (increasing addresses) is supported");
    if (src.UbAddr() % 32 != 0 || dst.UbAddr() % kFractalBytes != 0) {
        Fail(api, "srcLocal must be 32-byte and dstLocal 512-byte aligned (LoadDataWithTransposeImpl)");
    }
    constexpr uint64_t fracs = sizeof(T) == 2 ? 1 : 2, fe = kFractalBytes / sizeof(T), c0 = 32 / sizeof(T);
    constexpr uint64_t side = sizeof(T) == 1 ? 32 : 16;  // the square's rows and columns
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        const uint64_t s = (uint64_t(p.startIndex) + r * p.srcStride) * fracs * fe;
        const uint8_t* from = src.Span(api, "srcLocal", s, fracs * fe);
        TagRead(api, "srcLocal", src.UbAddr() + s * sizeof(T), fracs * kFractalBytes, TypeName<T>(), Form::NZ,
                " (LoadDataWithTranspose takes NZ fractals from L1 of its own type: copy them there with "
                "Nd2NzParams)");
        std::vector<uint8_t> square(fracs * kFractalBytes), out(fracs * kFractalBytes);
        for (uint64_t i = 0; i < side; ++i) {  // element (i, j) of the square, from its fractal
            for (uint64_t j = 0; j < side; ++j) {
                const uint64_t f = sizeof(T) == 1 ? i / 16 : j / c0, fi = sizeof(T) == 1 ? i % 16 : i;
                const uint64_t fj = sizeof(T) == 1 ? j : j % c0;
                std::memcpy(&square[(i * side + j) * sizeof(T)], from + (f * fe + fi * c0 + fj) * sizeof(T),
                            sizeof(T));
            }
        }
        for (uint64_t i = 0; i < side; ++i) {  // transposed, split back into fractals the same way
            for (uint64_t j = 0; j < side; ++j) {
                const uint64_t f = sizeof(T) == 1 ? i / 16 : j / c0, fi = sizeof(T) == 1 ? i % 16 : i;
                const uint64_t fj = sizeof(T) == 1 ? j : j % c0;
                std::memcpy(&out[(f * fe + fi * c0 + fj) * sizeof(T)], &square[(j * side + i) * sizeof(T)],
                            sizeof(T));
            }
        }
        for (uint64_t f = 0; f < fracs; ++f) {
            const uint64_t d = (r * (1 + uint64_t(p.dstGap)) + f * (1 + uint64_t(p.dstFracGap))) * fe;
            std::memcpy(dst.Span(api, "dstLocal", d, fe), &out[f * kFractalBytes], kFractalBytes);
            TagWrite(dst.UbAddr() + d * sizeof(T), kFractalBytes, TypeName<T>(), Form::NZ);
        }
    }
    if (const Timing* t = Cur().pipes.timing) {
        Work(t->mte1Latency + double(p.repeatTimes * fracs * kFractalBytes) /
                                  (dst.GetPosition() == TPosition::A2 ? t->mte1aBpc : t->mte1bBpc));
    }
}

// LoadData with LoadData2DParamsV2: CANN 8.1.RC1's dav_c220 implementation reports every path
// (A1 -> A2, B1 -> B2, GM -> A1/B1/A2/B2) as not supported (kernel_operator_mm_impl.h).
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParamsV2& p,
                     opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("LoadData with LoadData2DParamsV2", opsdk_ascendc::Pipe::MTE1, loc);
    (void)dst, (void)src, (void)p;
    opsdk_ascendc::Fail("LoadData with LoadData2DParamsV2",
                        "not supported on " OPSDK_SOC_VERSION " (__CCE_AICORE__ " OPSDK_STR(OPSDK_AICORE_ARCH)
                        "): CANN 8.1.RC1 reports LoadData2DParamsV2 as not supported there; use LoadData2DParams "
                        "(LoadData 2D) or LoadDataWithTranspose");
}

// Fixpipe L0C -> GM with the per-channel dequant scales (VDEQF16) in L1: one uint64_t per output
// column, read from cbufWorkspace (the FIX pipe copies them to the fixpipe buffer first).
template <typename DstT, typename SrcT, const FixpipeConfig& config = CFG_ROW_MAJOR, typename BufT = uint64_t,
          std::enable_if_t<std::is_same_v<BufT, uint64_t>, bool> = true>
inline void Fixpipe(const GlobalTensor<DstT>& dst, const LocalTensor<SrcT>& src, const LocalTensor<BufT>& cbufWorkspace,
                    const FixpipeParamsV220& p, opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    Issue is("Fixpipe", Pipe::FIX, loc);
    static_assert(config.format == CO2Layout::ROW_MAJOR, "Fixpipe: opsdk models the NZ -> ND (CFG_ROW_MAJOR) form");
    CheckPosition("Fixpipe", "cbufWorkspace", cbufWorkspace, {TPosition::A1, TPosition::B1, TPosition::C1});
    const uint8_t* deq = cbufWorkspace.Span("Fixpipe", "cbufWorkspace", 0, p.nSize);
    TagRead("Fixpipe", "cbufWorkspace", cbufWorkspace.UbAddr(), uint64_t(p.nSize) * sizeof(uint64_t), "uint64_t",
            Form::ND, " (the scales are copied to L1 with DataCopy, one uint64_t per output column)");
    std::vector<uint64_t> scales(p.nSize);
    std::memcpy(scales.data(), deq, scales.size() * sizeof(uint64_t));
    FixpipeRun(dst, src, p, scales.data());
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_CUBE_MORE_H
