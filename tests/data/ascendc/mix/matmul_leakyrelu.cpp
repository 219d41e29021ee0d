// A mixed Cube + vector kernel in the basic-API style (KERNEL_TYPE_MIX_AIC_1_2): each block's
// Cube core computes C's 32 rows one 32-column tile at a time (A[32][64] x B[64][32], half ->
// float) and writes the tile to the block's GM workspace tile; its two vector cores each take
// 16 rows of the tile after CrossCoreWaitFlag, apply LeakyRelu and write them to C. The tile is
// reused: the Cube core waits until both vector cores have read it before writing the next one.
#include "kernel_operator.h"
#include "mix_tiling.h"
using namespace AscendC;

constexpr uint32_t M = 32;
constexpr uint32_t K = 64;
constexpr uint32_t TILE_N = 32;
constexpr uint16_t TILE_READY = 3;     // Cube -> vector: the workspace tile is written
constexpr uint16_t TILE_CONSUMED = 4;  // vector -> Cube: both vector cores have read it

#if defined(__DAV_C220_CUBE__)
class MatmulToWorkspace {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR ws, const MixTiling& tiling)
    {
        nTiles = tiling.nTiles;
        nTotal = TILE_N * nTiles;
        aGm.SetGlobalBuffer((__gm__ half*)a + GetBlockIdx() * M * K, M * K);
        bGm.SetGlobalBuffer((__gm__ half*)b, K * nTotal);
        wsGm.SetGlobalBuffer((__gm__ float*)ws + GetBlockIdx() * M * TILE_N, M * TILE_N);
        pipe.InitBuffer(a1Buf, M * K * sizeof(half));
        pipe.InitBuffer(b1Buf, K * TILE_N * sizeof(half));
        pipe.InitBuffer(a2Buf, M * K * sizeof(half));
        pipe.InitBuffer(b2Buf, K * TILE_N * sizeof(half));
        pipe.InitBuffer(c1Buf, M * TILE_N * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t j = 0; j < nTiles; ++j) {
            ComputeTile(j);
            if (j > 0) {
                CrossCoreWaitFlag(TILE_CONSUMED);
            }
            FixpipeParamsV220 fix;
            fix.nSize = TILE_N;
            fix.mSize = M;
            fix.srcStride = M;
            fix.dstStride = TILE_N;
            fix.ndNum = 1;
            Fixpipe(wsGm, c1Buf.Get<float>(), fix);
            CrossCoreSetFlag<0x2, PIPE_FIX>(TILE_READY);
            SetFlag<HardEvent::FIX_M>(EVENT_ID0);
            WaitFlag<HardEvent::FIX_M>(EVENT_ID0);
        }
        CrossCoreWaitFlag(TILE_CONSUMED);
    }

private:
    __aicore__ inline void ComputeTile(uint32_t j)
    {
        LocalTensor<half> a1 = a1Buf.Get<half>();
        LocalTensor<half> b1 = b1Buf.Get<half>();
        LocalTensor<half> a2 = a2Buf.Get<half>();
        LocalTensor<half> b2 = b2Buf.Get<half>();
        Nd2NzParams nd2nz;
        nd2nz.ndNum = 1;
        nd2nz.nValue = M;
        nd2nz.dValue = K;
        nd2nz.srcDValue = K;
        nd2nz.dstNzC0Stride = M;
        nd2nz.dstNzNStride = 1;
        DataCopy(a1, aGm, nd2nz);
        nd2nz.nValue = K;
        nd2nz.dValue = TILE_N;
        nd2nz.srcDValue = nTotal;
        nd2nz.dstNzC0Stride = K;
        DataCopy(b1, bGm[j * TILE_N], nd2nz);
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
            load.repeatTimes = TILE_N / 16;
            load.srcStride = K / 16;
            load.ifTranspose = true;
            LoadData(b2[i * 16 * TILE_N], b1, load);
        }
        SetFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_MTE2>(EVENT_ID0);
        SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
        WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
        MmadParams mmad;
        mmad.m = M;
        mmad.n = TILE_N;
        mmad.k = K;
        mmad.cmatrixInitVal = true;
        Mmad(c1Buf.Get<float>(), a2, b2, mmad);
        SetFlag<HardEvent::M_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::M_MTE1>(EVENT_ID0);
        SetFlag<HardEvent::M_FIX>(EVENT_ID0);
        WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    }

    TPipe pipe;
    TBuf<TPosition::A1> a1Buf;
    TBuf<TPosition::B1> b1Buf;
    TBuf<TPosition::A2> a2Buf;
    TBuf<TPosition::B2> b2Buf;
    TBuf<TPosition::CO1> c1Buf;
    GlobalTensor<half> aGm;
    GlobalTensor<half> bGm;
    GlobalTensor<float> wsGm;
    uint32_t nTiles = 0;
    uint32_t nTotal = 0;
};
#endif

