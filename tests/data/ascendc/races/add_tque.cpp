// Add with double-buffered TQue, Huawei's kernel-launch style, written for opsdk's race tests:
// z = x + y; each block walks tileNum tiles of tileLength floats. x and y are one GM argument
// (y follows x), so the kernel has one input and one output.
#include "kernel_operator.h"

using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

class KernelAdd {
public:
    __aicore__ inline void Init(GM_ADDR xy, GM_ADDR z, uint32_t tileLength, uint32_t tileNum)
    {
        tile_ = tileLength;
        num_ = tileNum;
        const uint32_t block = tileLength * tileNum;
        const uint32_t total = block * GetBlockNum();
        xGm_.SetGlobalBuffer((__gm__ float*)xy + block * GetBlockIdx(), block);
        yGm_.SetGlobalBuffer((__gm__ float*)xy + total + block * GetBlockIdx(), block);
        zGm_.SetGlobalBuffer((__gm__ float*)z + block * GetBlockIdx(), block);
        pipe_.InitBuffer(inQueX_, BUFFER_NUM, tile_ * sizeof(float));
        pipe_.InitBuffer(inQueY_, BUFFER_NUM, tile_ * sizeof(float));
        pipe_.InitBuffer(outQueZ_, BUFFER_NUM, tile_ * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        for (uint32_t i = 0; i < num_; ++i) {
            LocalTensor<float> x = inQueX_.AllocTensor<float>();
            LocalTensor<float> y = inQueY_.AllocTensor<float>();
            DataCopy(x, xGm_[i * tile_], tile_);
            inQueX_.EnQue(x);
            x = inQueX_.DeQue<float>();
            DataCopy(y, yGm_[i * tile_], tile_);
            inQueY_.EnQue(y);
            y = inQueY_.DeQue<float>();
            LocalTensor<float> z = outQueZ_.AllocTensor<float>();
            Add(z, x, y, tile_);
            outQueZ_.EnQue(z);
            z = outQueZ_.DeQue<float>();
            inQueX_.FreeTensor(x);
            inQueY_.FreeTensor(y);
            DataCopy(zGm_[i * tile_], z, tile_);
            outQueZ_.FreeTensor(z);
        }
    }

private:
    TPipe pipe_;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueX_, inQueY_;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueZ_;
    GlobalTensor<float> xGm_, yGm_, zGm_;
    uint32_t tile_ = 0, num_ = 0;
};

extern "C" __global__ __aicore__ void race_kernel(GM_ADDR x, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    KernelAdd op;
    op.Init(x, z, t.tileLength, t.tileNum);
    op.Process();
}
