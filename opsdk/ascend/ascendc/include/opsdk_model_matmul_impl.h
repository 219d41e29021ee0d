// opsdk's CPU model of the Ascend C API: the Matmul API's schedule on the Cube instructions
// (included by opsdk_model_matmul.h). Layouts, for 32-byte k groups of C0 elements:
// A1 holds a tile of A as NZ column blocks of C0 k-elements, each Up16(m) rows (A transposed:
// blocks of 16 m, Up16(k) rows); B1 a tile of B as blocks of 16 n, Up16(k) rows (B transposed:
// blocks of C0 k, Up16(n) rows). LoadData 2D puts A2 in zZ and B2 in nZ fractals, transposing
// the 16 x 16 fractals of 2-byte data where the L1 tile is the other way round; Mmad's m, n, k
// are the block's own, so the rows past a tail are never part of C.
#ifndef OPSDK_ASCENDC_MODEL_MATMUL_IMPL_H
#define OPSDK_ASCENDC_MODEL_MATMUL_IMPL_H

namespace AscendC {

#define OPSDK_MATMUL_TEMPLATE \
    template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE, const auto& MM_CFG, class MM_CB>
#define OPSDK_MATMUL Matmul<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE, MM_CFG, MM_CB>

OPSDK_MATMUL_TEMPLATE bool OPSDK_MATMUL::Step(const opsdk_ascendc::Loc& loc) {
    using namespace opsdk_ascendc;
    if (!inited_) Refuse("Matmul::Iterate", "the object is not initialised: REGIST_MATMUL_OBJ(&pipe, "
                                          "GetSysWorkSpacePtr(), mm, &tiling) or mm.Init(&tiling) first", loc);
    if (!hasA_ || !hasB_) Refuse("Matmul::Iterate", "SetTensorA and SetTensorB come before Iterate", loc);
    if (ended_) Refuse("Matmul::Iterate", "called after End()", loc);
    if (pending_) {
        Refuse("Matmul::Iterate", "the previous Iterate's C block (rows " + S(curM0_) + ".., columns " + S(curN0_) +
                                    "..) was not taken by GetTensorC: the next block would overwrite it in L0C "
                                    "and that C is lost", loc);
    }
    const uint32_t bm = uint32_t(t_.baseM), bn = uint32_t(t_.baseN);
    const uint32_t mIter = (tailM_ + bm - 1) / bm, nIter = (tailN_ + bn - 1) / bn;
    if (index_ >= mIter * nIter) return false;
    const bool mFirst = t_.iterateOrder == 0;  // ORDER_M: the m block changes fastest
    const uint32_t mi = mFirst ? index_ % mIter : index_ / nIter, ni = mFirst ? index_ / mIter : index_ % nIter;
    ++index_;
    curM0_ = mi * bm, curN0_ = ni * bn;
    curM_ = std::min(bm, tailM_ - curM0_), curN_ = std::min(bn, tailN_ - curN0_);
    used_ = true;
    ComputeBlock(curM0_, curN0_, curM_, curN_, loc);
    pending_ = true;
    return true;
}

OPSDK_MATMUL_TEMPLATE void OPSDK_MATMUL::ComputeBlock(uint32_t m0, uint32_t n0, uint32_t mRows, uint32_t nCols,
                                                      const opsdk_ascendc::Loc& loc) {
    LocalTensor<L0cT> co1 = qCO1_.template AllocTensor<L0cT>(loc);
    LocalTensor<L0cT> bt;
    if (hasBias_) LoadBias(bt, n0, nCols, loc);
    const uint32_t chunk = stepK_ * uint32_t(t_.baseK);
    bool first = true;
    for (uint32_t k0 = 0; k0 < tailK_; k0 += chunk) {
        const uint32_t kLen = std::min(chunk, tailK_ - k0);
        LocalTensor<SrcAT> a1 = qA1_.template AllocTensor<SrcAT>(loc);
        CopyA1(a1, m0, k0, mRows, kLen, loc);
        qA1_.EnQue(a1, loc);
        LocalTensor<SrcBT> b1 = qB1_.template AllocTensor<SrcBT>(loc);
        CopyB1(b1, n0, k0, nCols, kLen, loc);
        qB1_.EnQue(b1, loc);
        a1 = qA1_.template DeQue<SrcAT>(loc);
        b1 = qB1_.template DeQue<SrcBT>(loc);
        for (uint32_t kk = 0; kk < kLen; kk += uint32_t(t_.baseK)) {
            const uint32_t kSub = std::min(uint32_t(t_.baseK), kLen - kk);
            LocalTensor<SrcAT> a2 = qA2_.template AllocTensor<SrcAT>(loc);
            LoadA2(a2, a1, mRows, kLen, kk, kSub, loc);
            qA2_.EnQue(a2, loc);
            LocalTensor<SrcBT> b2 = qB2_.template AllocTensor<SrcBT>(loc);
            LoadB2(b2, b1, nCols, kLen, kk, kSub, loc);
            qB2_.EnQue(b2, loc);
            a2 = qA2_.template DeQue<SrcAT>(loc);
            b2 = qB2_.template DeQue<SrcBT>(loc);
            MmadParams p;
            p.m = uint16_t(mRows);
            p.n = uint16_t(nCols);
            p.k = uint16_t(kSub);
            p.cmatrixInitVal = first;
            if (first && hasBias_) {
                MmadBias(co1, a2, b2, bt, p, loc);
                qBias2_.FreeTensor(bt, loc);
            } else {
                Mmad(co1, a2, b2, p, loc);
            }
            if ((mRows / 16) * (nCols / 16) < opsdk_ascendc::kSmallMmadFractals) PipeBarrier<PIPE_M>(loc);
            first = false;
            qA2_.FreeTensor(a2, loc);
            qB2_.FreeTensor(b2, loc);
        }
        qA1_.FreeTensor(a1, loc);
        qB1_.FreeTensor(b1, loc);
    }
    qCO1_.EnQue(co1, loc);
}

// The block's bias columns GM -> C1 (MTE2, DataCopy) -> C2 (MTE1, the bias table), each
// handed on by its queue; bt is the C2 tensor, dequeued for the M pipe.
OPSDK_MATMUL_TEMPLATE void OPSDK_MATMUL::LoadBias(LocalTensor<L0cT>& bt, uint32_t n0, uint32_t nCols,
                                                  const opsdk_ascendc::Loc& loc) {
    using namespace opsdk_ascendc;
    if (nCols % 8 != 0) {
        Refuse("Matmul::SetBias", "a block of " + S(nCols) + " bias columns is not whole 32-byte blocks; the model "
                                  "copies the bias with DataCopy only (N and its blocks multiples of 8)", loc);
    }
    LocalTensor<L0cT> c1 = qBias1_.template AllocTensor<L0cT>(loc);
    DataCopy(c1, bias_[n0], nCols, loc);
    qBias1_.EnQue(c1, loc);
    c1 = qBias1_.template DeQue<L0cT>(loc);
    bt = qBias2_.template AllocTensor<L0cT>(loc);
    {
        Issue is("DataCopy", Pipe::MTE1, loc);  // C1 -> C2: L1 into the bias table
        const uint8_t* from = c1.Span("DataCopy", "srcLocal", 0, nCols);
        TagRead("DataCopy", "srcLocal", c1.UbAddr(), nCols * 4, TypeName<L0cT>(), Form::ND, " (the bias row copied to C1)");
        std::memcpy(bt.Span("DataCopy", "dstLocal", 0, nCols), from, nCols * 4);
        TagWrite(bt.UbAddr(), nCols * 4, TypeName<L0cT>(), Form::ND);
    }
    qBias1_.FreeTensor(c1, loc);
    qBias2_.EnQue(bt, loc);
    bt = qBias2_.template DeQue<L0cT>(loc);
}

// The first Mmad of a block with the bias table as its initial C (one instruction: every row
// of the m x n result starts from the bias row, then the products are summed onto it).
OPSDK_MATMUL_TEMPLATE void OPSDK_MATMUL::MmadBias(const LocalTensor<L0cT>& co1, const LocalTensor<SrcAT>& a2,
                                                  const LocalTensor<SrcBT>& b2, const LocalTensor<L0cT>& bt,
                                                  MmadParams p, const opsdk_ascendc::Loc& loc) {
    using namespace opsdk_ascendc;
    Issue is("Mmad", Pipe::M, loc);
    const uint32_t m1 = Up16(p.m) / 16, n1 = Up16(p.n) / 16;
    const uint8_t* bias = bt.Span("Mmad", "biasLocal", 0, p.n);
    TagRead("Mmad", "biasLocal", bt.UbAddr(), p.n * 4u, TypeName<L0cT>(), Form::ND, " (the bias table, C2)");
    uint8_t* c = co1.Span("Mmad", "dstLocal", 0, m1 * n1 * 256);
    for (uint32_t i = 0; i < m1 * n1 * 256; ++i) {  // fractal (n / 16, m / 16), row m % 16, column n % 16
        const uint32_t n = (i / 256) / m1 * 16 + i % 16;
        StoreAt<L0cT>(c, i, n < p.n ? LoadAt<L0cT>(bias, n) : L0cT(0));
    }
    TagWrite(co1.UbAddr(), m1 * n1 * 256 * sizeof(L0cT), TypeName<L0cT>(), Form::Acc);
    p.cmatrixInitVal = false;
    Mmad(co1, a2, b2, p, loc);
}

// `blocks` NZ column blocks of `rows` x C0 from an NZ matrix in GM (blocks srcBlock elements
// apart) into L1 (dstBlock apart): one DataCopy with Nd2NzParams, each block an "ND matrix".
OPSDK_MATMUL_TEMPLATE template <typename T>
void OPSDK_MATMUL::NzCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t blocks, uint32_t rows,
                          uint32_t srcBlock, uint32_t dstBlock, const opsdk_ascendc::Loc& loc) {
    if (srcBlock > 65535 || dstBlock > 65535) {
        Refuse("Matmul (NZ input)", "an NZ column block of " + opsdk_ascendc::S(srcBlock) +
                                                     " elements is past Nd2NzParams' 16-bit matrix strides", loc);
    }
    Nd2NzParams p{uint16_t(blocks), uint16_t(rows), uint16_t(kC0), uint16_t(srcBlock), uint16_t(kC0), 1, 1,
                  uint16_t(dstBlock)};
    DataCopy(dst, src, p, loc);
}

