// lib/matmul_tiling.h of opsdk's CPU model of the Ascend C API, host side: the Matmul API's host
// tiling (matmul_tiling::MatmulApiTiling and MultiCoreMatmulTiling) with the calls and types of
// CANN 8.1.RC1's lib/matmul/matmul_tiling_base.h, matmul_tiling.h and bmm_tiling.h, producing
// TCubeTiling (kernel_tiling/kernel_tiling.h) and optiling::TCubeTiling.
//
// The choices are opsdk's own (docs/ascendc_model.md, "The Matmul API"): the blocks split M and N
// into at most SetDim pieces; baseM/baseN are SetFixSplit's or up to 128 x 128; baseK is the
// largest multiple of the k fractal with double-buffered L0A and L0B in the SoC's bytes; stepKa
// and stepKb are as many baseK as L1 holds (up to 4), double-buffered when K needs more. A tiling
// that cannot fit the SoC's L1/L0A/L0B/L0C is refused (GetTiling returns -1) with the figures.
// The toolkit's own tiling may choose other values; the kernel reads the fields either way.
#ifndef OPSDK_HOST_MATMUL_TILING_H
#define OPSDK_HOST_MATMUL_TILING_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "../kernel_tiling/kernel_tiling.h"
#include "../opsdk_host_errors.h"
#include "../tiling/platform/platform_ascendc.h"

namespace optiling {

// The host's TCubeTiling: the same fields with set_/get_ and the buffer calls of a tiling class.
class TCubeTiling {
public:
#define OPSDK_TCUBE_HOST_FIELD(name)             \
    int32_t name = 0;                            \
    void set_##name(int32_t v) { name = v; }     \
    int32_t get_##name() const { return name; }
    OPSDK_TCUBE_TILING_FIELDS(OPSDK_TCUBE_HOST_FIELD)
#undef OPSDK_TCUBE_HOST_FIELD
    size_t GetDataSize() const { return sizeof(::TCubeTiling); }
    void SaveToBuffer(void* buf, size_t cap) const {
        ::TCubeTiling t = Plain();
        std::memcpy(buf, &t, std::min(cap, sizeof(t)));
    }
    ::TCubeTiling Plain() const {
        ::TCubeTiling t;
#define OPSDK_TCUBE_COPY(name) t.name = name;
        OPSDK_TCUBE_TILING_FIELDS(OPSDK_TCUBE_COPY)
#undef OPSDK_TCUBE_COPY
        return t;
    }
    void From(const ::TCubeTiling& t) {
#define OPSDK_TCUBE_COPY(name) name = t.name;
        OPSDK_TCUBE_TILING_FIELDS(OPSDK_TCUBE_COPY)
#undef OPSDK_TCUBE_COPY
    }
};

}  // namespace optiling

namespace matmul_tiling {

enum class DataType : int32_t {
    DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6, DT_UINT16 = 7,
    DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12, DT_BF16 = 27, DT_UNDEFINED = 28,
    DT_INT4 = 29, DT_BFLOAT16 = 33, DT_MAX = 34
};
enum class TPosition : int32_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM, MAX
};
enum class CubeFormat : int32_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR };
enum class MatrixTraverse : int32_t { NOSET = 0, FIRSTM = 1, FIRSTN = 2 };

struct MatTilingType {
    TPosition pos = TPosition::GM;
    CubeFormat type = CubeFormat::ND;
    DataType dataType = DataType::DT_FLOAT;
    bool isTrans = false;
    bool isDB = false;
};

inline int32_t DataBytes(DataType t) {
    switch (t) {
        case DataType::DT_FLOAT: case DataType::DT_INT32: case DataType::DT_UINT32: return 4;
        case DataType::DT_FLOAT16: case DataType::DT_BF16: case DataType::DT_BFLOAT16: case DataType::DT_INT16:
        case DataType::DT_UINT16: return 2;
        case DataType::DT_INT8: case DataType::DT_UINT8: return 1;
        default: return 0;
    }
}

inline int32_t CeilDiv(int32_t a, int32_t b) { return b == 0 ? 0 : (a + b - 1) / b; }
inline int32_t AlignUp(int32_t a, int32_t b) { return CeilDiv(a, b) * b; }

