// opsdk's CPU model of the Ascend C API: the Cube unit's data movement and matrix multiply
// (docs/ascendc_model.md, "The Cube"). DataCopy GM -> L1 with Nd2NzParams (MTE2), LoadData 2D
// L1 -> L0A/L0B (MTE1), Mmad (M) and Fixpipe L0C -> GM (FIX), with the structures and field
// widths of CANN 8.1.RC1 (basic_api/interface/kernel_struct_mm.h, kernel_struct_fixpipe.h,
// kernel_struct_data_copy.h) and the dtype combinations of its __CCE_AICORE__ 220 implementation
// (basic_api/impl/dav_c220/kernel_operator_mm_impl.h). The code is opsdk's own.
//
// Every 32 bytes of L1/L0 carry the element type and form the instruction that wrote them left
// (ND from a plain DataCopy, NZ fractals from Nd2Nz or LoadData, an accumulator from Mmad); a
// reader that takes another type or form, or bytes nothing wrote since their AllocTensor, fails
// naming both instructions.
#ifndef OPSDK_ASCENDC_MODEL_CUBE_H
#define OPSDK_ASCENDC_MODEL_CUBE_H

#include "opsdk_model_core.h"
#include "opsdk_model_memory.h"
#include "opsdk_model_pipes.h"

// The fixpipe's pre-conversion modes (tools/tikicpulib/lib/include/stub_fun.h: a global enum).
enum QuantMode_t {
    NoQuant = 0, F322F16 = 1, AttachF16Mul = 6, VREQ8 = 8, REQ8 = 9, VDEQF16 = 10, DEQF16 = 11,
    VSHIFTS322S16 = 12, SHIFTS322S16 = 13, F322BF16 = 16, VQF162B8_PRE = 17, QF162B8_PRE = 18,
    VQF162S4_PRE = 19, QF162S4_PRE = 20, VREQ4 = 21, REQ4 = 22, VQF322B8_PRE = 23, QF322B8_PRE = 24,
    VQF322S4_PRE = 25, QF322S4_PRE = 26, VDEQS16 = 27, DEQS16 = 28, VQF162S16_PRE = 29, QF162S16_PRE = 30,
};

namespace AscendC {

struct Nd2NzParams {
    Nd2NzParams() {}
    Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
                const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
                const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
};

struct LoadData2DParams {
    LoadData2DParams() {}
    LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                     const uint8_t sidIn, const uint16_t dstGapIn, const bool ifTransposeIn, const uint8_t addrModeIn)
        : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn) {}
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = 0;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};
using LoadData2dParams = LoadData2DParams;

