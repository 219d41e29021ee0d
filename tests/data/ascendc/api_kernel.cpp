// Exercises the Ascend C API on opsdk's model, one mode per launch: out = f_mode(x, y).
// x, y, out: 256 floats; one block. tests/ascend/test_ascendc_api.py holds the expected values.
#include "kernel_operator.h"

using namespace AscendC;

class KernelApi {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR out)
    {
        xGm_.SetGlobalBuffer((__gm__ float*)x, 256);
        yGm_.SetGlobalBuffer((__gm__ float*)y, 256);
        outGm_.SetGlobalBuffer((__gm__ float*)out, 256);
        pipe_.InitBuffer(buf_, 4 * 256 * sizeof(float));
    }

    __aicore__ inline void Run(uint32_t mode)
    {
        LocalTensor<float> all = buf_.Get<float>();
        LocalTensor<float> x = all, y = all[256], d = all[512], t = all[768];
        DataCopy(x, xGm_, 256);
        DataCopy(y, yGm_, 256);
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);  // the TBuf has no queue: sync by hand
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        Duplicate(d, -1.0f, 256);
        if (mode == 0) {  // continuous mask: 64 elements per repeat, 2 repeats, default strides
            BinaryRepeatParams p;
            Add(d, x, y, 64, 2, p);
        } else if (mode == 1) {  // bit mask: even elements of one repeat
            uint64_t mask[2] = {0x5555555555555555ULL, 0};
            BinaryRepeatParams p;
            Mul(d, x, y, mask, 1, p);
        } else if (mode == 2) {  // block stride 2, repeat stride 16: blocks 0, 2, 4, ... of each 512 B
            UnaryRepeatParams p(2, 2, 16, 16);
            Muls(d, x, 3.0f, 64, 2, p);
        } else if (mode == 3) {  // float -> half with each rounding mode, back to float
            LocalTensor<half> h = t.ReinterpretCast<half>();
            const RoundMode modes[5] = {RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL, RoundMode::CAST_ROUND,
                                        RoundMode::CAST_TRUNC, RoundMode::CAST_RINT};
            for (int i = 0; i < 5; ++i) {
                Cast(h[i * 48], x[i * 48], modes[i], 48);
                Cast(d[i * 48], h[i * 48], RoundMode::CAST_NONE, 48);
            }
        } else if (mode == 4) {  // where(x > 0.25, x, y) via CompareScalar + Select
            LocalTensor<uint8_t> m = t.ReinterpretCast<uint8_t>();
            CompareScalar(m, x, 0.25f, CMPMODE::GT, 256);
            Select(d, m, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, 256);
        } else if (mode == 5) {  // reductions of the first 100 elements
            ReduceSum(d, x, t, 100);
            ReduceMax(d[8], x, t, 100);
        } else if (mode == 6) {  // strided gather: 4 blocks of 8 floats, skipping one block each
            DataCopyParams p(4, 1, 1, 0);
            SetFlag<HardEvent::V_MTE2>(EVENT_ID0);  // d was written by Duplicate
            WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
            DataCopy(d, xGm_, p);
        } else if (mode == 7) {  // DataCopyPad of 5 floats with padding value 7
            DataCopyExtParams p{1, 5 * sizeof(float), 0, 0, 0};
            DataCopyPadExtParams<float> pad{true, 0, 3, 7.0f};
            SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
            DataCopyPad(d, yGm_, p, pad);
        } else if (mode == 9) {  // mask/repeat-form reductions: one result per repeat of 64
            WholeReduceSum(d, x, 64, 4, 1, 1, 8);
            WholeReduceMax(d[8], x, 64, 4, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
            uint64_t mask[2] = {0xFULL, 0};
            WholeReduceMin(d[16], y, mask, 2, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
        } else if (mode == 8) {  // unary chain in the count form on 200 elements
            Abs(t, x, 200);
            Sqrt(t, t, 200);
            Exp(d, t, 200);
        }
        if (mode == 6 || mode == 7) {
            SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        }
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        DataCopy(outGm_, d, 256);
    }

private:
    TPipe pipe_;
    TBuf<QuePosition::VECCALC> buf_;
    GlobalTensor<float> xGm_, yGm_, outGm_;
};

extern "C" __global__ __aicore__ void api(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelApi op;
    op.Init(x, y, out);
    op.Run(tilingData.mode);
}