OPSDK_MATMUL_TEMPLATE void OPSDK_MATMUL::CopyA1(const LocalTensor<SrcAT>& a1, uint32_t m0, uint32_t k0,
                                                uint32_t mRows, uint32_t kLen, const opsdk_ascendc::Loc& loc) {
    using opsdk_ascendc::Up16;
    const uint32_t kUp = (kLen + kC0 - 1) / kC0 * kC0;
    if (transA_) {  // A is K x M in GM: blocks of 16 m, k rows
        if constexpr (sizeof(SrcAT) != 2) {
            Refuse("Matmul::SetTensorA", "isTransposeA with " + std::string(opsdk_ascendc::TypeName<SrcAT>()) +
                                             ": the model transposes 2-byte fractals only (LoadData 2D); "
                                             "LoadDataWithTranspose is not modelled", loc);
        }
        if (A_TYPE::format != CubeFormat::ND) {
            Refuse("Matmul::SetTensorA", "isTransposeA with NZ A is not modelled", loc);
        }
        if (kLen % 16 != 0) opsdk_ascendc::ZeroTile(a1, Up16(kLen) * Up16(mRows), loc);
        Nd2NzParams p{1, uint16_t(kLen), uint16_t(mRows), 0, uint16_t(orgM_), uint16_t(Up16(kLen)), 1, 0};
        DataCopy(a1, a_[uint64_t(k0) * orgM_ + m0], p, loc);
        return;
    }
    if (mRows % 16 != 0) opsdk_ascendc::ZeroTile(a1, Up16(mRows) * kUp, loc);
    if constexpr (A_TYPE::format == CubeFormat::NZ) {  // [Ka / C0][Up16(M)][C0] in GM
        NzCopy(a1, a_[uint64_t(k0) * Up16(orgM_) + uint64_t(m0) * kC0], kUp / kC0, mRows, Up16(orgM_) * kC0,
               Up16(mRows) * kC0, loc);
    } else {
        Nd2NzParams p{1, uint16_t(mRows), uint16_t(kLen), 0, uint16_t(orgKa_), uint16_t(Up16(mRows)), 1, 0};
        DataCopy(a1, a_[uint64_t(m0) * orgKa_ + k0], p, loc);
    }
}