class MatmulApiTilingBase {
public:
    MatmulApiTilingBase() : platform_(platform_ascendc::PlatformAscendCManager::GetInstance()) {}
    explicit MatmulApiTilingBase(const platform_ascendc::PlatformAscendC& p) : platform_(&p) {}
    virtual ~MatmulApiTilingBase() = default;

    int32_t SetAType(TPosition pos, CubeFormat type, DataType dataType, bool isTrans = false) {
        aType_ = {pos, type, dataType, isTrans, false};
        return 0;
    }
    int32_t SetBType(TPosition pos, CubeFormat type, DataType dataType, bool isTrans = false) {
        bType_ = {pos, type, dataType, isTrans, false};
        return 0;
    }
    int32_t SetCType(TPosition pos, CubeFormat type, DataType dataType) {
        cType_ = {pos, type, dataType, false, false};
        return 0;
    }
    int32_t SetBiasType(TPosition pos, CubeFormat type, DataType dataType) {
        biasType_ = {pos, type, dataType, false, false};
        return 0;
    }
    virtual int32_t SetShape(int32_t m, int32_t n, int32_t k) {
        singleM = m;
        singleN = n;
        singleK = k;
        return 0;
    }
    int32_t SetOrgShape(int32_t orgMIn, int32_t orgNIn, int32_t orgKIn) {
        return SetOrgShape(orgMIn, orgNIn, orgKIn, orgKIn);
    }
    int32_t SetOrgShape(int32_t orgMIn, int32_t orgNIn, int32_t orgKaIn, int32_t orgKbIn) {
        orgM = orgMIn;
        orgN = orgNIn;
        orgKa = orgKaIn;
        orgKb = orgKbIn;
        return 0;
    }
    int32_t EnableBias(bool isBiasIn = false) {
        isBias = isBiasIn;
        return 0;
    }
    int32_t SetBias(bool isBiasIn = false) { return EnableBias(isBiasIn); }
    int32_t SetFixSplit(int32_t baseMIn = -1, int32_t baseNIn = -1, int32_t baseKIn = -1) {
        fixM_ = baseMIn;
        fixN_ = baseNIn;
        fixK_ = baseKIn;
        return 0;
    }
    int32_t SetBufferSpace(int32_t l1Size = -1, int32_t l0CSize = -1, int32_t ubSize = -1, int32_t btSize = -1) {
        l1Space_ = l1Size;
        l0cSpace_ = l0CSize;
        ubSpace_ = ubSize;
        (void)btSize;
        return 0;
    }
    int32_t SetTraverse(MatrixTraverse traverse) {
        traverse_ = traverse;
        return 0;
    }
    int32_t SetDoubleBuffer(bool a, bool b, bool c, bool bias, bool transND2NZ = true, bool transNZ2ND = true) {
        (void)a, (void)b, (void)bias, (void)transND2NZ, (void)transNZ2ND;
        dbL0C_ = c;
        return 0;
    }
    int32_t GetBaseM() const { return tiling_.baseM; }
    int32_t GetBaseN() const { return tiling_.baseN; }
    int32_t GetBaseK() const { return tiling_.baseK; }
    virtual int64_t GetTiling(optiling::TCubeTiling& tiling) = 0;
    virtual int64_t GetTiling(::TCubeTiling& tiling) = 0;

    optiling::TCubeTiling tiling_;
    MatTilingType aType_, bType_, cType_, biasType_;
    bool isBias = false;
    int32_t blockDim = 0;
    int32_t orgM = 0, orgN = 0, orgKa = 0, orgKb = 0;
    int32_t singleM = 0, singleN = 0, singleK = 0;
    int32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;

protected:
    // One split of the single-core shape into base blocks and L1 steps; false (with the error
    // recorded) when it does not fit the SoC.
    bool Compute(const char* api);
    bool Refuse(const char* api, const std::string& what) {
        opsdk_host::TilingError(std::string("matmul_tiling::") + api,
                                what + " (" + platform_->SocName() + "; the tiling of opsdk's model, "
                                "docs/ascendc_model.md 'The Matmul API')");
        return false;
    }
    int64_t Out(bool ok, optiling::TCubeTiling& t) {
        if (!ok) return -1;
        t = tiling_;
        return 0;
    }
    int64_t Out(bool ok, ::TCubeTiling& t) {
        if (!ok) return -1;
        t = tiling_.Plain();
        return 0;
    }
    bool Types(const char* api);
    bool Bases(const char* api, uint64_t l0a, uint64_t l0b, uint64_t l0c);
    bool Steps(const char* api, uint64_t l1);

