// A matmul kernel-launch file in the style of Huawei's Matmul API samples, written for opsdk's
// tests: C[M][N] = A[M][K] * B[K][N] (+ bias[N] when the tiling has isBias; B given as N x K
// with TRANS_B), the blocks splitting M and
// N by the TCubeTiling that matmul_custom_tiling.cpp's GenerateTiling wrote into the tiling GM
// buffer (followed by the UB size, as the samples pass it). IN_T half (default), bfloat16_t,
// float or int8_t; OUT_T float (default; int32_t for int8_t). MM_CFG is CFG_NORM (default) or CFG_MDL; A_FORMAT and B_FORMAT ND (default) or NZ;
// ITERATE_LOOP / ITERATE_ASYNC take the blocks one by one instead of IterateAll; READ_BACK
// reads C back after the Matmul calls returned.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"

using namespace matmul;

#ifndef IN_T
#define IN_T half
#endif
#ifndef OUT_T
#define OUT_T float
#endif
#ifndef MM_CFG
#define MM_CFG CFG_NORM
#endif
#ifndef A_FORMAT
#define A_FORMAT ND
#endif
#ifndef B_FORMAT
#define B_FORMAT ND
#endif
#ifndef TRANS_B
#define TRANS_B false
#endif

__aicore__ inline uint32_t Ceiling(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

__aicore__ inline void CopyTiling(TCubeTiling *tiling, uint64_t &localMemSize, GM_ADDR tilingGm)
{
    uint32_t *ptr = reinterpret_cast<uint32_t *>(tiling);
    auto tiling32 = reinterpret_cast<__gm__ uint32_t *>(tilingGm);
    for (uint32_t i = 0; i < sizeof(TCubeTiling) / sizeof(uint32_t); i++, ptr++) {
        *ptr = *(tiling32 + i);
    }
    localMemSize = *reinterpret_cast<__gm__ uint64_t *>(tilingGm + sizeof(TCubeTiling));
}

// This block's corner of A, B and C and its share of M and N (the last blocks take the tails).
__aicore__ inline void CalcGMOffset(int blockIdx, const TCubeTiling &tiling, int &offsetA, int &offsetB,
                                    int &offsetC, int &offsetBias, int &tailM, int &tailN, bool isTransB)
{
    uint32_t mSingleBlocks = Ceiling(tiling.M, tiling.singleCoreM);
    uint32_t mCoreIndx = blockIdx % mSingleBlocks;
    uint32_t nCoreIndx = blockIdx / mSingleBlocks;

    offsetA = mCoreIndx * tiling.Ka * tiling.singleCoreM;
    offsetB = isTransB ? nCoreIndx * tiling.Kb * tiling.singleCoreN : nCoreIndx * tiling.singleCoreN;
    offsetC = mCoreIndx * tiling.N * tiling.singleCoreM + nCoreIndx * tiling.singleCoreN;
    offsetBias = nCoreIndx * tiling.singleCoreN;

    tailM = tiling.M - mCoreIndx * tiling.singleCoreM;
    tailM = tailM < tiling.singleCoreM ? tailM : tiling.singleCoreM;
    tailN = tiling.N - nCoreIndx * tiling.singleCoreN;
    tailN = tailN < tiling.singleCoreN ? tailN : tiling.singleCoreN;
}

extern "C" __global__ __aicore__ void matmul_custom(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                    GM_ADDR workspace, GM_ADDR tilingGm)
{
    using A_T = IN_T;
    using B_T = IN_T;
    using C_T = OUT_T;

    AscendC::TPipe pipe;
    TCubeTiling tiling;
    uint64_t localMemSize = 0;
    CopyTiling(&tiling, localMemSize, tilingGm);
    if (GetBlockIdx() >= tiling.usedCoreNum) {
        return;
    }

    AscendC::GlobalTensor<A_T> aGlobal;
    AscendC::GlobalTensor<B_T> bGlobal;
    AscendC::GlobalTensor<C_T> cGlobal;
    AscendC::GlobalTensor<C_T> biasGlobal;
    aGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ A_T *>(a), tiling.M * tiling.Ka);
    bGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ B_T *>(b), tiling.Kb * tiling.N);
    cGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ C_T *>(c), tiling.M * tiling.N);
    biasGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ C_T *>(bias), tiling.N);

    int offsetA = 0;
    int offsetB = 0;
    int offsetC = 0;
    int offsetBias = 0;
    bool isTransA = false;
    bool isTransB = TRANS_B;
    int tailM = 0;
    int tailN = 0;
    CalcGMOffset(GetBlockIdx(), tiling, offsetA, offsetB, offsetC, offsetBias, tailM, tailN, isTransB);

    auto gmA = aGlobal[offsetA];
    auto gmB = bGlobal[offsetB];
    auto gmC = cGlobal[offsetC];

    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::A_FORMAT, A_T>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::B_FORMAT, B_T>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, C_T>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, C_T>, MM_CFG> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);

    mm.SetTensorA(gmA, isTransA);
    mm.SetTensorB(gmB, isTransB);
    if (tiling.isBias) {
        mm.SetBias(biasGlobal[offsetBias]);
    }
    mm.SetTail(tailM, tailN);
#if defined(ITERATE_LOOP)  // one block per Iterate, copied out by GetTensorC
    while (mm.Iterate()) {
        mm.GetTensorC(gmC);
    }
#elif defined(ITERATE_ASYNC)  // Iterate<false> once, then GetTensorC<false> per block
    mm.template Iterate<false>();
    for (uint32_t i = 0; i < Ceiling(tailM, tiling.baseM) * Ceiling(tailN, tiling.baseN); ++i) {
        mm.template GetTensorC<false>(gmC);
    }
#else
    mm.IterateAll(gmC);
#endif
    mm.End();
#ifdef READ_BACK  // the first 64 values of this block's C into the Unified Buffer, as an epilogue
    AscendC::TBuf<AscendC::TPosition::VECCALC> ubBuf;
    pipe.InitBuffer(ubBuf, 64 * sizeof(C_T));
    AscendC::LocalTensor<C_T> cLocal = ubBuf.Get<C_T>();
    AscendC::DataCopy(cLocal, gmC, 64);
#endif
}