OPSDK_MATMUL_TEMPLATE void OPSDK_MATMUL::CopyB1(const LocalTensor<SrcBT>& b1, uint32_t n0, uint32_t k0,
                                                uint32_t nCols, uint32_t kLen, const opsdk_ascendc::Loc& loc) {
    using opsdk_ascendc::Up16;
    if (transB_) {  // B is N x K in GM: blocks of C0 k, n rows (the nZ fractals L0B takes)
        if (B_TYPE::format != CubeFormat::ND) {
            Refuse("Matmul::SetTensorB", "isTransposeB with NZ B is not modelled", loc);
        }
        const uint32_t kUp = (kLen + kC0 - 1) / kC0 * kC0;
        if (nCols % 16 != 0) opsdk_ascendc::ZeroTile(b1, Up16(nCols) * kUp, loc);
        Nd2NzParams p{1, uint16_t(nCols), uint16_t(kLen), 0, uint16_t(orgKb_), uint16_t(Up16(nCols)), 1, 0};
        DataCopy(b1, b_[uint64_t(n0) * orgKb_ + k0], p, loc);
        return;
    }
    if constexpr (sizeof(SrcBT) != 2) {
        Refuse("Matmul::SetTensorB", "B not transposed with " + std::string(opsdk_ascendc::TypeName<SrcBT>()) +
                                         ": the model transposes 2-byte fractals only (LoadData 2D; "
                                         "LoadDataWithTranspose is not modelled); pass B as N x K with "
                                         "SetTensorB(b, true)", loc);
    }
    if (kLen % 16 != 0) opsdk_ascendc::ZeroTile(b1, Up16(kLen) * Up16(nCols), loc);
    if constexpr (B_TYPE::format == CubeFormat::NZ) {  // [N / 16][Up16(K)][16] in GM
        NzCopy(b1, b_[uint64_t(n0) * Up16(orgKb_) + uint64_t(k0) * kC0], (nCols + kC0 - 1) / kC0, kLen,
               Up16(orgKb_) * kC0, Up16(kLen) * kC0, loc);
    } else {
        Nd2NzParams p{1, uint16_t(kLen), uint16_t(nCols), 0, uint16_t(orgN_), uint16_t(Up16(kLen)), 1, 0};
        DataCopy(b1, b_[uint64_t(k0) * orgN_ + n0], p, loc);
    }
}

