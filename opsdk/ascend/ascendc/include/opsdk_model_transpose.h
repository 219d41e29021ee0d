// opsdk's CPU model of the Ascend C API: Transpose (the 16x16 form and the TransposeParamsExt
// form) and TransDataTo5HD (vnchwconv). Part of opsdk (not CANN). Semantics of CANN 8.1.RC1's
// basic_api/inner_interface/inner_kernel_operator_vec_transpose_intf.cppm and
// impl/dav_c220/kernel_operator_vec_transpose_impl.h.
#ifndef OPSDK_ASCENDC_MODEL_TRANSPOSE_H
#define OPSDK_ASCENDC_MODEL_TRANSPOSE_H

#include "opsdk_model_memory.h"

namespace AscendC {

constexpr int32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

// basic_api/interface/kernel_struct_transpose.h
enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE, TRANSPOSE_NZ2ND_0213, TRANSPOSE_NZ2NZ_0213, TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N, TRANSPOSE_NZ2ND_012_WITHOUT_N, TRANSPOSE_NZ2NZ_012_WITHOUT_N, TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM, TRANSPOSE_GRAD_ND_UB_GM, TRANSPOSE_ND2ND_B16, TRANSPOSE_NCHW2NHWC, TRANSPOSE_NHWC2NCHW
};

struct TransDataTo5HDParams {
    TransDataTo5HDParams() = default;
    TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn, const uint8_t repeatTimesIn,
                         const uint16_t dstRepStrideIn, const uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn), srcHighHalf(srcHighHalfIn), repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn) {}
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

struct TransposeParamsExt {
    TransposeParamsExt() = default;
    TransposeParamsExt(const uint16_t nSizeIn, const uint16_t cSizeIn, const uint16_t hSizeIn, const uint16_t wSizeIn,
                       const TransposeType transposeTypeIn)
        : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn) {}
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

}  // namespace AscendC

namespace opsdk_ascendc {

// The 16x16 transpose of 2-byte elements (vtranspose): dst[i][j] = src[j][i].
template <typename T>
inline void Transpose16(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src) {
    dst.CheckAligned(api, "dstLocal");
    src.CheckAligned(api, "srcLocal");
    std::vector<T> in(256);
    std::memcpy(in.data(), src.Span(api, "srcLocal", 0, 256), 512);
    T* d = reinterpret_cast<T*>(dst.Span(api, "dstLocal", 0, 256));
    for (int i = 0; i < 16; ++i) {
        for (int j = 0; j < 16; ++j) d[i * 16 + j] = in[j * 16 + i];
    }
}

// One Unified Buffer block of a TransDataTo5HD address list: its byte offset, checked.
inline uint64_t UbBlock(const char* api, const char* list, int k, uint64_t at, uint64_t bytes) {
    Block& b = Cur();
    if (at % kBlockBytes != 0 || at + bytes > b.ub.size()) {
        Fail(api, std::string(list) + "[" + std::to_string(k) + "] is Unified Buffer byte " + S(at) +
                      "; each address must be 32-byte aligned and its " + S(bytes) + " bytes inside the " +
                      S(b.ub.size()) + "-byte Unified Buffer");
    }
    return at;
}

// An address of the uint64_t list forms: a GetPhyAddr() of the model, or a Unified Buffer offset.
inline uint64_t UbOffsetOf(uint64_t addr) {
    const auto base = reinterpret_cast<uint64_t>(Cur().ub.data());
    return addr >= base && addr < base + Cur().ub.size() ? addr - base : addr;
}

// vnchwconv over 16 source and 16 destination blocks, repeated with the lists advanced by the
// repeat strides (in 32-byte blocks). 16-bit: the 16x16 matrix of the source blocks transposed
// into the destination blocks. 32-bit: the 16x8 matrix transposed, row e into blocks 2e and 2e + 1.
template <typename T>
inline void NchwConv(const char* api, const uint64_t dst[16], const uint64_t src[16],
                     const AscendC::TransDataTo5HDParams& p) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4,
                  "TransDataTo5HD of 8-bit types (the dstHighHalf/srcHighHalf halves) is not modelled by opsdk; "
                  "the model has int16_t, uint16_t, half, float, int32_t and uint32_t");
    if (p.repeatTimes == 0) Fail(api, "repeatTimes is 0; expected 1 to 255");
    Block& b = Cur();
    const Buffer buf{"srcList", 0, b.ub.size(), true, true};
    const Buffer out{"dstList", 0, b.ub.size(), true, true};
    constexpr uint64_t e = kBlockBytes / sizeof(T);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        std::vector<T> in(16 * e);
        for (int k = 0; k < 16; ++k) {
            const uint64_t at = UbBlock(api, "srcList", k, src[k] + r * p.srcRepStride * kBlockBytes, kBlockBytes);
            Access(at, kBlockBytes, false, buf);
            std::memcpy(in.data() + k * e, b.ub.data() + at, kBlockBytes);
        }
        for (int i = 0; i < 16; ++i) {
            const uint64_t at = UbBlock(api, "dstList", i, dst[i] + r * p.dstRepStride * kBlockBytes, kBlockBytes);
            Access(at, kBlockBytes, true, out);
            T* d = reinterpret_cast<T*>(b.ub.data() + at);
            for (uint64_t k = 0; k < e; ++k) {
                // 16-bit: block i is column i; 32-bit: column i / 2, rows (i % 2) * 8 ..
                d[k] = sizeof(T) == 2 ? in[k * e + i] : in[((i % 2) * 8 + k) * e + i / 2];
            }
        }
    }
}

