// A matmul with a bias from the bias table, in the basic-API style with hand-written flags: each
// block computes C[M][N] (float) = A[M][K] * B[K][N] (half) + bias[N] (float) for its M rows.
// The bias goes GM -> C1 (L1) -> C2 (the bias table) and the Mmad starts every row of C from it
// (biasLocal in C2, cmatrixInitVal false); A and B go GM -> A1/B1 (Nd2Nz) -> A2/B2 (LoadData).
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t M = 32;
constexpr uint32_t N = 32;
constexpr uint32_t K = 32;

class MatmulBias {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
    {
        aGm.SetGlobalBuffer((__gm__ half*)a + GetBlockIdx() * M * K, M * K);
        bGm.SetGlobalBuffer((__gm__ half*)b, K * N);
        biasGm.SetGlobalBuffer((__gm__ float*)bias, N);
        cGm.SetGlobalBuffer((__gm__ float*)c + GetBlockIdx() * M * N, M * N);
        pipe.InitBuffer(a1Buf, M * K * sizeof(half));
        pipe.InitBuffer(b1Buf, K * N * sizeof(half));
        pipe.InitBuffer(bias1Buf, N * sizeof(float));
        pipe.InitBuffer(a2Buf, M * K * sizeof(half));
        pipe.InitBuffer(b2Buf, K * N * sizeof(half));
        pipe.InitBuffer(btBuf, N * sizeof(float));
        pipe.InitBuffer(c1Buf, M * N * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        LocalTensor<half> a1 = a1Buf.Get<half>();
        LocalTensor<half> b1 = b1Buf.Get<half>();
        LocalTensor<float> bias1 = bias1Buf.Get<float>();
        LocalTensor<half> a2 = a2Buf.Get<half>();
        LocalTensor<half> b2 = b2Buf.Get<half>();
        LocalTensor<float> bt = btBuf.Get<float>();
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
        DataCopy(bias1, biasGm, N);
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        DataCopy(bt, bias1, {1, static_cast<uint16_t>(N * sizeof(float) / 64), 0, 0});
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
        mmad.cmatrixInitVal = false;
        Mmad(c1, a2, b2, bt, mmad);
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
        FixpipeParamsV220 fix;
        fix.nSize = N;
        fix.mSize = M;
        fix.srcStride = M;
        fix.dstStride = N;
        fix.ndNum = 1;
        Fixpipe(cGm, c1, fix);
    }

private:
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::C1> bias1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::C2> btBuf;
    TBuf<TPosition::CO1> c1Buf;
    GlobalTensor<half> aGm;
    GlobalTensor<half> bGm;
    GlobalTensor<float> biasGm;
    GlobalTensor<float> cGm;
};

extern "C" __global__ __aicore__ void cube_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR workspace,
                                                  GM_ADDR tiling)
{
    MatmulBias op;
    op.Init(a, b, bias, c);
    op.Process();
}