OPSDK_MATMUL_TEMPLATE void OPSDK_MATMUL::LoadA2(const LocalTensor<SrcAT>& a2, const LocalTensor<SrcAT>& a1,
                                                uint32_t mRows, uint32_t kLen, uint32_t kk, uint32_t kSub,
                                                const opsdk_ascendc::Loc& loc) {
    using opsdk_ascendc::Up16;
    const uint32_t m1 = Up16(mRows) / 16, k1 = (kSub + kC0 - 1) / kC0;
    LoadData2DParams p;
    p.repeatTimes = uint8_t(k1);
    for (uint32_t mi = 0; mi < m1; ++mi) {
        if (transA_) {  // fractal (k block, m block) at m block * Up16(kLen) / 16 + k block, transposed
            p.startIndex = uint16_t(mi * (Up16(kLen) / 16) + kk / 16);
            p.srcStride = 1;
            p.ifTranspose = true;
        } else {  // fractal (m block, k block) at k block * m1All + m block
            p.startIndex = uint16_t((kk / kC0) * m1 + mi);
            p.srcStride = uint16_t(m1);
        }
        LoadData(a2[mi * k1 * kFe], a1, p, loc);
    }
}

OPSDK_MATMUL_TEMPLATE void OPSDK_MATMUL::LoadB2(const LocalTensor<SrcBT>& b2, const LocalTensor<SrcBT>& b1,
                                                uint32_t nCols, uint32_t kLen, uint32_t kk, uint32_t kSub,
                                                const opsdk_ascendc::Loc& loc) {
    using opsdk_ascendc::Up16;
    const uint32_t n1 = Up16(nCols) / 16, k1 = (kSub + kC0 - 1) / kC0;
    LoadData2DParams p;
    if (transB_) {  // fractal (n block, k block) at k block * n1 + n block: already nZ, in order
        for (uint32_t r = 0; r < k1 * n1; r += 255) {
            p.startIndex = uint16_t((kk / kC0) * n1 + r);
            p.repeatTimes = uint8_t(std::min<uint32_t>(255, k1 * n1 - r));
            p.srcStride = 1;
            LoadData(b2[r * kFe], b1, p, loc);
        }
        return;
    }
    p.repeatTimes = uint8_t(n1);  // fractal (k block, n block) at n block * Up16(kLen) / 16 + k block
    p.srcStride = uint16_t(Up16(kLen) / 16);
    p.ifTranspose = true;
    for (uint32_t ki = 0; ki < k1; ++ki) {
        p.startIndex = uint16_t(kk / 16 + ki);
        LoadData(b2[ki * n1 * kFe], b1, p, loc);
    }
}

