// Per-tile sums read by the scalar unit, written for opsdk's race tests: y[i] = sum of tile i
// of x (y padded to 8 floats per tile). The vector result is read with GetValue after V_S, the
// scalar writes the sums into a TBuf with SetValue and hands them to MTE3 with S_MTE3.
#include "kernel_operator.h"

using namespace AscendC;

class KernelReduce {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t tileLength, uint32_t tileNum)
    {
        tile_ = tileLength;
        num_ = tileNum;
        const uint32_t block = tileLength * tileNum;
        xGm_.SetGlobalBuffer((__gm__ float*)x + block * GetBlockIdx(), block);
        yGm_.SetGlobalBuffer((__gm__ float*)y + 8 * tileNum * GetBlockIdx(), 8 * tileNum);
        pipe_.InitBuffer(inQue_, 2, tile_ * sizeof(float));
        pipe_.InitBuffer(workBuf_, tile_ * sizeof(float));
        pipe_.InitBuffer(sumBuf_, 8 * sizeof(float));
        pipe_.InitBuffer(outBuf_, 8 * tileNum * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        LocalTensor<float> work = workBuf_.Get<float>();
        LocalTensor<float> sum = sumBuf_.Get<float>();
        LocalTensor<float> out = outBuf_.Get<float>();
        for (uint32_t i = 0; i < num_; ++i) {
            LocalTensor<float> x = inQue_.AllocTensor<float>();
            DataCopy(x, xGm_[i * tile_], tile_);
            inQue_.EnQue(x);
            x = inQue_.DeQue<float>();
            ReduceSum(sum, x, work, tile_);
            inQue_.FreeTensor(x);
            SetFlag<HardEvent::V_S>(EVENT_ID0);
            WaitFlag<HardEvent::V_S>(EVENT_ID0);
            const float s = sum.GetValue(0);
            for (uint32_t k = 0; k < 8; ++k) {
                out.SetValue(i * 8 + k, k == 0 ? s : 0.0f);
            }
        }
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
        DataCopy(yGm_, out, 8 * num_);
    }

private:
    TPipe pipe_;
    TQue<QuePosition::VECIN, 2> inQue_;
    TBuf<QuePosition::VECCALC> workBuf_, sumBuf_, outBuf_;
    GlobalTensor<float> xGm_, yGm_;
    uint32_t tile_ = 0, num_ = 0;
};

extern "C" __global__ __aicore__ void race_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    KernelReduce op;
    op.Init(x, y, t.tileLength, t.tileNum);
    op.Process();
}