    const platform_ascendc::PlatformAscendC* platform_;
    int32_t fixM_ = -1, fixN_ = -1, fixK_ = -1;
    int32_t l1Space_ = -1, l0cSpace_ = -1, ubSpace_ = -1;
    bool dbL0C_ = true;
    MatrixTraverse traverse_ = MatrixTraverse::NOSET;
    int32_t aBytes_ = 0, bBytes_ = 0, cBytes_ = 0, kAlign_ = 16;
};

inline bool MatmulApiTilingBase::Types(const char* api) {
    aBytes_ = DataBytes(aType_.dataType);
    bBytes_ = DataBytes(bType_.dataType);
    cBytes_ = DataBytes(cType_.dataType);
    if (aBytes_ == 0 || aBytes_ != bBytes_ || cBytes_ == 0) {
        return Refuse(api, "SetAType/SetBType/SetCType: A and B take one of float, float16, bfloat16 or int8 (the "
                           "same size) and C a numeric type; got A " + std::to_string(aBytes_) + " bytes, B " +
                           std::to_string(bBytes_) + ", C " + std::to_string(cBytes_));
    }
    kAlign_ = aBytes_ == 4 ? 8 : (aBytes_ == 1 ? 32 : 16);  // one 32-byte fractal row of k
    if (singleM <= 0 || singleN <= 0 || singleK <= 0) {
        return Refuse(api, "SetShape: m, n and k must be positive; got " + std::to_string(singleM) + ", " +
                           std::to_string(singleN) + ", " + std::to_string(singleK));
    }
    if (orgM == 0) SetOrgShape(singleM, singleN, singleK);
    if (singleM > orgM || singleN > orgN || singleK > std::min(orgKa, orgKb)) {
        return Refuse(api, "SetShape (" + std::to_string(singleM) + ", " + std::to_string(singleN) + ", " +
                           std::to_string(singleK) + ") is larger than SetOrgShape (" + std::to_string(orgM) +
                           ", " + std::to_string(orgN) + ", " + std::to_string(orgKa) + ")");
    }
    return true;
}

// baseM, baseN, baseK and the L0 double buffers within L0A/L0B/L0C's bytes.
inline bool MatmulApiTilingBase::Bases(const char* api, uint64_t l0a, uint64_t l0b, uint64_t l0c) {
    auto& t = tiling_;
    t.baseM = fixM_ > 0 ? fixM_ : std::min(AlignUp(singleCoreM, 16), 128);
    t.baseN = fixN_ > 0 ? fixN_ : std::min(AlignUp(singleCoreN, 16), 128);
    if (t.baseM % 16 != 0 || t.baseN % 16 != 0) {
        return Refuse(api, "SetFixSplit: baseM " + std::to_string(t.baseM) + " and baseN " + std::to_string(t.baseN) +
                           " must be multiples of 16 (one fractal)");
    }
    const uint64_t c = uint64_t(t.baseM) * t.baseN * 4;  // the accumulator is float or int32
    if (c > l0c) {
        return Refuse(api, "baseM x baseN x 4 = " + std::to_string(c) + " bytes of accumulator, but L0C holds " +
                           std::to_string(l0c) + " bytes: lower baseM or baseN (SetFixSplit)");
    }
    t.dbL0C = (dbL0C_ && 2 * c <= l0c) ? 2 : 1;
    const int32_t kAll = AlignUp(singleCoreK, kAlign_);
    if (fixK_ > 0) {
        t.baseK = fixK_;
    } else {
        const uint64_t fitA = l0a / 2 / (uint64_t(t.baseM) * aBytes_), fitB = l0b / 2 / (uint64_t(t.baseN) * bBytes_);
        t.baseK = std::min<int32_t>(kAll, int32_t(std::min(fitA, fitB)) / kAlign_ * kAlign_);
    }
    if (t.baseK < kAlign_ || t.baseK % kAlign_ != 0) {
        return Refuse(api, "baseK " + std::to_string(t.baseK) + " must be a positive multiple of " +
                           std::to_string(kAlign_) + " (32 bytes of k)");
    }
    const uint64_t a = uint64_t(t.baseM) * t.baseK * aBytes_, b = uint64_t(t.baseK) * t.baseN * bBytes_;
    if (a > l0a || b > l0b) {
        return Refuse(api, std::string(a > l0a ? "baseM x baseK" : "baseK x baseN") + " x " +
                           std::to_string(aBytes_) + " = " + std::to_string(a > l0a ? a : b) + " bytes, but " +
                           (a > l0a ? "L0A" : "L0B") + " holds " + std::to_string(a > l0a ? l0a : l0b) +
                           " bytes: lower baseK or " + (a > l0a ? "baseM" : "baseN") + " (SetFixSplit)");
    }
    t.dbL0A = 2 * a <= l0a ? 2 : 1;
    t.dbL0B = 2 * b <= l0b ? 2 : 1;
    return true;
}

