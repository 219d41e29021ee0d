// Abs through TBufs with hand-written flags, written for opsdk's race tests: y = |x| * 2.
// The in and out TBufs are reused by every tile, so each tile needs all four flags: the copy
// in before the compute (MTE2_V), the compute before the copy out (V_MTE3), and before the
// buffers are reused, the copy out (MTE3_V) and the compute's read (V_MTE2).
#include "kernel_operator.h"

using namespace AscendC;

class KernelAbs {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t tileLength, uint32_t tileNum)
    {
        tile_ = tileLength;
        num_ = tileNum;
        const uint32_t block = tileLength * tileNum;
        xGm_.SetGlobalBuffer((__gm__ float*)x + block * GetBlockIdx(), block);
        yGm_.SetGlobalBuffer((__gm__ float*)y + block * GetBlockIdx(), block);
        pipe_.InitBuffer(inBuf_, tile_ * sizeof(float));
        pipe_.InitBuffer(outBuf_, tile_ * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        LocalTensor<float> in = inBuf_.Get<float>();
        LocalTensor<float> out = outBuf_.Get<float>();
        for (uint32_t i = 0; i < num_; ++i) {
            if (i > 0) {
                WaitFlag<HardEvent::V_MTE2>(EVENT_ID1);
            }
            DataCopy(in, xGm_[i * tile_], tile_);
            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
            if (i > 0) {
                WaitFlag<HardEvent::MTE3_V>(EVENT_ID2);
            }
            Abs(out, in, tile_);
            SetFlag<HardEvent::V_MTE2>(EVENT_ID1);
            Muls(out, out, 2.0f, tile_);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID3);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID3);
            DataCopy(yGm_[i * tile_], out, tile_);
            SetFlag<HardEvent::MTE3_V>(EVENT_ID2);
        }
        WaitFlag<HardEvent::V_MTE2>(EVENT_ID1);
        WaitFlag<HardEvent::MTE3_V>(EVENT_ID2);
    }

private:
    TPipe pipe_;
    TBuf<QuePosition::VECCALC> inBuf_, outBuf_;
    GlobalTensor<float> xGm_, yGm_;
    uint32_t tile_ = 0, num_ = 0;
};

extern "C" __global__ __aicore__ void race_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    KernelAbs op;
    op.Init(x, y, t.tileLength, t.tileNum);
    op.Process();
}
