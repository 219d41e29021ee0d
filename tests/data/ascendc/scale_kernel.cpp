// A small Ascend C kernel for opsdk's model tests: y = x * 2 per block, one tile per block.
// Each OPSDK_BREAK_<CLASS> macro breaks it in one documented way.
#include "kernel_operator.h"

using namespace AscendC;

template <typename T> class KernelScale {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint64_t perBlock)
    {
        n_ = perBlock;
        uint64_t start = GetBlockIdx() * perBlock;
#ifdef OPSDK_BREAK_BLOCK_RANGE
        start = GetBlockIdx() * perBlock + 1;  // writes into the next block's range
#endif
        xGm_.SetGlobalBuffer((__gm__ T*)x + start, perBlock);
        yGm_.SetGlobalBuffer((__gm__ T*)y + start, perBlock);
        uint32_t bytes = static_cast<uint32_t>(perBlock * sizeof(T));
#ifdef OPSDK_BREAK_UB_CAPACITY
        bytes = 200 * 1024;
#endif
#ifdef OPSDK_BREAK_BUFFER_COUNT
        pipe_.InitBuffer(inQue_, 17, bytes);
#endif
        pipe_.InitBuffer(inQue_, 2, bytes);
        pipe_.InitBuffer(outQue_, 2, bytes);
        pipe_.InitBuffer(maskBuf_, 256);
    }

    __aicore__ inline void Process()
    {
        LocalTensor<T> x = inQue_.AllocTensor<T>();
        uint32_t count = static_cast<uint32_t>(n_);
#ifdef OPSDK_BREAK_COPY_ALIGN
        count = count - 1;
#endif
        DataCopy(x, xGm_, count);
#ifdef OPSDK_BREAK_ALLOC_EXHAUSTED
        LocalTensor<T> second = inQue_.AllocTensor<T>();
        LocalTensor<T> third = inQue_.AllocTensor<T>();
#endif
#ifdef OPSDK_BREAK_QUEUE_DEPTH
        LocalTensor<T> extra = inQue_.AllocTensor<T>();
        inQue_.EnQue(extra);
#endif
        inQue_.EnQue(x);
#ifdef OPSDK_BREAK_DEQUE_EMPTY
        (void)inQue_.DeQue<T>();
#endif
        x = inQue_.DeQue<T>();
        LocalTensor<T> y = outQue_.AllocTensor<T>();
#ifdef OPSDK_BREAK_USE_AFTER_FREE
        inQue_.FreeTensor(x);
#endif
#ifdef OPSDK_BREAK_LOCAL_ALIGN
        Muls(y, x[3], static_cast<T>(2), static_cast<int32_t>(n_ - 8));
#elif defined(OPSDK_BREAK_MASK)
        UnaryRepeatParams p;
        Muls(y, x, static_cast<T>(2), 300, 1, p);
#elif defined(OPSDK_BREAK_REPEAT)
        UnaryRepeatParams p;
        Muls(y, x, static_cast<T>(2), 64, 200, p);  // 200 repeats of 256 bytes overrun the tensor
#elif defined(OPSDK_BREAK_DTYPE)
        LocalTensor<int16_t> xi = x.template ReinterpretCast<int16_t>();
        LocalTensor<int16_t> yi = y.template ReinterpretCast<int16_t>();
        Exp(yi, xi, 16);
#else
        Muls(y, x, static_cast<T>(2), static_cast<int32_t>(n_));
#endif
#ifdef OPSDK_BREAK_REDUCE_ORDER
        WholeReduceMax(y, x, 64, 1, 1, 1, 8);  // default order: value and index pairs
#endif
#ifdef OPSDK_BREAK_COMPARE_COUNT
        LocalTensor<uint8_t> mask = maskBuf_.Get<uint8_t>();
        CompareScalar(mask, x, static_cast<T>(0), CMPMODE::GT, 40);
#endif
#ifndef OPSDK_BREAK_USE_AFTER_FREE
        inQue_.FreeTensor(x);
#endif
        outQue_.EnQue(y);
        y = outQue_.DeQue<T>();
        DataCopy(yGm_, y, static_cast<uint32_t>(n_));
        outQue_.FreeTensor(y);
#ifdef OPSDK_TAIL_SAME
        if (GetBlockIdx() + 1 < GetBlockNum()) {  // the next block's first element, with its value
            yGm_.SetValue(n_, xGm_.GetValue(n_) * static_cast<T>(2));
        }
#endif
    }

private:
    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> inQue_;
    TQue<QuePosition::VECOUT, 1> outQue_;
    TBuf<QuePosition::VECCALC> maskBuf_;
    GlobalTensor<T> xGm_, yGm_;
    uint64_t n_ = 0;
};

extern "C" __global__ __aicore__ void scale(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelScale<DTYPE_X> op;
    op.Init(x, y, tilingData.perBlock);
    op.Process();
}