struct MmadParams {
    MmadParams() {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn, const int32_t fmOffsetIn,
               const bool enSsparseIn, const bool enWinogradAIn, const bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
               const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn) {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

struct FixpipeParamsV220 {
    FixpipeParamsV220() {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                      const uint32_t dstStrideIn, const bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                      const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                      const int64_t deqScalarIn, const uint16_t ndNumIn, const uint16_t srcNdStrideIn,
                      const uint16_t dstNdStrideIn, const uint8_t unitFlagIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar(static_cast<uint64_t>(deqScalarIn)), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn), reluEn(reluEnIn), unitFlag(unitFlagIn) {}
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};
using FixpipeParamsM300 = FixpipeParamsV220;

}  // namespace AscendC

namespace opsdk_ascendc {

constexpr uint64_t kFractalBytes = 512;  // one fractal: 16 rows of 32 bytes

inline std::string WrittenBy(uint32_t instr) {
    if (instr == 0) return "nothing";
    return Describe(Cur().pipes.instrs[instr]);
}

// The Cube reads local bytes [at, at + n) as `type` data in `form`: fail on bytes nothing wrote
// since their AllocTensor, or written as another type or form.
inline void TagRead(const char* api, const char* arg, uint64_t at, uint64_t n, const char* type, Form form,
                    const char* why) {
    Block& b = Cur();
    if (n == 0 || b.tags.empty() || at < b.launch->ubBytes) return;
    static const char* kForms[] = {"nothing", "ND data", "NZ fractals", "a Mmad accumulator"};
    const uint64_t first = (at - b.launch->ubBytes) / 32, last = (at + n - 1 - b.launch->ubBytes) / 32;
    for (uint64_t k = first; k <= last && k < b.tags.size(); ++k) {
        const CubeTag& t = b.tags[k];
        const std::string where = LocalRange(b.launch->ubBytes + k * 32, 32);
        if (t.form == Form::None) {
            Fail(api, std::string("argument ") + arg + " reads " + where +
                          ", which nothing wrote since its buffer was allocated (stale or uninitialised data)" + why);
        }
        if (t.form != form || (type != nullptr && std::strcmp(t.type, type) != 0)) {
            Fail(api, std::string("argument ") + arg + " reads " + where + " as " + (type ? type : "") + " " +
                          kForms[static_cast<int>(form)] + ", but " + WrittenBy(t.instr) + " wrote " + t.type + " " +
                          kForms[static_cast<int>(t.form)] + " there" + why);
        }
    }
}

// The element type `at` holds (the first 32 bytes' tag), for a byte-exact copy that keeps it.
inline const char* TagType(uint64_t at) {
    Block& b = Cur();
    if (b.tags.empty() || at < b.launch->ubBytes) return nullptr;
    const uint64_t k = (at - b.launch->ubBytes) / 32;
    return k < b.tags.size() ? b.tags[k].type : nullptr;
}

inline void CheckRange(const char* api, const char* field, uint64_t v, uint64_t lo, uint64_t hi) {
    if (v < lo || v > hi) Fail(api, std::string(field) + " is " + S(v) + "; expected " + S(lo) + " to " + S(hi));
}

template <typename T> inline void CheckPosition(const char* api, const char* arg, const AscendC::LocalTensor<T>& t,
                                                std::initializer_list<AscendC::TPosition> ok) {
    t.Check(api, arg);
    std::string names;
    for (AscendC::TPosition p : ok) {
        if (t.GetPosition() == p) return;
        names += (names.empty() ? "" : " / ") + std::string(PositionName(p));
    }
    Fail(api, std::string("argument ") + arg + " is a tensor of position " + PositionName(t.GetPosition()) + " (" +
                  MemName(MemOfPosition(t.GetPosition())) + "); " + api + " takes " + names + " there");
}

template <typename T> constexpr uint64_t C0() { return 32 / sizeof(T); }  // elements in 32 bytes

// An Mmad operand in the type the Cube accumulates in: int8 in int32, the others in float.
template <typename Acc, typename T> inline Acc Widen(T v) {
    if constexpr (std::is_same_v<Acc, int32_t>) {
        return int32_t(v);
    } else {
        return ToF(v);
    }
}

// The current instruction's cycles, for the estimate (Cost in opsdk_model_pipes.h).
inline void Work(double cycles) {
    Block* b = tBlock;
    if (b == nullptr || b->pipes.current < 0) return;
    Instr& i = b->pipes.instrs[static_cast<size_t>(b->pipes.current)];
    i.work = std::max(0.0, i.work) + cycles;
}

}  // namespace opsdk_ascendc

namespace AscendC {

// DataCopy GM -> A1/B1 (L1) with ND -> NZ: row r, column c of ND matrix i lands at column block
// c / C0 (dstNzC0Stride 32-byte blocks apart), row r (dstNzNStride blocks apart), element c % C0.
// Field ranges: the Ascend C reference of DataCopy with Nd2NzParams.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
                     opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    const char* api = "DataCopy with Nd2NzParams";
    Issue is(api, Pipe::MTE2, loc);
    static_assert(OneOfT<T, half, bfloat16_t, float, int32_t, uint32_t, int8_t, uint8_t, int16_t, uint16_t>,
                  "DataCopy with Nd2NzParams takes 1-, 2- and 4-byte types (dav_c220 DataCopyGM2L1ND2NZImpl)");
    CheckPosition(api, "dstLocal", dst, {TPosition::A1, TPosition::B1, TPosition::C1});
    CheckRange(api, "ndNum", p.ndNum, 0, 4095);
    CheckRange(api, "nValue", p.nValue, 0, 16384);
    CheckRange(api, "srcDValue", p.srcDValue, 1, 65535);
    CheckRange(api, "dstNzC0Stride", p.dstNzC0Stride, 1, 16384);
    CheckRange(api, "dstNzNStride", p.dstNzNStride, 1, 16384);
    if (p.ndNum > 1) CheckRange(api, "dstNzMatrixStride", p.dstNzMatrixStride, 1, 65535);
    if (p.dValue > p.srcDValue) {
        Fail(api, "dValue " + S(p.dValue) + " is wider than the source rows (srcDValue " + S(p.srcDValue) + ")");
    }
    constexpr uint64_t c0 = C0<T>();
    for (uint64_t i = 0; i < p.ndNum; ++i) {
        for (uint64_t r = 0; r < p.nValue; ++r) {
            const T* g = src.ptr_ + i * p.srcNdMatrixStride + r * p.srcDValue;
            GmRead(api, g, p.dValue * sizeof(T));
            for (uint64_t cb = 0; cb * c0 < p.dValue; ++cb) {
                const uint64_t at = i * p.dstNzMatrixStride + (cb * p.dstNzC0Stride + r * p.dstNzNStride) * c0;
                const uint64_t n = std::min<uint64_t>(c0, p.dValue - cb * c0);
                uint8_t* d = dst.Span(api, "dstLocal", at, c0);
                std::memcpy(d, g + cb * c0, n * sizeof(T));
                if (n < c0) std::memset(d + n * sizeof(T), 0, (c0 - n) * sizeof(T));  // the block's tail: zeros
                TagWrite(dst.UbAddr() + at * sizeof(T), 32, TypeName<T>(), Form::NZ);
            }
        }
    }
}

// LoadData 2D, A1 -> A2 or B1 -> B2: repeatTimes fractals of 512 bytes, the first at fractal
// startIndex of srcLocal and each next srcStride fractals on, written one after another with
// dstGap fractals between them; ifTranspose transposes each 16 x 16 fractal (2-byte types).
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
                     opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    const char* api = "LoadData with LoadData2DParams";
    Issue is(api, Pipe::MTE1, loc);
    static_assert(OneOfT<T, half, bfloat16_t, float, int32_t, uint32_t, int8_t, uint8_t, int16_t, uint16_t>,
                  "LoadData 2D takes uint8_t / int8_t / uint16_t / int16_t / half / bfloat16_t / uint32_t / int32_t / "
                  "float (dav_c220 CheckLoadData2dDatatype; int4b_t is not modelled)");
    CheckPosition(api, "srcLocal", src, {TPosition::A1, TPosition::B1});
    CheckPosition(api, "dstLocal", dst, {TPosition::A2, TPosition::B2});
    if ((src.GetPosition() == TPosition::A1) != (dst.GetPosition() == TPosition::A2)) {
        Fail(api, std::string("srcLocal is ") + PositionName(src.GetPosition()) + " and dstLocal " +
                      PositionName(dst.GetPosition()) + ": LoadData moves A1 -> A2 or B1 -> B2");
    }
    CheckRange(api, "repeatTimes", p.repeatTimes, 1, 255);
    if (p.addrMode != 0) Fail(api, "addrMode " + S(p.addrMode) + " (decreasing addresses) is not modelled by opsdk");
    if (p.ifTranspose && sizeof(T) != 2) {
        Fail(api, std::string("ifTranspose with ") + TypeName<T>() + ": LoadData 2D transposes 16 x 16 fractals of "
                  "2-byte types only (use LoadDataWithTranspose for 1- and 4-byte types)");
    }
    if (src.UbAddr() % 32 != 0 || dst.UbAddr() % kFractalBytes != 0) {
        Fail(api, "srcLocal must be 32-byte and dstLocal 512-byte aligned (kernel_operator_mm_load2d_impl.h)");
    }
    constexpr uint64_t fe = kFractalBytes / sizeof(T);  // elements per fractal
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        const uint64_t s = (p.startIndex + r * p.srcStride) * fe, d = r * (1 + p.dstGap) * fe;
        const uint8_t* from = src.Span(api, "srcLocal", s, fe);
        const char* held = TagType(src.UbAddr() + s * sizeof(T));
        const char* type = (p.ifTranspose || held == nullptr) ? TypeName<T>() : held;
        TagRead(api, "srcLocal", src.UbAddr() + s * sizeof(T), kFractalBytes, type, Form::NZ,
                p.ifTranspose ? " (a transposing load moves 2-byte elements: other data would be torn apart)"
                              : " (LoadData 2D takes NZ fractals from L1: copy them there with Nd2NzParams)");
        uint8_t* to = dst.Span(api, "dstLocal", d, fe);
        if (p.ifTranspose) {
            uint8_t tmp[kFractalBytes];
            for (int i = 0; i < 16; ++i) {
                for (int j = 0; j < 16; ++j) std::memcpy(tmp + (j * 16 + i) * 2, from + (i * 16 + j) * 2, 2);
            }
            std::memcpy(to, tmp, kFractalBytes);
        } else {
            std::memmove(to, from, kFractalBytes);
        }
        TagWrite(dst.UbAddr() + d * sizeof(T), kFractalBytes, type, Form::NZ);
    }
    if (const Timing* t = Cur().pipes.timing) {
        Work(t->mte1Latency + double(p.repeatTimes * kFractalBytes) /
                                  (dst.GetPosition() == TPosition::A2 ? t->mte1aBpc : t->mte1bBpc));
    }
}