// stepKa/stepKb (baseK blocks of A and B per L1 load) and depthA1/depthB1 within L1.
inline bool MatmulApiTilingBase::Steps(const char* api, uint64_t l1) {
    auto& t = tiling_;
    const int32_t kIter = CeilDiv(singleCoreK, t.baseK);
    const uint64_t a = uint64_t(t.baseM) * t.baseK * aBytes_, b = uint64_t(t.baseK) * t.baseN * bBytes_;
    const uint64_t bias = isBias ? uint64_t(t.baseN) * 4 : 0;
    for (int32_t step = std::min(kIter, 4); step >= 1; --step) {
        const int32_t depth = step < kIter ? 2 * step : step;
        if (depth * (a + b) + bias <= l1) {
            t.stepKa = t.stepKb = step;
            t.depthA1 = t.depthB1 = depth;
            t.shareL1Size = int32_t(depth * (a + b) + bias);
            return true;
        }
    }
    return Refuse(api, "one baseM x baseK block of A and one baseK x baseN block of B take " +
                       std::to_string(a + b + bias) + " bytes, but L1 holds " + std::to_string(l1) +
                       " bytes: lower baseM, baseN or baseK (SetFixSplit)");
}

inline bool MatmulApiTilingBase::Compute(const char* api) {
    if (!Types(api)) return false;
    uint64_t l1 = 0, l0a = 0, l0b = 0, l0c = 0;
    platform_->GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
    platform_->GetCoreMemSize(platform_ascendc::CoreMemType::L0_A, l0a);
    platform_->GetCoreMemSize(platform_ascendc::CoreMemType::L0_B, l0b);
    platform_->GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
    if (l1Space_ > 0) l1 = std::min<uint64_t>(l1, uint64_t(l1Space_));
    if (l0cSpace_ > 0) l0c = std::min<uint64_t>(l0c, uint64_t(l0cSpace_));
    auto& t = tiling_;
    t = optiling::TCubeTiling();
    t.M = orgM;
    t.N = orgN;
    t.Ka = orgKa;
    t.Kb = orgKb;
    t.singleCoreM = singleCoreM;
    t.singleCoreN = singleCoreN;
    t.singleCoreK = singleCoreK;
    if (!Bases(api, l0a, l0b, l0c) || !Steps(api, l1)) return false;
    t.stepM = t.stepN = 1;
    t.isBias = isBias ? 1 : 0;
    t.iterateOrder = traverse_ == MatrixTraverse::FIRSTN ? 1 : 0;
    t.shareL0CSize = t.baseM * t.baseN * 4 * t.dbL0C;
    t.shareUbSize = 0;
    t.batchM = t.batchN = t.singleBatchM = t.singleBatchN = 1;
    return true;
}

// Single-core tiling: the whole SetShape on one core.
class MatmulApiTiling : public MatmulApiTilingBase {
public:
    MatmulApiTiling() = default;
    explicit MatmulApiTiling(const platform_ascendc::PlatformAscendC& p) : MatmulApiTilingBase(p) {}
    int64_t GetTiling(optiling::TCubeTiling& tiling) override { return Out(Split(), tiling); }
    int64_t GetTiling(::TCubeTiling& tiling) override { return Out(Split(), tiling); }

private:
    bool Split() {
        singleCoreM = singleM;
        singleCoreN = singleN;
        singleCoreK = singleK;
        if (!Compute("MatmulApiTiling::GetTiling")) return false;
        tiling_.usedCoreNum = 1;
        return true;
    }
};

