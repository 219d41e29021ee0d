// A matmul with a ReLU epilogue on the Cube, basic-API style with hand-written flags and
// ping-pong buffers: each block computes C[M][NT * NW] (half) = ReLU(A[M][K] * B[K][NT * NW])
// for its M rows. A goes to A2 once; B streams in NT tiles of NW columns through two B1, B2 and
// CO1 buffers, so MTE2, MTE1, M and FIX overlap; the reverse flags (MTE1_MTE2, M_MTE1, FIX_M)
// hand each buffer back before it is written again. Fixpipe converts float to half with ReLU.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t M = 32;
constexpr uint32_t K = 32;
constexpr uint32_t NW = 32;
constexpr uint32_t NT = 4;

class MatmulPingPong {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c)
    {
        aGm.SetGlobalBuffer((__gm__ half*)a + GetBlockIdx() * M * K, M * K);
        bGm.SetGlobalBuffer((__gm__ half*)b, K * NW * NT);
        cGm.SetGlobalBuffer((__gm__ half*)c + GetBlockIdx() * M * NW * NT, M * NW * NT);
        pipe.InitBuffer(a1Buf, M * K * sizeof(half));
        pipe.InitBuffer(a2Buf, M * K * sizeof(half));
        pipe.InitBuffer(b1Buf, 2 * K * NW * sizeof(half));
        pipe.InitBuffer(b2Buf, 2 * K * NW * sizeof(half));
        pipe.InitBuffer(c1Buf, 2 * M * NW * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        LocalTensor<half> a1 = a1Buf.Get<half>();
        LocalTensor<half> a2 = a2Buf.Get<half>();
        LocalTensor<half> b1 = b1Buf.Get<half>();
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
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID2);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID2);
        LoadData2DParams load;
        for (uint32_t i = 0; i < M / 16; ++i) {
            load.startIndex = i;
            load.repeatTimes = K / 16;
            load.srcStride = M / 16;
            LoadData(a2[i * 16 * K], a1, load);
        }
        SetFlag<HardEvent::MTE1_M>(EVENT_ID2);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID2);
        SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
        SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID1);
        SetFlag<HardEvent::M_MTE1>(EVENT_ID0);
        SetFlag<HardEvent::M_MTE1>(EVENT_ID1);
        SetFlag<HardEvent::FIX_M>(EVENT_ID0);
        SetFlag<HardEvent::FIX_M>(EVENT_ID1);
        for (uint32_t nt = 0; nt < NT; ++nt) {
            const uint32_t pp = nt % 2;
            const event_t ev = pp ? EVENT_ID1 : EVENT_ID0;
            WaitFlag<HardEvent::MTE1_MTE2>(ev);
            nd2nz.nValue = K;
            nd2nz.dValue = NW;
            nd2nz.srcDValue = NW * NT;
            nd2nz.dstNzC0Stride = K;
            DataCopy(b1[pp * K * NW], bGm[nt * NW], nd2nz);
            SetFlag<HardEvent::MTE2_MTE1>(ev);
            WaitFlag<HardEvent::MTE2_MTE1>(ev);
            WaitFlag<HardEvent::M_MTE1>(ev);
            for (uint32_t i = 0; i < K / 16; ++i) {
                load.startIndex = i;
                load.repeatTimes = NW / 16;
                load.srcStride = K / 16;
                load.ifTranspose = true;
                LoadData(b2[pp * K * NW + i * 16 * NW], b1[pp * K * NW], load);
            }
            SetFlag<HardEvent::MTE1_MTE2>(ev);
            SetFlag<HardEvent::MTE1_M>(ev);
            WaitFlag<HardEvent::MTE1_M>(ev);
            WaitFlag<HardEvent::FIX_M>(ev);
            MmadParams mmad;
            mmad.m = M;
            mmad.n = NW;
            mmad.k = K;
            mmad.cmatrixInitVal = true;
            Mmad(c1[pp * M * NW], a2, b2[pp * K * NW], mmad);
            SetFlag<HardEvent::M_MTE1>(ev);
            SetFlag<HardEvent::M_FIX>(ev);
            WaitFlag<HardEvent::M_FIX>(ev);
            FixpipeParamsV220 fix;
            fix.nSize = NW;
            fix.mSize = M;
            fix.srcStride = M;
            fix.dstStride = NW * NT;
            fix.reluEn = true;
            fix.quantPre = QuantMode_t::F322F16;
            Fixpipe(cGm[nt * NW], c1[pp * M * NW], fix);
            SetFlag<HardEvent::FIX_M>(ev);
        }
        WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID1);
        WaitFlag<HardEvent::M_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::M_MTE1>(EVENT_ID1);
        WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
        WaitFlag<HardEvent::FIX_M>(EVENT_ID1);
    }

private:
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    GlobalTensor<half> aGm;
    GlobalTensor<half> bGm;
    GlobalTensor<half> cGm;
};

extern "C" __global__ __aicore__ void cube_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    MatmulPingPong op;
    op.Init(a, b, c);
    op.Process();
}