constexpr int32_t PAD_SIZE = 4;

template <typename T> struct LoadData3DParamsV2 {
    LoadData3DParamsV2() {}
    LoadData3DParamsV2(const uint8_t padListIn[PAD_SIZE], const uint16_t l1HIn, const uint16_t l1WIn,
                       const uint16_t channelSizeIn, const uint16_t kExtensionIn, const uint16_t mExtensionIn,
                       const uint16_t kStartPtIn, const uint16_t mStartPtIn, const uint8_t strideWIn,
                       const uint8_t strideHIn, const uint8_t filterWIn, const uint8_t filterHIn,
                       const uint8_t dilationFilterWIn, const uint8_t dilationFilterHIn, const bool enTransposeIn,
                       const bool enSmallKIn, const T padValueIn)
        : l1H(l1HIn), l1W(l1WIn), channelSize(channelSizeIn), kExtension(kExtensionIn), mExtension(mExtensionIn),
          kStartPt(kStartPtIn), mStartPt(mStartPtIn), strideW(strideWIn), strideH(strideHIn), filterW(filterWIn),
          filterH(filterHIn), dilationFilterW(dilationFilterWIn), dilationFilterH(dilationFilterHIn),
          enTranspose(enTransposeIn), enSmallK(enSmallKIn), padValue(padValueIn) {
        for (int32_t i = 0; i < PAD_SIZE; ++i) padList[i] = padListIn[i];
    }
    uint8_t padList[PAD_SIZE] = {0};
    uint16_t l1H = 0;
    uint16_t l1W = 0;
    uint16_t channelSize = 0;
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint8_t strideW = 1;
    uint8_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue = T(0);
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
};