OPSDK_MATMUL_TEMPLATE void OPSDK_MATMUL::CopyOut(const GlobalTensor<DstT>& gm, uint8_t enAtomic, bool enSequentialWrite,
                                                 const opsdk_ascendc::Loc& loc) {
    using namespace opsdk_ascendc;
    if (!pending_) {
        Refuse("Matmul::GetTensorC", std::string("no new C block: ") +
                                       (index_ == 0 ? "no Iterate computed one yet"
                                                    : "the last Iterate's block was already taken (its L0C is freed; "
                                                      "the C it would copy is stale)") +
                                       "; call Iterate before each GetTensorC", loc);
    }
    if (enAtomic != 0) Refuse("Matmul::GetTensorC", "enAtomic (atomic add into GM) is not modelled by opsdk", loc);
    LocalTensor<L0cT> co1 = qCO1_.template DeQue<L0cT>(loc);
    FixpipeParamsV220 f;
    f.nSize = uint16_t(curN_);
    f.mSize = uint16_t(curM_);
    f.srcStride = uint16_t(Up16(curM_));
    f.dstStride = enSequentialWrite ? curN_ : orgN_;
    if constexpr (std::is_same_v<DstT, half>) f.quantPre = QuantMode_t::F322F16;
    if constexpr (std::is_same_v<DstT, bfloat16_t>) f.quantPre = QuantMode_t::F322BF16;
    const uint64_t at = enSequentialWrite ? 0 : uint64_t(curM0_) * orgN_ + curN0_;
    Fixpipe(gm[at], co1, f, loc);
    qCO1_.FreeTensor(co1, loc);
    pending_ = false;
}

#undef OPSDK_MATMUL_TEMPLATE
#undef OPSDK_MATMUL

// REGIST_MATMUL_OBJ(&pipe, workspace, mm[, &tiling][, mm2, &tiling2 ...]): the objects take the
// kernel's TPipe (their L1/L0 buffers come from it) and, with a tiling, are initialised.
template <class MM, typename... Rest>
inline void OpsdkRegistMatmul(TPipe* pipe, const opsdk_ascendc::Loc& loc, MM& mm, Rest&&... rest);
template <class MM, typename First, typename... Rest>
inline void OpsdkRegistNext(TPipe* pipe, const opsdk_ascendc::Loc& loc, MM& mm, First&& first, Rest&&... rest) {
    if constexpr (std::is_convertible_v<First, const TCubeTiling*>) {
        if (first != nullptr) mm.Init(first, pipe, loc);
        if constexpr (sizeof...(Rest) > 0) OpsdkRegistMatmul(pipe, loc, std::forward<Rest>(rest)...);
    } else {
        OpsdkRegistMatmul(pipe, loc, std::forward<First>(first), std::forward<Rest>(rest)...);
    }
}
template <class MM, typename... Rest>
inline void OpsdkRegistMatmul(TPipe* pipe, const opsdk_ascendc::Loc& loc, MM& mm, Rest&&... rest) {
    mm.SetTPipe(pipe);
    if constexpr (sizeof...(Rest) > 0) OpsdkRegistNext(pipe, loc, mm, std::forward<Rest>(rest)...);
}

// GetSysWorkSpacePtr(), the system workspace REGIST_MATMUL_OBJ takes, is the launch's
// (opsdk_model_mix.h).

}  // namespace AscendC

#define REGIST_MATMUL_OBJ(tpipe, workspace, ...) \
    ((void)(workspace), ::AscendC::OpsdkRegistMatmul((tpipe), ::opsdk_ascendc::Loc(), __VA_ARGS__))
#define REGIST_MATMUL_OBJ_STATIC REGIST_MATMUL_OBJ

// lib/matmul/matmul.h: the samples' "using namespace matmul" is AscendC.
namespace matmul = AscendC;

#endif  // OPSDK_ASCENDC_MODEL_MATMUL_IMPL_H