// Unified Buffer bytes the NCHW <-> NHWC Transpose's sharedTmpBuffer takes: the three staging
// areas of Transpose4DImpl, each of preTmpLen elements (B8/B16/B32_TMP_ELE_LEN = 1024, 256,
// 128: 1024 or 512 bytes) per C plane as they are indexed there.
inline uint64_t TransposeTmpBytes(uint64_t elemBytes, uint64_t c, bool toNhwc) {
    const uint64_t pre = elemBytes == 1 ? 1024 : 512;
    return (toNhwc ? c + 2 : 2 * c + 1) * pre;
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T>
inline void Transpose(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, opsdk_ascendc::Loc loc = {}) {
    static_assert(opsdk_ascendc::OneOfT<T, int16_t, uint16_t, half>,
                  "Transpose (16x16) takes int16_t, uint16_t or half");
    opsdk_ascendc::Issue is("Transpose", opsdk_ascendc::Pipe::V, loc);
    opsdk_ascendc::Transpose16("Transpose", dstLocal, srcLocal);
}

template <typename T>
inline void Transpose(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const TransposeParamsExt& p,
                      opsdk_ascendc::Loc loc = {}) {
    const char* api = "Transpose";
    opsdk_ascendc::Issue is(api, opsdk_ascendc::Pipe::V, loc);
    if (p.transposeType == TransposeType::TRANSPOSE_ND2ND_B16 && p.hSize == 16 && p.wSize == 16) {
        if constexpr (std::is_same_v<T, uint16_t>) {
            opsdk_ascendc::Transpose16(api, dstLocal, srcLocal);
            return;
        }
        opsdk_ascendc::Fail(api, std::string("TRANSPOSE_ND2ND_B16 takes uint16_t, not ") + opsdk_ascendc::TypeName<T>());
    }
    const bool toNhwc = p.transposeType == TransposeType::TRANSPOSE_NCHW2NHWC;
    if (!toNhwc && p.transposeType != TransposeType::TRANSPOSE_NHWC2NCHW) {
        opsdk_ascendc::Fail(api, "transposeType " + std::to_string(static_cast<int>(p.transposeType)) +
                                     " with hSize " + std::to_string(p.hSize) + ", wSize " + std::to_string(p.wSize) +
                                     ": the vector Transpose does TRANSPOSE_ND2ND_B16 (hSize = wSize = 16), "
                                     "TRANSPOSE_NCHW2NHWC and TRANSPOSE_NHWC2NCHW");
    }
    static_assert(sizeof(T) <= 4, "Transpose NCHW <-> NHWC takes 8-, 16- and 32-bit types");
    const uint64_t image = uint64_t(p.hSize) * p.wSize, c = p.cSize, n = p.nSize, all = n * c * image;
    if (c > 4095 || image > 4095 || (image * sizeof(T)) % 32 != 0) {
        opsdk_ascendc::Fail(api, "cSize " + opsdk_ascendc::S(c) + ", hSize * wSize " + opsdk_ascendc::S(image) +
                                     ": each must be at most 4095 and hSize * wSize * sizeof(T) a multiple of 32 bytes");
    }
    const uint64_t need = c == 1 ? 0 : opsdk_ascendc::TransposeTmpBytes(sizeof(T), c, toNhwc);
    if (need > 0 && sharedTmpBuffer.GetSize() < need) {
        opsdk_ascendc::Fail(api, "sharedTmpBuffer holds " + opsdk_ascendc::S(sharedTmpBuffer.GetSize()) +
                                     " bytes; this transpose (cSize " + opsdk_ascendc::S(c) + ", " +
                                     opsdk_ascendc::TypeName<T>() + ") needs " + opsdk_ascendc::S(need));
    }
    if (need > 0) sharedTmpBuffer.Span(api, "sharedTmpBuffer", 0, need);
    dstLocal.CheckAligned(api, "dstLocal");
    srcLocal.CheckAligned(api, "srcLocal");
    std::vector<T> in(all);
    std::memcpy(in.data(), srcLocal.Span(api, "srcLocal", 0, all), all * sizeof(T));
    T* d = reinterpret_cast<T*>(dstLocal.Span(api, "dstLocal", 0, all));
    for (uint64_t b = 0; b < n; ++b) {
        for (uint64_t ch = 0; ch < c; ++ch) {
            for (uint64_t px = 0; px < image; ++px) {
                const uint64_t nchw = (b * c + ch) * image + px, nhwc = (b * image + px) * c + ch;
                if (toNhwc) d[nhwc] = in[nchw];
                else d[nchw] = in[nhwc];
            }
        }
    }
}

template <typename T>
inline void TransDataTo5HD(const LocalTensor<T> (&dstLocalList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const LocalTensor<T> (&srcLocalList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& nchwconvParams, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("TransDataTo5HD", opsdk_ascendc::Pipe::V, loc);
    uint64_t dst[16], src[16];
    for (int k = 0; k < 16; ++k) {
        dstLocalList[k].Check("TransDataTo5HD", "dstLocalList");
        srcLocalList[k].Check("TransDataTo5HD", "srcLocalList");
        dst[k] = dstLocalList[k].UbAddr();
        src[k] = srcLocalList[k].UbAddr();
    }
    opsdk_ascendc::NchwConv<T>("TransDataTo5HD", dst, src, nchwconvParams);
}

template <typename T>
inline void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& nchwconvParams, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("TransDataTo5HD", opsdk_ascendc::Pipe::V, loc);
    uint64_t dst[16], src[16];
    for (int k = 0; k < 16; ++k) {
        dst[k] = opsdk_ascendc::UbOffsetOf(dstList[k]);
        src[k] = opsdk_ascendc::UbOffsetOf(srcList[k]);
    }
    opsdk_ascendc::NchwConv<T>("TransDataTo5HD", dst, src, nchwconvParams);
}

// The form whose address lists are in the Unified Buffer (16 uint64_t each, set by SetValue): a
// scalar read of them, then the vector instruction.
template <typename T>
inline void TransDataTo5HD(const LocalTensor<uint64_t>& dstLocal, const LocalTensor<uint64_t>& srcLocal,
                           const TransDataTo5HDParams& nchwconvParams, opsdk_ascendc::Loc loc = {}) {
    uint64_t dst[16], src[16];
    for (uint32_t k = 0; k < 16; ++k) {
        dst[k] = dstLocal.GetValue(k, loc);
        src[k] = srcLocal.GetValue(k, loc);
    }
    TransDataTo5HD<T>(dst, src, nchwconvParams, loc);
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_TRANSPOSE_H