struct IsResetLoad3dConfig {
    constexpr IsResetLoad3dConfig(const bool isSetFMatrixIn, const bool isSetPaddingIn)
        : isSetFMatrix(isSetFMatrixIn), isSetPadding(isSetPaddingIn) {}
    bool isSetFMatrix = true;
    bool isSetPadding = true;
};
constexpr IsResetLoad3dConfig IS_RESER_LOAD3D_DEFAULT_CONFIG = {true, true};

enum class FmatrixMode : uint8_t { FMATRIX_LEFT = 0, FMATRIX_RIGHT = 1 };

// The feature map LoadData 3Dv2 reads when its config leaves it out (isSetFMatrix = false).
inline void SetFmatrix(uint16_t l1H, uint16_t l1W, const uint8_t padList[4], const FmatrixMode& fmatrixMode) {
    opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    if (fmatrixMode != FmatrixMode::FMATRIX_LEFT) {
        opsdk_ascendc::Fail("SetFmatrix", "FMATRIX_RIGHT: LoadData 3Dv2 reads the left one only (fMatrixCtrl "
                                          "supports false only, the Ascend C reference of Load3D)");
    }
    b.fmatrixSet = true;
    b.fmatrixH = l1H;
    b.fmatrixW = l1W;
    std::memcpy(b.fmatrixPad, padList, 4);
}

// The padding value LoadData 3Dv2 writes outside the feature map (isSetPadding = false).
template <typename T> inline void SetLoadDataPaddingValue(const T padValue) {
    opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    b.load3dPadBits = 0;
    std::memcpy(&b.load3dPadBits, &padValue, sizeof(T));
    b.load3dPadSet = true;
}

}  // namespace AscendC

