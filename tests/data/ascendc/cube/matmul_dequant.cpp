// An int8 matmul dequantised to half by the Fixpipe, in the basic-API style with hand-written
// flags: each block computes C[M][N] (half) = (A[M][K] * B[K][N]) (int8 -> int32) x scale, with
// one scale (DEQF16, deqScalar) or, with PER_CHANNEL defined, a scale per output column (VDEQF16,
// a uint64_t tensor in L1). B arrives row-major K x N and is transposed into L0B by
// LoadDataWithTranspose (LoadData 2D transposes 2-byte types only). A scale is the float's bits
// with the low 13 mantissa bits dropped, as CANN's TransQuantParam builds it.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t M = 32;
constexpr uint32_t N = 64;
constexpr uint32_t K = 64;
constexpr float SCALE = 0.0078125f;

class MatmulDequant {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR scales, GM_ADDR c)
    {
        aGm.SetGlobalBuffer((__gm__ int8_t*)a + GetBlockIdx() * M * K, M * K);
        bGm.SetGlobalBuffer((__gm__ int8_t*)b, K * N);
        scaleGm.SetGlobalBuffer((__gm__ uint64_t*)scales, N);
        cGm.SetGlobalBuffer((__gm__ half*)c + GetBlockIdx() * M * N, M * N);
        pipe.InitBuffer(a1Buf, M * K);
        pipe.InitBuffer(b1Buf, K * N);
        pipe.InitBuffer(scale1Buf, N * sizeof(uint64_t));
        pipe.InitBuffer(a2Buf, M * K);
        pipe.InitBuffer(b2Buf, K * N);
        pipe.InitBuffer(c1Buf, M * N * sizeof(int32_t));
    }
    __aicore__ inline void Process()
    {
        LocalTensor<int8_t> a1 = a1Buf.Get<int8_t>();
        LocalTensor<int8_t> b1 = b1Buf.Get<int8_t>();
        LocalTensor<uint64_t> scale1 = scale1Buf.Get<uint64_t>();
        LocalTensor<int8_t> a2 = a2Buf.Get<int8_t>();
        LocalTensor<int8_t> b2 = b2Buf.Get<int8_t>();
        LocalTensor<int32_t> c1 = c1Buf.Get<int32_t>();
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
        DataCopy(scale1, scaleGm, N);
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        LoadData2DParams load;
        for (uint32_t i = 0; i < M / 16; ++i) {
            load.startIndex = i;
            load.repeatTimes = K / 32;
            load.srcStride = M / 16;
            load.ifTranspose = false;
            LoadData(a2[i * 16 * K], a1, load);
        }
        // B1 column block j (32 columns, K rows) holds K / 32 squares of 32 x 32; square kq becomes
        // L0B fractals (kq, 2j) and (kq, 2j + 1), N / 16 fractals per k row of L0B.
        LoadData2dTransposeParams trans;
        for (uint32_t j = 0; j < N / 32; ++j) {
            trans.startIndex = j * (K / 32);
            trans.repeatTimes = K / 32;
            trans.srcStride = 1;
            trans.dstGap = N / 16 - 1;
            trans.dstFracGap = 0;
            LoadDataWithTranspose(b2[j * 2 * 512], b1, trans);
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
#ifdef PER_CHANNEL
        fix.quantPre = QuantMode_t::VDEQF16;
        Fixpipe(cGm, c1, scale1, fix);
#else
        float scale = SCALE;
        fix.quantPre = QuantMode_t::DEQF16;
        fix.deqScalar = static_cast<uint64_t>(*reinterpret_cast<uint32_t*>(&scale) & 0xFFFFE000u) | (1ULL << 46);
        Fixpipe(cGm, c1, fix);
#endif
    }

private:
    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::C1> scale1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    GlobalTensor<int8_t> aGm;
    GlobalTensor<int8_t> bGm;
    GlobalTensor<uint64_t> scaleGm;
    GlobalTensor<half> cGm;
};

extern "C" __global__ __aicore__ void cube_kernel(GM_ADDR a, GM_ADDR b, GM_ADDR scales, GM_ADDR c,
                                                  GM_ADDR workspace, GM_ADDR tiling)
{
    MatmulDequant op;
    op.Init(a, b, scales, c);
    op.Process();
}
