// opsdk's CPU model of the Ascend C API: the Matmul high-level API (lib/matmul_intf.h;
// docs/ascendc_model.md, "The Matmul API"). Matmul<MatmulType<...> A, B, C[, bias], CFG> runs
// on the model's own Cube instructions: DataCopy GM -> A1/B1 with Nd2NzParams (MTE2), LoadData
// 2D to A2/B2 (MTE1), Mmad into CO1 (M) and Fixpipe CO1 -> GM (FIX), its buffers allocated
// from the kernel's TPipe with the tiling's sizes (so L1/L0A/L0B/L0C capacities apply) and
// handed between pipes by TQue EnQue/DeQue (so the race checker and the estimate see them). The
// schedule is opsdk's: for each baseM x baseN block, K in L1 loads of stepKa x baseK, each in
// baseK Mmads accumulating in float (int32 for int8). NORM and MDL run the same schedule.
// Names and signatures follow CANN 8.1.RC1's lib/matmul_intf.h and lib/matmul/tiling.h; the
// code is opsdk's own.
#ifndef OPSDK_ASCENDC_MODEL_MATMUL_H
#define OPSDK_ASCENDC_MODEL_MATMUL_H

#include <exception>

#include "kernel_operator.h"
#include "kernel_tiling/kernel_tiling.h"

namespace AscendC {

enum class CubeFormat { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR };
enum class LayoutMode { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false>
struct MatmulType {
    constexpr static TPosition pos = POSITION;
    constexpr static CubeFormat format = FORMAT;
    using T = TYPE;
    constexpr static bool isTrans = ISTRANS;
    constexpr static LayoutMode layout = LAYOUT;
    constexpr static bool ibShare = IBSHARE;
};

struct MatmulConfig {
    bool doNorm = false;
    bool doBasicBlock = false;
    bool doMultiDataLoad = false;
    bool intrinsicsCheck = false;
    bool isNBatch = false;
    bool enVecND2NZ = false;
};
constexpr MatmulConfig GetNormalConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                       const bool isVecND2NZ = false) {
    return {true, false, false, intrinsicsLimit, batchLoop, isVecND2NZ};
}
constexpr MatmulConfig GetMDLConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                    const bool isVecND2NZ = false) {
    return {false, false, true, intrinsicsLimit, batchLoop, isVecND2NZ};
}
constexpr MatmulConfig CFG_NORM = GetNormalConfig();
constexpr MatmulConfig CFG_MDL = GetMDLConfig();

}  // namespace AscendC