namespace opsdk_ascendc {

// Mmad's dtype combinations on __CCE_AICORE__ 220 (dav_c220/kernel_operator_mm_impl.h MmadCal;
// int4b_t is not modelled), with the type the Cube accumulates in.
template <typename D, typename A, typename B> constexpr bool kMmadTypes =
    (std::is_same_v<D, int32_t> && std::is_same_v<A, int8_t> && std::is_same_v<B, int8_t>) ||
    (std::is_same_v<D, float> && std::is_same_v<A, half> && std::is_same_v<B, half>) ||
    (std::is_same_v<D, float> && std::is_same_v<A, float> && std::is_same_v<B, float>) ||
    (std::is_same_v<D, float> && std::is_same_v<A, bfloat16_t> && std::is_same_v<B, bfloat16_t>);

// An Mmad with (m / 16) * (n / 16) < 10 needs PipeBarrier<PIPE_M> before the next Mmad reads its
// result (highlevel_api/impl/matmul/stage/compute/mmad_compute.h: LIMIT_MNSIZE = 10, "add pipe_M
// required by aicore").
constexpr uint32_t kSmallMmadFractals = 10;

// unitFlag: M -> FIX hand-off fractal by fractal, without flags (asc-devkit's mmad_unitflag
// sample: 0 off, 1 reserved, 2 on and kept on, 3 on and closed after the instruction; the last
// Mmad of a result and its Fixpipe take 3).
inline uint8_t& UnitFlagOf(uint32_t instr) {
    std::vector<uint8_t>& v = Cur().unitFlagOf;
    if (v.size() <= instr) v.resize(instr + 1, 0);
    return v[instr];
}

inline void CheckUnitFlag(const char* api, uint8_t flag) {
    if (flag == 1 || flag > 3) {
        Fail(api, "unitFlag is " + S(flag) + "; it takes 0 (off), 2 (on) or 3 (on, closed after the instruction: the "
                  "last Mmad of a result and its Fixpipe); 1 is reserved");
    }
}

// A Fixpipe with unitFlag reads L0C bytes [at, at + n) once the Mmad that last wrote them with
// unitFlag 3 is done: it is ordered after that Mmad. A last writer with unitFlag 2 keeps the
// result open (more Mmads may follow): reading it is an error.
inline void UnitFlagWait(uint64_t at, uint64_t n) {
    Pipes& P = Cur().pipes;
    uint32_t latest = 0;
    for (uint64_t i = at; i < at + n && i < P.lastWrite.size(); ++i) {
        const uint32_t w = P.lastWrite[i];
        if (w == 0 || P.instrs[w].pipe != Pipe::M) continue;
        if (UnitFlagOf(w) == 2) {
            Fail("Fixpipe", "unitFlag reads " + LocalRange(i, 4) + " that " + Describe(P.instrs[w]) +
                                " wrote with unitFlag 2, which keeps the result open for more Mmads: give the last "
                                "Mmad of the result unitFlag 3");
        }
        if (UnitFlagOf(w) == 3 && P.instrs[w].tick > P.instrs[latest].tick) latest = w;
    }
    if (latest == 0) return;
    Clock& c = P.clock[static_cast<int>(Pipe::FIX)];
    c[static_cast<int>(Pipe::M)] = std::max(c[static_cast<int>(Pipe::M)], P.instrs[latest].tick);
    Instr& me = P.instrs[static_cast<size_t>(P.current)];
    me.dep = P.instrs[latest].end;
    me.depInstr = static_cast<int32_t>(latest);
}

inline void CheckSmallMmad(uint64_t at, uint64_t n) {
    Pipes& P = Cur().pipes;
    if (P.smallMmad == 0) return;
    for (uint64_t i = at; i < at + n && i < P.lastWrite.size(); ++i) {
        if (P.lastWrite[i] == P.smallMmad) {
            Fail("Mmad", "accumulates onto " + LocalRange(i, 4) + " that " + Describe(P.instrs[P.smallMmad]) +
                             " wrote, a small Mmad ((m / 16) * (n / 16) < 10), with no PipeBarrier<PIPE_M>() "
                             "between them: the Cube has not written a small result back when the next Mmad "
                             "reads it (Huawei's matmul adds the barrier after every such Mmad, "
                             "mmad_compute.h). Add PipeBarrier<PIPE_M>() after the first Mmad");
        }
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

}  // namespace AscendC

namespace opsdk_ascendc {

// Mmad's positions, fields and alignment.
template <typename D, typename A, typename B>
inline void CheckMmad(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<A>& fm,
                      const AscendC::LocalTensor<B>& filter, const AscendC::MmadParams& p) {
    using AscendC::TPosition;
    CheckPosition("Mmad", "dstLocal", dst, {TPosition::CO1});
    CheckPosition("Mmad", "fmLocal", fm, {TPosition::A2});
    CheckPosition("Mmad", "filterLocal", filter, {TPosition::B2});
    CheckRange("Mmad", "m", p.m, 0, 4095);
    CheckRange("Mmad", "n", p.n, 0, 4095);
    CheckRange("Mmad", "k", p.k, 0, 4095);
    if (p.cmatrixSource || p.enSsparse || p.enWinogradA || p.enWinogradB || p.fmOffset != 0) {
        Fail("Mmad", "cmatrixSource (bias table), enSsparse, enWinograd and fmOffset are not modelled by opsdk; keep "
                     "them 0");
    }
    CheckUnitFlag("Mmad", p.unitFlag);
    if (fm.UbAddr() % kFractalBytes || filter.UbAddr() % kFractalBytes || dst.UbAddr() % 1024) {
        Fail("Mmad", "fmLocal and filterLocal must be 512-byte and dstLocal 1024-byte aligned (CheckMmadAlign, "
                     "kernel_operator_mm_check.h)");
    }
}

// Mmad's product after its checks; `bias` (cmatrixSource: the bias table, C2) holds the n values
// every row of C starts from instead of 0 or the L0C contents.
template <typename DstT, typename Src0T, typename Src1T>
inline void MmadRun(const AscendC::LocalTensor<DstT>& dst, const AscendC::LocalTensor<Src0T>& fm,
                    const AscendC::LocalTensor<Src1T>& filter, const AscendC::MmadParams& p, const uint8_t* bias) {
    using Acc = std::conditional_t<std::is_same_v<DstT, int32_t>, int32_t, float>;
    constexpr uint64_t c0 = C0<Src0T>();
    const uint64_t M1 = (p.m + 15) / 16, N1 = (p.n + 15) / 16, K1 = (p.k + c0 - 1) / c0;
    const uint64_t fe = kFractalBytes / sizeof(Src0T);
    const uint8_t* a = fm.Span("Mmad", "fmLocal", 0, M1 * K1 * fe);
    const uint8_t* b = filter.Span("Mmad", "filterLocal", 0, K1 * N1 * fe);
    TagRead("Mmad", "fmLocal", fm.UbAddr(), M1 * K1 * kFractalBytes, TypeName<Src0T>(), Form::NZ,
            " (Mmad takes fmLocal as A2 fractals loaded by LoadData)");
    TagRead("Mmad", "filterLocal", filter.UbAddr(), K1 * N1 * kFractalBytes, TypeName<Src1T>(), Form::NZ,
            " (Mmad takes filterLocal as B2 fractals loaded by LoadData)");
    const bool init = p.cmatrixInitVal && !p.isBias;
    const uint64_t cBytes = M1 * N1 * 256 * sizeof(DstT);
    if (!init && bias == nullptr) {
        dst.Span("Mmad", "accumulator", 0, M1 * N1 * 256);  // reads dstLocal
        TagRead("Mmad", "dstLocal", dst.UbAddr(), cBytes, TypeName<DstT>(), Form::Acc,
                " (cmatrixInitVal = false accumulates onto L0C: the first Mmad of a result needs cmatrixInitVal = "
                "true)");
        CheckSmallMmad(dst.UbAddr(), cBytes);
    }
    uint8_t* c = dst.Span("Mmad", "dstLocal", 0, M1 * N1 * 256);
    // the operands widened once (A row-major, B n-major), then the products in k order
    std::vector<Acc> av(p.m * p.k), bv(p.n * p.k);
    for (uint64_t m = 0; m < p.m; ++m) {
        for (uint64_t k = 0; k < p.k; ++k) {
            av[m * p.k + k] = Widen<Acc>(LoadAt<Src0T>(a, ((m / 16) * K1 + k / c0) * fe + (m % 16) * c0 + k % c0));
        }
    }
    for (uint64_t n = 0; n < p.n; ++n) {
        for (uint64_t k = 0; k < p.k; ++k) {
            bv[n * p.k + k] = Widen<Acc>(LoadAt<Src1T>(b, ((k / c0) * N1 + n / 16) * fe + (n % 16) * c0 + k % c0));
        }
    }
    for (uint64_t m = 0; m < p.m; ++m) {
        for (uint64_t n = 0; n < p.n; ++n) {
            const uint64_t ci = ((n / 16) * M1 + m / 16) * 256 + (m % 16) * 16 + n % 16;
            Acc acc = bias != nullptr ? LoadAt<Acc>(bias, n) : init ? Acc(0) : LoadAt<Acc>(c, ci);
            const Acc* x = av.data() + m * p.k;
            const Acc* y = bv.data() + n * p.k;
            for (uint64_t k = 0; k < p.k; ++k) acc += x[k] * y[k];
            StoreAt<Acc>(c, ci, acc);
        }
    }
    TagWrite(dst.UbAddr(), cBytes, TypeName<DstT>(), Form::Acc);
    if (p.unitFlag != 0) UnitFlagOf(static_cast<uint32_t>(Cur().pipes.current)) = p.unitFlag;
    if (const Timing* t = Cur().pipes.timing) {  // k0 = 32 bytes of k: 16 half, 32 int8, 8 float
        Work(double(M1 * N1 * K1) * t->mmadFractal);
    }
    Cur().pipes.smallMmad =
        (p.m / 16) * (p.n / 16) < kSmallMmadFractals ? static_cast<uint32_t>(Cur().pipes.current) : 0;
}

}  // namespace opsdk_ascendc

namespace AscendC {

// Mmad: C (m x n, L0C) = A (m x k, L0A) * B (k x n, L0B) [+ C]. A is zZ: fractal (mi, ki) at
// index mi * K1 + ki, 16 rows of C0 elements; B is nZ: fractal (ki, ni) at ki * N1 + ni, 16 n-rows
// of C0 k-elements; C is NZ: 16 x 16 fractal (ni, mi) at ni * M1 + mi. Products and sums in
// float (int32 for int8), k in order. cmatrixInitVal (and not isBias): C starts at 0.
template <typename DstT, typename Src0T, typename Src1T>
inline void Mmad(const LocalTensor<DstT>& dst, const LocalTensor<Src0T>& fm, const LocalTensor<Src1T>& filter,
                 const MmadParams& p, opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    Issue is("Mmad", Pipe::M, loc);
    static_assert(kMmadTypes<DstT, Src0T, Src1T>,
                  "Mmad takes (dst, fm, filter) = (int32_t, int8_t, int8_t), (float, half, half), (float, float, "
                  "float) or (float, bfloat16_t, bfloat16_t) on __CCE_AICORE__ 220 (dav_c220 MmadCal)");
    CheckMmad(dst, fm, filter, p);
    MmadRun(dst, fm, filter, p, nullptr);
}

}  // namespace AscendC

#include "opsdk_model_cube_quant.h"

namespace opsdk_ascendc {

// Fixpipe's copy after its Issue: `deq` is the per-channel dequant tensor in L1 (VDEQF16), else null.
template <typename DstT, typename SrcT>
inline void FixpipeRun(const AscendC::GlobalTensor<DstT>& dst, const AscendC::LocalTensor<SrcT>& src,
                       const AscendC::FixpipeParamsV220& p, const uint64_t* deq) {
    using AscendC::TPosition;
    const char* api = "Fixpipe";
    static_assert(OneOfT<SrcT, float, int32_t>, "Fixpipe reads a float or int32_t L0C accumulator");
    CheckPosition(api, "srcLocal", src, {TPosition::CO1});
    CheckRange(api, "nSize", p.nSize, 1, 4095);
    CheckRange(api, "mSize", p.mSize, 1, 65535);
    CheckRange(api, "ndNum", p.ndNum, 1, 1);  // several ND matrices: not modelled
    if (p.isChannelSplit) Fail(api, "isChannelSplit is not modelled by opsdk");
    CheckUnitFlag(api, p.unitFlag);
    if (p.srcStride % 16 != 0 || p.srcStride < (p.mSize + 15) / 16 * 16) {
        Fail(api, "srcStride is " + S(p.srcStride) + "; it is the rows between two 16-column blocks of the L0C "
                  "result, a multiple of 16 of at least mSize (" + S(p.mSize) + ") rounded up to 16");
    }
    if (p.dstStride < p.nSize) {
        Fail(api, "dstStride " + S(p.dstStride) + " is less than nSize " + S(p.nSize) + ": GM rows would overlap");
    }
    const FixQuant<DstT, SrcT> quant(p, deq);
    const uint64_t cols = (p.nSize + 15) / 16;
    if (p.unitFlag != 0) {
        UnitFlagWait(src.UbAddr(), ((cols - 1) * p.srcStride + p.mSize) * 16 * sizeof(SrcT));
    }
    const uint8_t* s = src.Span(api, "srcLocal", 0, ((cols - 1) * p.srcStride + p.mSize) * 16);
    std::vector<DstT> row(p.nSize);
    for (uint64_t r = 0; r < p.mSize; ++r) {
        for (uint64_t c = 0; c < p.nSize; ++c) {
            const uint64_t at = ((c / 16) * p.srcStride + r) * 16 + c % 16;
            TagRead(api, "srcLocal", src.UbAddr() + at * sizeof(SrcT), sizeof(SrcT), TypeName<SrcT>(), Form::Acc,
                    " (Fixpipe takes the L0C result of Mmad)");
            row[c] = quant(LoadAt<SrcT>(s, at), c, p.reluEn);
        }
        DstT* g = dst.ptr_ + r * p.dstStride;
        GmWrite(api, g, p.nSize * sizeof(DstT), row.data());
        std::memcpy(g, row.data(), p.nSize * sizeof(DstT));
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

// Fixpipe L0C -> GM (FixpipeParamsV220, CFG_ROW_MAJOR: NZ -> ND): element (r, c) of the m x n
// result, at L0C element ((c / 16) * srcStride + r) * 16 + c % 16, goes to GM element
// r * dstStride + c, converted by quantPre (FixQuant, opsdk_model_cube_quant.h) and, with reluEn,
// ReLU'd.
template <typename DstT, typename SrcT, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<DstT>& dst, const LocalTensor<SrcT>& src, const FixpipeParamsV220& p,
                    opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    Issue is("Fixpipe", Pipe::FIX, loc);
    static_assert(config.format == CO2Layout::ROW_MAJOR, "Fixpipe: opsdk models the NZ -> ND (CFG_ROW_MAJOR) form");
    FixpipeRun(dst, src, p, nullptr);
}

}  // namespace AscendC

namespace opsdk_ascendc {

// The load-3D registers as LoadData 3Dv2 takes them: from its own parameters, or set before.
template <typename T>
inline void Load3dRegisters(const char* api, const AscendC::LoadData3DParamsV2<T>& p, bool fmatrix, bool padding) {
    Block& b = Cur();
    if (fmatrix) {
        uint8_t pad[4];
        std::memcpy(pad, p.padList, 4);
        AscendC::SetFmatrix(p.l1H, p.l1W, pad, AscendC::FmatrixMode::FMATRIX_LEFT);
    } else if (!b.fmatrixSet) {
        Fail(api, "isSetFMatrix is false and no SetFmatrix described the feature map: set it first");
    }
    if (padding) {
        AscendC::SetLoadDataPaddingValue(p.padValue);
    } else if (!b.load3dPadSet) {
        Fail(api, "isSetPadding is false and no SetLoadDataPaddingValue set the padding value: set it first");
    }
}

// LoadData 3Dv2's fields and window checked; the output width Wo.
template <typename T> inline int64_t Load3dOutputW(const char* api, const AscendC::LoadData3DParamsV2<T>& p) {
    Block& b = Cur();
    constexpr uint64_t c0 = C0<T>();
    if (p.channelSize != c0) {
        Fail(api, "channelSize " + S(p.channelSize) + ": opsdk models one C1 of " + S(c0) + " " + TypeName<T>() +
                      " channels (channelSize = " + S(c0) + "); other channel counts are not modelled");
    }
    if (p.enTranspose || p.enSmallK || p.filterSizeW || p.filterSizeH || p.fMatrixCtrl) {
        Fail(api, "enTranspose, enSmallK, filterSizeW/H and fMatrixCtrl are not modelled by opsdk");
    }
    const uint64_t H = b.fmatrixH, W = b.fmatrixW;
    CheckRange(api, "l1H", H, 1, 32767);
    CheckRange(api, "l1W", W, 1, 32767);
    CheckRange(api, "strideW", p.strideW, 1, 63);
    CheckRange(api, "strideH", p.strideH, 1, 63);
    CheckRange(api, "filterW", p.filterW, 1, 255);
    CheckRange(api, "filterH", p.filterH, 1, 255);
    CheckRange(api, "dilationFilterW", p.dilationFilterW, 1, 255);
    CheckRange(api, "dilationFilterH", p.dilationFilterH, 1, 255);
    CheckRange(api, "kExtension", p.kExtension, 1, 65535);
    CheckRange(api, "mExtension", p.mExtension, 1, 65535);
    if (p.kStartPt % c0 != 0 || p.kExtension % c0 != 0 || p.mStartPt % 16 != 0 || p.mExtension % 16 != 0) {
        Fail(api, "kStartPt and kExtension must be multiples of " + S(c0) + ", mStartPt and mExtension of 16 "
                  "(CheckLoadData3dv2MatrixParams, kernel_operator_mm_check.h; partial fractals are not modelled)");
    }
    const int64_t padL = b.fmatrixPad[0], padT = b.fmatrixPad[2];
    const int64_t spanW = int64_t(p.dilationFilterW) * (p.filterW - 1) + 1;
    const int64_t spanH = int64_t(p.dilationFilterH) * (p.filterH - 1) + 1;
    const int64_t wo = (int64_t(W) + padL + b.fmatrixPad[1] - spanW) / p.strideW + 1;
    const int64_t ho = (int64_t(H) + padT + b.fmatrixPad[3] - spanH) / p.strideH + 1;
    const uint64_t kAll = uint64_t(p.filterH) * p.filterW * c0;
    if (wo < 1 || ho < 1 || p.mStartPt + p.mExtension > uint64_t(wo * ho) || p.kStartPt + p.kExtension > kAll) {
        Fail(api, "the window [" + S(p.mStartPt) + ", " + S(p.mStartPt + p.mExtension) + ") x [" + S(p.kStartPt) +
                      ", " + S(p.kStartPt + p.kExtension) + ") is outside the img2col matrix of " +
                      S(uint64_t(std::max<int64_t>(0, wo * ho))) + " x " + S(kAll));
    }
    return wo;
}

}  // namespace opsdk_ascendc

namespace AscendC {

// LoadData 3Dv2, A1 -> A2 (img2col): the (mExtension x kExtension) window from (mStartPt,
// kStartPt) of the feature map's img2col matrix, in zZ fractals. The feature map in L1 is
// [l1H][l1W][C0] (one C1: channelSize == C0); row m of the matrix is output position
// (m / Wo, m % Wo), the filter sliding along W first; column k is (kh, kw, c) with c fastest
// (the Ascend C reference of Load3D: each row holds Hk x Wk x Ci elements, Ci first). Positions
// in the padding read the padding value.
template <typename T, const IsResetLoad3dConfig& config = IS_RESER_LOAD3D_DEFAULT_CONFIG>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<T>& p,
                     opsdk_ascendc::Loc loc = {}) {
    using namespace opsdk_ascendc;
    const char* api = "LoadData with LoadData3DParamsV2";
    Issue is(api, Pipe::MTE1, loc);
    static_assert(OneOfT<T, half, bfloat16_t, float, int32_t, uint32_t, int8_t, uint8_t>,
                  "LoadData 3Dv2 to A2 takes uint8_t / int8_t / half / bfloat16_t / uint32_t / int32_t / float (the "
                  "Ascend C reference of Load3D; int4b_t is not modelled)");
    CheckPosition(api, "srcLocal", src, {TPosition::A1});
    CheckPosition(api, "dstLocal", dst, {TPosition::A2});
    Block& b = Cur();
    Load3dRegisters(api, p, config.isSetFMatrix, config.isSetPadding);
    constexpr uint64_t c0 = C0<T>();
    const int64_t wo = Load3dOutputW(api, p);
    const uint64_t H = b.fmatrixH, W = b.fmatrixW;
    const int64_t padL = b.fmatrixPad[0], padT = b.fmatrixPad[2];
    const uint8_t* fm = src.Span(api, "srcLocal", 0, H * W * c0);
    TagRead(api, "srcLocal", src.UbAddr(), H * W * c0 * sizeof(T), TypeName<T>(), Form::ND,
            " (LoadData 3Dv2 reads the feature map as copied to A1, [l1H][l1W][C0])");
    T pad;
    std::memcpy(&pad, &b.load3dPadBits, sizeof(T));
    const uint64_t K1 = p.kExtension / c0, fe = kFractalBytes / sizeof(T);
    uint8_t* out = dst.Span(api, "dstLocal", 0, (p.mExtension / 16) * K1 * fe);
    for (uint64_t m = 0; m < p.mExtension; ++m) {
        const int64_t pos = int64_t(p.mStartPt + m), oh = pos / wo, ow = pos % wo;
        for (uint64_t k = 0; k < p.kExtension; ++k) {
            const uint64_t kk = p.kStartPt + k, c = kk % c0, kw = (kk / c0) % p.filterW, kh = kk / c0 / p.filterW;
            const int64_t ih = oh * p.strideH - padT + int64_t(kh) * p.dilationFilterH;
            const int64_t iw = ow * p.strideW - padL + int64_t(kw) * p.dilationFilterW;
            const bool inside = ih >= 0 && iw >= 0 && ih < int64_t(H) && iw < int64_t(W);
            const T v = inside ? LoadAt<T>(fm, (uint64_t(ih) * W + uint64_t(iw)) * c0 + c) : pad;
            StoreAt<T>(out, ((m / 16) * K1 + k / c0) * fe + (m % 16) * c0 + k % c0, v);
        }
    }
    TagWrite(dst.UbAddr(), (p.mExtension / 16) * K1 * kFractalBytes, TypeName<T>(), Form::NZ);
    if (const Timing* t = b.pipes.timing) {
        Work(t->mte1Latency + double((p.mExtension / 16) * K1 * kFractalBytes) / t->mte1aBpc);
    }
}

}  // namespace AscendC

#include "opsdk_model_cube_more.h"

#endif  // OPSDK_ASCENDC_MODEL_CUBE_H
