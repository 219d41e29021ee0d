// A TQueBind<VECIN, VECOUT> buffer read by the vector unit, written for opsdk's race tests:
// y = x * 3. The queue's own flags are MTE2_MTE3 and MTE3_MTE2 (its consumer is MTE3), so the
// vector read needs MTE2_V after the DeQue and V_MTE2 before the buffer is freed; the result
// TBuf needs V_MTE3 before the copy out and MTE3_V before the next tile overwrites it.
#include "kernel_operator.h"

using namespace AscendC;

class KernelCopy {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t tileLength, uint32_t tileNum)
    {
        tile_ = tileLength;
        num_ = tileNum;
        const uint32_t block = tileLength * tileNum;
        xGm_.SetGlobalBuffer((__gm__ float*)x + block * GetBlockIdx(), block);
        yGm_.SetGlobalBuffer((__gm__ float*)y + block * GetBlockIdx(), block);
        pipe_.InitBuffer(bindQue_, 2, tile_ * sizeof(float));
        pipe_.InitBuffer(calcBuf_, tile_ * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        LocalTensor<float> c = calcBuf_.Get<float>();
        for (uint32_t i = 0; i < num_; ++i) {
            LocalTensor<float> t = bindQue_.AllocTensor<float>();
            DataCopy(t, xGm_[i * tile_], tile_);
            bindQue_.EnQue(t);
            t = bindQue_.DeQue<float>();
            if (i > 0) {
                WaitFlag<HardEvent::MTE3_V>(EVENT_ID1);
            }
            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
            Muls(c, t, 3.0f, tile_);
            SetFlag<HardEvent::V_MTE2>(EVENT_ID2);
            WaitFlag<HardEvent::V_MTE2>(EVENT_ID2);
            bindQue_.FreeTensor(t);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            DataCopy(yGm_[i * tile_], c, tile_);
            SetFlag<HardEvent::MTE3_V>(EVENT_ID1);
        }
        WaitFlag<HardEvent::MTE3_V>(EVENT_ID1);
    }

private:
    TPipe pipe_;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 2> bindQue_;
    TBuf<QuePosition::VECCALC> calcBuf_;
    GlobalTensor<float> xGm_, yGm_;
    uint32_t tile_ = 0, num_ = 0;
};

extern "C" __global__ __aicore__ void race_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    KernelCopy op;
    op.Init(x, y, t.tileLength, t.tileNum);
    op.Process();
}