namespace opsdk_ascendc {

// Matmul's padding of a tile whose rows do not fill their last fractal: zeros over the tile in
// L1 before its DataCopy (InitConstValue on MTE2, as the chip's L1 initialisation), so every
// fractal the Cube reads holds data.
template <typename T> inline void ZeroTile(const AscendC::LocalTensor<T>& t, uint64_t elems, const Loc& loc) {
    Issue is("InitConstValue", Pipe::MTE2, loc);
    uint8_t* d = t.Span("InitConstValue", "dstLocal", 0, elems);
    std::memset(d, 0, elems * sizeof(T));
    TagWrite(t.UbAddr(), elems * sizeof(T), TypeName<T>(), Form::NZ);
}

inline uint32_t Up16(uint32_t v) { return (v + 15) / 16 * 16; }

// The reply of a synchronous Matmul call (GetTensorC, IterateAll): the caller goes on once the
// Cube's work for it is done (on 220 the vector core waits for the Cube core's message), so
// everything the caller does next happens after the call's Fixpipe writes.
inline void MatmulReply(const char* api, const Loc& loc) {
    Issue is(api, Pipe::S, loc);
    Pipes& P = Cur().pipes;
    const int fix = static_cast<int>(Pipe::FIX);
    const Clock done = P.clock[fix];
    for (Clock& c : P.clock) Join(c, done);
    Instr& me = P.instrs[static_cast<size_t>(P.current)];
    if (P.lastOn[fix] >= 0 && P.pipeFree[fix] >= me.dep) {
        me.dep = P.pipeFree[fix];
        me.depInstr = P.lastOn[fix];
    }
}

// The TCubeTiling fields Matmul's buffers and loops take, checked.
inline void CheckCubeTiling(const TCubeTiling& t, uint32_t kAlign) {
    auto need = [](bool ok, const std::string& what) {
        if (!ok) Fail("Matmul::Init", "the TCubeTiling " + what + " (make it with matmul_tiling's GetTiling)");
    };
    need(t.singleCoreM > 0 && t.singleCoreN > 0 && t.singleCoreK > 0,
         "has singleCoreM/N/K " + S(uint64_t(std::max(0, t.singleCoreM))) + "/" +
             S(uint64_t(std::max(0, t.singleCoreN))) + "/" + S(uint64_t(std::max(0, t.singleCoreK))) +
             "; each must be positive");
    need(t.baseM > 0 && t.baseM % 16 == 0 && t.baseN > 0 && t.baseN % 16 == 0,
         "has baseM " + S(uint64_t(std::max(0, t.baseM))) + " and baseN " + S(uint64_t(std::max(0, t.baseN))) +
             "; each must be a positive multiple of 16");
    need(t.baseK > 0 && t.baseK % int32_t(kAlign) == 0,
         "has baseK " + S(uint64_t(std::max(0, t.baseK))) + "; it must be a positive multiple of " + S(kAlign) +
             " (32 bytes of k)");
    need(t.stepKa >= 1 && t.stepKb >= 1 && t.depthA1 >= t.stepKa && t.depthB1 >= t.stepKb,
         "has stepKa/stepKb " + S(uint64_t(std::max(0, t.stepKa))) + "/" + S(uint64_t(std::max(0, t.stepKb))) +
             " and depthA1/depthB1 " + S(uint64_t(std::max(0, t.depthA1))) + "/" +
             S(uint64_t(std::max(0, t.depthB1))) + "; steps must be >= 1 and depths >= their step");
    need(t.M > 0 && t.N > 0 && t.Ka > 0 && t.Kb > 0, "has M/N/Ka/Kb not all positive");
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto& MM_CFG = CFG_NORM,
          class MM_CB = void>
class Matmul {
    using SrcAT = typename A_TYPE::T;
    using SrcBT = typename B_TYPE::T;
    using DstT = typename C_TYPE::T;
    using BiasT = typename BIAS_TYPE::T;
    using L0cT = std::conditional_t<std::is_same_v<SrcAT, int8_t>, int32_t, float>;
    static_assert(std::is_same_v<SrcAT, SrcBT>, "Matmul: A and B have one type (MatmulType's TYPE)");
    static_assert(opsdk_ascendc::kMmadTypes<L0cT, SrcAT, SrcBT>,
                  "Matmul: A/B take half, bfloat16_t, float or int8_t (the Cube's Mmad types on 220)");
    static_assert(A_TYPE::pos == TPosition::GM && B_TYPE::pos == TPosition::GM,
                  "Matmul on opsdk's model: A and B in GM (TSCM/VECIN inputs are not modelled)");
    static_assert(C_TYPE::pos == TPosition::GM && C_TYPE::format == CubeFormat::ND,
                  "Matmul on opsdk's model: C in GM, ND. C in VECIN/VECCALC (the vector cores' Unified Buffer) "
                  "goes through the mixed kernel's GM workspace and message channel, which the model does not "
                  "have yet (docs/ascendc_model.md, 'The Matmul API')");
    static_assert(A_TYPE::format == CubeFormat::ND || A_TYPE::format == CubeFormat::NZ,
                  "Matmul: A is ND or NZ");
    static_assert(B_TYPE::format == CubeFormat::ND || B_TYPE::format == CubeFormat::NZ,
                  "Matmul: B is ND or NZ");
    static constexpr uint32_t kC0 = 32 / sizeof(SrcAT);  // k elements in 32 bytes
    static constexpr uint32_t kFe = 512 / sizeof(SrcAT);  // elements of one fractal

public:
    Matmul() = default;
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;
    // A used object must be ended: on 220 the Cube core serves the vector cores' Matmul calls
    // until End's message (lib/matmul_intf.h's MatmulClient), and waits for ever without it.
    ~Matmul() noexcept(false) {
        if (used_ && !ended_ && std::uncaught_exceptions() == 0 && opsdk_ascendc::tBlock != nullptr) {
            opsdk_ascendc::Fail("Matmul::End", "the Matmul object initialised at " + Where(initLoc_) +
                                                   " computed results but End() was never called: on 220 the "
                                                   "Cube core serving it waits for its end message and the kernel "
                                                   "hangs; call mm.End() after the last GetTensorC/IterateAll");
        }
    }

    void SetTPipe(TPipe* pipe) { pipe_ = pipe; }

    void Init(const TCubeTiling* tiling, TPipe* tpipe = nullptr, opsdk_ascendc::Loc loc = {}) {
        using namespace opsdk_ascendc;
        if (tpipe != nullptr) pipe_ = tpipe;
        if (pipe_ == nullptr) pipe_ = GetTPipePtr();  // the kernel's TPipe, as the real Init takes it
        if (tiling == nullptr) Fail("Matmul::Init", "the tiling is a null pointer");
        if (inited_) Fail("Matmul::Init", "the object is initialised twice (first at " + Where(initLoc_) + ")");
        t_ = *tiling;
        CheckCubeTiling(t_, kC0);
        inited_ = true;
        initLoc_ = loc;
        const uint32_t stepKa = uint32_t(t_.stepKa), stepKb = uint32_t(t_.stepKb);
        stepK_ = std::min(stepKa, stepKb);
        const uint32_t m = uint32_t(t_.baseM), n = uint32_t(t_.baseN), k = uint32_t(t_.baseK);
        pipe_->InitBuffer(qA1_, uint8_t(t_.depthA1 > t_.stepKa ? 2 : 1), m * k * stepKa * sizeof(SrcAT));
        pipe_->InitBuffer(qB1_, uint8_t(t_.depthB1 > t_.stepKb ? 2 : 1), n * k * stepKb * sizeof(SrcBT));
        pipe_->InitBuffer(qA2_, uint8_t(t_.dbL0A > 1 ? 2 : 1), m * k * sizeof(SrcAT));
        pipe_->InitBuffer(qB2_, uint8_t(t_.dbL0B > 1 ? 2 : 1), k * n * sizeof(SrcBT));
        pipe_->InitBuffer(qCO1_, uint8_t(t_.dbL0C > 1 ? 2 : 1), m * n * sizeof(L0cT));
        if (t_.isBias != 0) {
            pipe_->InitBuffer(qBias1_, 1, n * sizeof(L0cT));
            pipe_->InitBuffer(qBias2_, 1, n * sizeof(L0cT));
        }
        orgM_ = uint32_t(t_.M), orgN_ = uint32_t(t_.N), orgKa_ = uint32_t(t_.Ka), orgKb_ = uint32_t(t_.Kb);
        SetSingleShape(t_.singleCoreM, t_.singleCoreN, t_.singleCoreK);
    }

    void SetOrgShape(int orgM, int orgN, int orgK) { SetOrgShape(orgM, orgN, orgK, orgK); }
    void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0) {
        (void)orgKc;
        orgM_ = uint32_t(orgM), orgN_ = uint32_t(orgN), orgKa_ = uint32_t(orgKa), orgKb_ = uint32_t(orgKb);
    }
    void SetSingleShape(int singleM, int singleN, int singleK) {
        tailM_ = uint32_t(singleM), tailN_ = uint32_t(singleN), tailK_ = uint32_t(singleK);
        Restart();
    }
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1) {
        if (tailM > 0) tailM_ = uint32_t(tailM);
        if (tailN > 0) tailN_ = uint32_t(tailN);
        if (tailK > 0) tailK_ = uint32_t(tailK);
        Restart();
    }
    void SetTensorA(const GlobalTensor<SrcAT>& gm, bool isTransposeA = false) {
        a_ = gm;
        transA_ = isTransposeA;
        hasA_ = true;
        Restart();
    }
    void SetTensorB(const GlobalTensor<SrcBT>& gm, bool isTransposeB = false) {
        b_ = gm;
        transB_ = isTransposeB;
        hasB_ = true;
        Restart();
    }
    // The bias row (float; int32_t for int8) goes GM -> C1 (L1) -> C2 (bias table), and the
    // first Mmad of each block starts from it (cmatrixSource, dav_c220's bias-table Mmad).
    void SetBias(const GlobalTensor<BiasT>& gm, opsdk_ascendc::Loc loc = {}) {
        static_assert(std::is_same_v<BiasT, L0cT>,
                      "Matmul on opsdk's model: the bias is float (int32_t with int8_t A and B)");
        if (!inited_ || t_.isBias == 0) {
            Refuse("Matmul::SetBias", "the tiling was made without a bias: EnableBias(true) (SetBias(true)) "
                                      "on the host before GetTiling", loc);
        }
        bias_ = gm;
        hasBias_ = true;
        Restart();
    }
    void DisableBias() { hasBias_ = false; }
    void ClearBias() { hasBias_ = false; }
    template <typename T> void SetLocalWorkspace(const LocalTensor<T>&) {}
    template <typename T> void SetWorkspace(T, uint64_t = 0) {}

