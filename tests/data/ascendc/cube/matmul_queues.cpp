// A matmul on the Cube in the basic-API style with TQue hand-offs and a K loop: each block
// computes C[M][N] = A[M][K] * Bt[N][K]^T for its M rows, K in tiles of KT accumulated in L0C.
// Bt is B transposed (N x K), so its NZ fractals already hold 16 n-rows of C0 k-elements each,
// the layout L0B takes: one LoadData moves them all. m and n are small, so each Mmad is followed
// by PipeBarrier<PIPE_M> before the next one accumulates onto its result. IN_T/OUT_T: float/float
// (the default), half/float, bfloat16_t/float or int8_t/int32_t.
#include "kernel_operator.h"
using namespace AscendC;

#ifndef IN_T
#define IN_T float
#define OUT_T float
#endif
constexpr uint32_t C0 = 32 / sizeof(IN_T);

constexpr uint32_t M = 32;
constexpr uint32_t N = 32;
constexpr uint32_t K = 64;
constexpr uint32_t KT = 32;

class MatmulQueues {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c)
    {
        aGm.SetGlobalBuffer((__gm__ IN_T*)a + GetBlockIdx() * M * K, M * K);
        bGm.SetGlobalBuffer((__gm__ IN_T*)b, N * K);
        cGm.SetGlobalBuffer((__gm__ OUT_T*)c + GetBlockIdx() * M * N, M * N);
        pipe.InitBuffer(inQueueA1, 2, M * KT * sizeof(IN_T));
        pipe.InitBuffer(inQueueB1, 2, N * KT * sizeof(IN_T));
        pipe.InitBuffer(inQueueA2, 2, M * KT * sizeof(IN_T));
        pipe.InitBuffer(inQueueB2, 2, N * KT * sizeof(IN_T));
        pipe.InitBuffer(outQueueCO1, 1, M * N * sizeof(OUT_T));
    }
    __aicore__ inline void Process()
    {
        LocalTensor<OUT_T> c1 = outQueueCO1.AllocTensor<OUT_T>();
        for (uint32_t kt = 0; kt < K / KT; ++kt) {
            CopyIn(kt);
            SplitA();
            SplitB();
            Compute(c1, kt);
        }
        outQueueCO1.EnQue(c1);
        c1 = outQueueCO1.DeQue<OUT_T>();
        FixpipeParamsV220 fix;
        fix.nSize = N;
        fix.mSize = M;
        fix.srcStride = M;
        fix.dstStride = N;
        Fixpipe(cGm, c1, fix);
        outQueueCO1.FreeTensor(c1);
    }

private:
    __aicore__ inline void CopyIn(uint32_t kt)
    {
        LocalTensor<IN_T> a1 = inQueueA1.AllocTensor<IN_T>();
        LocalTensor<IN_T> b1 = inQueueB1.AllocTensor<IN_T>();
        Nd2NzParams nd2nz;
        nd2nz.ndNum = 1;
        nd2nz.nValue = M;
        nd2nz.dValue = KT;
        nd2nz.srcDValue = K;
        nd2nz.dstNzC0Stride = M;
        nd2nz.dstNzNStride = 1;
        DataCopy(a1, aGm[kt * KT], nd2nz);
        nd2nz.nValue = N;
        nd2nz.dstNzC0Stride = N;
        DataCopy(b1, bGm[kt * KT], nd2nz);
        inQueueA1.EnQue(a1);
        inQueueB1.EnQue(b1);
    }
    __aicore__ inline void SplitA()
    {
        LocalTensor<IN_T> a1 = inQueueA1.DeQue<IN_T>();
        LocalTensor<IN_T> a2 = inQueueA2.AllocTensor<IN_T>();
        LoadData2DParams load;
        for (uint32_t i = 0; i < M / 16; ++i) {
            load.startIndex = i;
            load.repeatTimes = KT / C0;
            load.srcStride = M / 16;
            LoadData(a2[i * 16 * KT], a1, load);
        }
        inQueueA2.EnQue(a2);
        inQueueA1.FreeTensor(a1);
    }
    __aicore__ inline void SplitB()
    {
        LocalTensor<IN_T> b1 = inQueueB1.DeQue<IN_T>();
        LocalTensor<IN_T> b2 = inQueueB2.AllocTensor<IN_T>();
        LoadData2DParams load;
        load.startIndex = 0;
        load.repeatTimes = (KT / C0) * (N / 16);
        load.srcStride = 1;
        LoadData(b2, b1, load);
        inQueueB2.EnQue(b2);
        inQueueB1.FreeTensor(b1);
    }
    __aicore__ inline void Compute(LocalTensor<OUT_T>& c1, uint32_t kt)
    {
        LocalTensor<IN_T> a2 = inQueueA2.DeQue<IN_T>();
        LocalTensor<IN_T> b2 = inQueueB2.DeQue<IN_T>();
        MmadParams mmad;
        mmad.m = M;
        mmad.n = N;
        mmad.k = KT;
        mmad.cmatrixInitVal = (kt == 0);
        Mmad(c1, a2, b2, mmad);
        PipeBarrier<PIPE_M>();
        inQueueA2.FreeTensor(a2);
        inQueueB2.FreeTensor(b2);
    }

    TPipe pipe;
    TQue<TPosition::A1, 1> inQueueA1;
    TQue<TPosition::B1, 1> inQueueB1;
    TQue<TPosition::A2, 1> inQueueA2;
    TQue<TPosition::B2, 1> inQueueB2;
    TQue<TPosition::CO1, 1> outQueueCO1;
    GlobalTensor<IN_T> aGm;
    GlobalTensor<IN_T> bGm;
    GlobalTensor<OUT_T> cGm;
};

extern "C" __global__ __aicore__ void cube_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    MatmulQueues op;
    op.Init(a, b, c);
    op.Process();
}
#undef IN_T
#undef OUT_T