// Multi-core tiling: M and N split over at most SetDim blocks (or SetSingleShape's piece).
class MultiCoreMatmulTiling : public MatmulApiTilingBase {
public:
    MultiCoreMatmulTiling() = default;
    explicit MultiCoreMatmulTiling(const platform_ascendc::PlatformAscendC& p) : MatmulApiTilingBase(p) {}
    int32_t SetDim(int32_t dim) {
        blockDim = dim;
        return 0;
    }
    int32_t SetShape(int32_t m, int32_t n, int32_t k) override { return MatmulApiTilingBase::SetShape(m, n, k); }
    int32_t SetSingleShape(int32_t singleMIn = -1, int32_t singleNIn = -1, int32_t singleKIn = -1) {
        fixSingleM_ = singleMIn;
        fixSingleN_ = singleNIn;
        fixSingleK_ = singleKIn;
        return 0;
    }
    int32_t GetSingleShape(int32_t& shapeM, int32_t& shapeN, int32_t& shapeK) {
        shapeM = tiling_.singleCoreM;
        shapeN = tiling_.singleCoreN;
        shapeK = tiling_.singleCoreK;
        return 0;
    }
    int32_t GetCoreNum(int32_t& dim, int32_t& mDim, int32_t& nDim) {
        mDim = CeilDiv(tiling_.M, tiling_.singleCoreM);
        nDim = CeilDiv(tiling_.N, tiling_.singleCoreN);
        dim = mDim * nDim;
        return 0;
    }
    int64_t GetTiling(optiling::TCubeTiling& tiling) override { return Out(Split(), tiling); }
    int64_t GetTiling(::TCubeTiling& tiling) override { return Out(Split(), tiling); }

private:
    bool Split();
    int32_t fixSingleM_ = -1, fixSingleN_ = -1, fixSingleK_ = -1;
};

// The mDim x nDim <= SetDim split with the smallest per-core block (then the squarest).
inline bool MultiCoreMatmulTiling::Split() {
    const char* api = "MultiCoreMatmulTiling::GetTiling";
    const int32_t dim = blockDim > 0 ? blockDim : int32_t(platform_->GetCoreNumAic());
    singleCoreK = fixSingleK_ > 0 ? fixSingleK_ : singleK;
    if (fixSingleM_ > 0 || fixSingleN_ > 0) {
        singleCoreM = fixSingleM_ > 0 ? fixSingleM_ : singleM;
        singleCoreN = fixSingleN_ > 0 ? fixSingleN_ : singleN;
    } else {
        int64_t best = -1, bestSum = 0;
        for (int32_t md = 1; md <= dim; ++md) {
            for (int32_t nd = 1; md * nd <= dim; ++nd) {
                const int32_t sm = AlignUp(CeilDiv(singleM, md), 16), sn = AlignUp(CeilDiv(singleN, nd), 16);
                const int64_t work = int64_t(std::min(sm, singleM)) * std::min(sn, singleN), sum = sm + sn;
                if (best < 0 || work < best || (work == best && sum < bestSum)) {
                    best = work;
                    bestSum = sum;
                    singleCoreM = std::min(sm, singleM);
                    singleCoreN = std::min(sn, singleN);
                }
            }
        }
    }
    if (!Compute(api)) return false;
    tiling_.usedCoreNum = CeilDiv(singleM, singleCoreM) * CeilDiv(singleN, singleCoreN);
    if (tiling_.usedCoreNum > dim) {
        return Refuse(api, "SetSingleShape (" + std::to_string(singleCoreM) + ", " + std::to_string(singleCoreN) +
                           ") needs " + std::to_string(tiling_.usedCoreNum) + " blocks, but SetDim allows " +
                           std::to_string(dim));
    }
    return true;
}

}  // namespace matmul_tiling

#endif  // OPSDK_HOST_MATMUL_TILING_H