    // One baseM x baseN block of C into L0C; false when the single-core C is done.
    template <bool sync = true> bool Iterate(bool enPartialSum = false, opsdk_ascendc::Loc loc = {}) {
        if (enPartialSum) Refuse("Matmul::Iterate", "enPartialSum is not modelled by opsdk", loc);
        async_ = !sync;
        if (!sync) return true;  // GetTensorC<false> computes each block
        return Step(loc);
    }
    template <bool sync = true>
    void GetTensorC(const GlobalTensor<DstT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    opsdk_ascendc::Loc loc = {}) {
        if (!sync && !pending_) Step(loc);
        CopyOut(gm, enAtomic, enSequentialWrite, loc);
        if (sync) opsdk_ascendc::MatmulReply("Matmul::GetTensorC (its reply)", loc);
    }
    template <bool sync = true>
    void IterateAll(const GlobalTensor<DstT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    bool waitIterateAll = false, bool fakeMsg = false, opsdk_ascendc::Loc loc = {}) {
        (void)waitIterateAll, (void)fakeMsg;
        while (Step(loc)) CopyOut(gm, enAtomic, enSequentialWrite, loc);
        if (sync) opsdk_ascendc::MatmulReply("Matmul::IterateAll (its reply)", loc);
    }
    void End(opsdk_ascendc::Loc loc = {}) {
        if (pending_) Refuse("Matmul::End", "the last Iterate's C block was never taken by GetTensorC", loc);
        ended_ = true;
    }

private:
    [[noreturn]] static void Refuse(const char* api, const std::string& what, const opsdk_ascendc::Loc& loc) {
        opsdk_ascendc::Fail(api, what + " [at " + Where(loc) + "]");
    }
    static std::string Where(const opsdk_ascendc::Loc& l) {
        const std::string f = l.file ? l.file : "?";
        return f.substr(f.find_last_of('/') + 1) + ":" + std::to_string(l.line);
    }
    void Restart() {
        index_ = 0;
        pending_ = false;
    }
    bool Step(const opsdk_ascendc::Loc& loc);
    void ComputeBlock(uint32_t m0, uint32_t n0, uint32_t mRows, uint32_t nCols, const opsdk_ascendc::Loc& loc);
    void CopyA1(const LocalTensor<SrcAT>& a1, uint32_t m0, uint32_t k0, uint32_t mRows, uint32_t kLen,
                const opsdk_ascendc::Loc& loc);
    void CopyB1(const LocalTensor<SrcBT>& b1, uint32_t n0, uint32_t k0, uint32_t nCols, uint32_t kLen,
                const opsdk_ascendc::Loc& loc);
    void LoadA2(const LocalTensor<SrcAT>& a2, const LocalTensor<SrcAT>& a1, uint32_t mRows, uint32_t kLen,
                uint32_t kk, uint32_t kSub, const opsdk_ascendc::Loc& loc);
    void LoadB2(const LocalTensor<SrcBT>& b2, const LocalTensor<SrcBT>& b1, uint32_t nCols, uint32_t kLen,
                uint32_t kk, uint32_t kSub, const opsdk_ascendc::Loc& loc);
    void LoadBias(LocalTensor<L0cT>& bt, uint32_t n0, uint32_t nCols, const opsdk_ascendc::Loc& loc);
    void MmadBias(const LocalTensor<L0cT>& co1, const LocalTensor<SrcAT>& a2, const LocalTensor<SrcBT>& b2,
                  const LocalTensor<L0cT>& bt, MmadParams p, const opsdk_ascendc::Loc& loc);
    void CopyOut(const GlobalTensor<DstT>& gm, uint8_t enAtomic, bool enSequentialWrite, const opsdk_ascendc::Loc& loc);
    template <typename T> static void NzCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t blocks,
                                             uint32_t rows, uint32_t srcBlock, uint32_t dstBlock,
                                             const opsdk_ascendc::Loc& loc);

    TPipe* pipe_ = nullptr;
    TCubeTiling t_{};
    TQue<TPosition::A1, 1> qA1_;
    TQue<TPosition::B1, 1> qB1_;
    TQue<TPosition::A2, 1> qA2_;
    TQue<TPosition::B2, 1> qB2_;
    TQue<TPosition::CO1, 1> qCO1_;
    TQue<TPosition::C1, 1> qBias1_;
    TQue<TPosition::C2, 1> qBias2_;
    GlobalTensor<L0cT> bias_;
    bool hasBias_ = false;
    GlobalTensor<SrcAT> a_;
    GlobalTensor<SrcBT> b_;
    bool transA_ = false, transB_ = false, hasA_ = false, hasB_ = false;
    bool inited_ = false, used_ = false, ended_ = false, pending_ = false, async_ = false;
    opsdk_ascendc::Loc initLoc_;
    uint32_t orgM_ = 0, orgN_ = 0, orgKa_ = 0, orgKb_ = 0, tailM_ = 0, tailN_ = 0, tailK_ = 0, stepK_ = 1;
    uint32_t index_ = 0, curM0_ = 0, curN0_ = 0, curM_ = 0, curN_ = 0;
};

}  // namespace AscendC

#include "opsdk_model_matmul_impl.h"

#endif  // OPSDK_ASCENDC_MODEL_MATMUL_H