class LeakyReluEpilogue {
public:
    __aicore__ inline void Init(GM_ADDR ws, GM_ADDR c, const MixTiling& tiling)
    {
        nTiles = tiling.nTiles;
        alpha = tiling.alpha;
        const uint32_t rows = M / GetTaskRation();
        const uint32_t block = GetBlockIdx() / GetTaskRation();
        const uint32_t row0 = GetSubBlockIdx() * rows;
        wsGm.SetGlobalBuffer((__gm__ float*)ws + block * M * TILE_N + row0 * TILE_N, rows * TILE_N);
        cGm.SetGlobalBuffer((__gm__ float*)c + (block * M + row0) * TILE_N * nTiles, rows * TILE_N * nTiles);
        tileElems = rows * TILE_N;
        pipe.InitBuffer(inQueue, 1, tileElems * sizeof(float));
        pipe.InitBuffer(outQueue, 1, tileElems * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t j = 0; j < nTiles; ++j) {
            CrossCoreWaitFlag(TILE_READY);
            LocalTensor<float> in = inQueue.AllocTensor<float>();
            DataCopy(in, wsGm, tileElems);
            CrossCoreSetFlag<0x2, PIPE_MTE2>(TILE_CONSUMED);
            inQueue.EnQue(in);
            in = inQueue.DeQue<float>();
            LocalTensor<float> out = outQueue.AllocTensor<float>();
            LeakyRelu(out, in, alpha, tileElems);
            outQueue.EnQue(out);
            inQueue.FreeTensor(in);
            out = outQueue.DeQue<float>();
            DataCopyParams rowsOut;
            rowsOut.blockCount = tileElems / TILE_N;
            rowsOut.blockLen = TILE_N * sizeof(float) / 32;
            rowsOut.srcStride = 0;
            rowsOut.dstStride = (nTiles - 1) * TILE_N * sizeof(float) / 32;
            DataCopy(cGm[j * TILE_N], out, rowsOut);
            outQueue.FreeTensor(out);
        }
    }

private:
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQueue;
    TQue<TPosition::VECOUT, 1> outQueue;
    GlobalTensor<float> wsGm;
    GlobalTensor<float> cGm;
    uint32_t nTiles = 0;
    uint32_t tileElems = 0;
    float alpha = 0;
};

extern "C" __global__ __aicore__ void matmul_leakyrelu(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace,
                                                       GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if (workspace == nullptr) {
        return;
    }
    GET_TILING_DATA_WITH_STRUCT(MixTiling, tilingData, tiling);
    GM_ADDR user = GetUserWorkspace(workspace);
#if defined(__DAV_C220_CUBE__)
    MatmulToWorkspace mm;
    mm.Init(a, b, user, tilingData);
    mm.Process();
#endif
    if ASCEND_IS_AIV {
        LeakyReluEpilogue epilogue;
        epilogue.Init(user, c, tilingData);
        epilogue.Process();
    }
}
