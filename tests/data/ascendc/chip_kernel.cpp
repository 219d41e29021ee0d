// A kernel for the model tests of what the chip does beyond the API documentation: Select's
// scratch at TMP_UB_OFFSET, the tmp-buffer stack of the high-level APIs, the scalar
// ToBfloat16, Cast modes, and the less common APIs. The tiling's `mode` picks the case.
#include "kernel_operator.h"

using namespace AscendC;

class KernelChip {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t mode)
    {
        mode_ = mode;
        xGm_.SetGlobalBuffer((__gm__ float*)x, 256);
        yGm_.SetGlobalBuffer((__gm__ float*)y, 256);
        // modes 0 and 1 fill the Unified Buffer past TMP_UB_OFFSET (184 KB on 220) or up to
        // the end of the tmp-buffer stack; the others leave most of it free.
        const uint32_t big = mode == 0 ? 185 * 1024 : (mode == 1 ? 192 * 1024 - 128 - 4096 - 256 : 1024);
        pipe_.InitBuffer(que_, 1, 1024);
        pipe_.InitBuffer(work_, 2048);
        pipe_.InitBuffer(mask_, 1024);
        pipe_.InitBuffer(pad_, big);
    }

    __aicore__ inline void Process()
    {
        LocalTensor<float> x = que_.AllocTensor<float>();
        DataCopy(x, xGm_, 256);
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);  // x is not queued: sync by hand
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
        LocalTensor<float> w = work_.Get<float>();
        LocalTensor<uint8_t> k = mask_.Get<uint8_t>();
        if (mode_ == 0 || mode_ == 7) {  // Select, tensor-scalar mode
            CompareScalar(k, x, 0.0f, CMPMODE::GT, 256);
            Select(w, k, x, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 256);
        } else if (mode_ == 1 || mode_ == 2) {  // Erf on the tmp-buffer stack
            Erf(w, x, 256);
        } else if (mode_ == 3) {  // scalar bfloat16 conversions
            for (uint32_t i = 0; i < 256; ++i) {
                w.SetValue(i, ToFloat(ToBfloat16(x.GetValue(i))));
            }
        } else if (mode_ == 4) {  // float -> bfloat16_t with CAST_NONE
            Cast(w.ReinterpretCast<bfloat16_t>(), x, RoundMode::CAST_NONE, 256);
        } else if (mode_ == 5) {  // the chip's Tanh near 0
            Tanh(w, x, mask_.Get<uint8_t>(), 256);
        } else if (mode_ == 6) {  // less common APIs
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            DataCopyParams p(2, 8, 8, 8);  // two runs of 8 blocks (64 floats), every other run
            Duplicate(w, 0.0f, 512);
            DataCopy(w, x, p);
            PipeBarrier<PIPE_ALL>();  // the raw store below is not tracked: order it by hand
            float* raw = w.GetPhyAddr();
            raw[1] = 7.0f;
            TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> bound;
            (void)bound;
        }
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
        DataCopy(yGm_, w, 256);
        que_.FreeTensor(x);
        if (mode_ == 6) {
            pipe_.Destroy();
        }
    }

private:
    uint32_t mode_ = 0;
    TPipe pipe_;
    TQue<QuePosition::VECIN, 1> que_;
    TBuf<QuePosition::VECCALC> work_;
    TBuf<QuePosition::VECCALC> mask_;
    TBuf<QuePosition::VECCALC> pad_;
    GlobalTensor<float> xGm_;
    GlobalTensor<float> yGm_;
};

extern "C" __global__ __aicore__ void chip(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelChip op;
    op.Init(x, y, tilingData.mode);
    op.Process();
}
