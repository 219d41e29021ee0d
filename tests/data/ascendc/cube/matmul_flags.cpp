// A matmul on the Cube in the basic-API style, with hand-written flags: each block computes
// C[M][N] (float) = A[M][K] * B[K][N] (half) for its M rows. GM -> A1/B1 with ND -> NZ,
// A1 -> A2 (zZ) and B1 -> B2 (nZ, transposed fractals), Mmad into CO1, Fixpipe NZ -> ND to GM;
// then the result is read back from GM into L1, as a next stage would (FIX_MTE2 orders it).
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t M = 32;
constexpr uint32_t N = 32;
constexpr uint32_t K = 64;

class MatmulFlags {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c)
    {
        aGm.SetGlobalBuffer((__gm__ half*)a + GetBlockIdx() * M * K, M * K);
        bGm.SetGlobalBuffer((__gm__ half*)b, K * N);
        cGm.SetGlobalBuffer((__gm__ float*)c + GetBlockIdx() * M * N, M * N);
        pipe.InitBuffer(a1Buf, M * K * sizeof(half));
        pipe.InitBuffer(b1Buf, K * N * sizeof(half));
        pipe.InitBuffer(a2Buf, M * K * sizeof(half));
        pipe.InitBuffer(b2Buf, K * N * sizeof(half));
        pipe.InitBuffer(c1Buf, M * N * sizeof(float));
        pipe.InitBuffer(backBuf, M * N * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        LocalTensor<half> a1 = a1Buf.Get<half>();
        LocalTensor<half> b1 = b1Buf.Get<half>();
        LocalTensor<half> a2 = a2Buf.Get<half>();
        LocalTensor<half> b2 = b2Buf.Get<half>();
        LocalTensor<float> c1 = c1Buf.Get<float>();
        Nd2NzParams nd2nz;
        nd2nz.ndNum = 1;
        nd2nz.nValue = M;
        nd2nz.dValue = K;
        nd2nz.srcDValue = K;
        nd2nz.dstNzC0Stride = M;
        nd2nz.dstNzNStride = 1;
        DataCopy(a1, aGm, nd2nz);
        nd2nz.nValue = K;
        nd2nz.dValue = N;
        nd2nz.srcDValue = N;
        nd2nz.dstNzC0Stride = K;
        DataCopy(b1, bGm, nd2nz);
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        LoadData2DParams load;
        for (uint32_t i = 0; i < M / 16; ++i) {
            load.startIndex = i;
            load.repeatTimes = K / 16;
            load.srcStride = M / 16;
            load.ifTranspose = false;
            LoadData(a2[i * 16 * K], a1, load);
        }
        for (uint32_t i = 0; i < K / 16; ++i) {
            load.startIndex = i;
            load.repeatTimes = N / 16;
            load.srcStride = K / 16;
            load.ifTranspose = true;
            LoadData(b2[i * 16 * N], b1, load);
        }
        SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
        MmadParams mmad;
        mmad.m = M;
        mmad.n = N;
        mmad.k = K;
        mmad.cmatrixInitVal = true;
        Mmad(c1, a2, b2, mmad);
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
        FixpipeParamsV220 fix;
        fix.nSize = N;
        fix.mSize = M;
        fix.srcStride = M;
        fix.dstStride = N;
        fix.ndNum = 1;
        Fixpipe(cGm, c1, fix);
        SetFlag<HardEvent::FIX_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::FIX_MTE2>(EVENT_ID0);
        LocalTensor<float> back = backBuf.Get<float>();
        DataCopy(back, cGm, M * N);
    }

private:
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    TBuf<TPosition::C1> backBuf;
    GlobalTensor<half> aGm;
    GlobalTensor<half> bGm;
    GlobalTensor<float> cGm;
};

extern "C" __global__ __aicore__ void cube_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    MatmulFlags op;
    op.Init(a, b, c);
    op.Process();
}
