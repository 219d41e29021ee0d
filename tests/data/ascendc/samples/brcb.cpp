// Each of 16 floats broadcast to a whole 32-byte block (Brcb, 2 repeats of 8 blocks). Written
// for opsdk in the manner of asc-devkit's brcb sample (03_basic_api/02_memory_vector_compute/brcb).
#include "kernel_operator.h"

constexpr uint32_t N = 16;

extern "C" __global__ __aicore__ void brcb(GM_ADDR x, GM_ADDR y)
{
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQue;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQue;
    pipe.InitBuffer(inQue, 1, N * sizeof(float));
    pipe.InitBuffer(outQue, 1, N * 8 * sizeof(float));
    AscendC::GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, N);
    yGm.SetGlobalBuffer((__gm__ float*)y, N * 8);

    AscendC::LocalTensor<float> in = inQue.AllocTensor<float>();
    AscendC::DataCopy(in, xGm, N);
    inQue.EnQue(in);
    in = inQue.DeQue<float>();
    AscendC::LocalTensor<float> out = outQue.AllocTensor<float>();
    AscendC::Brcb(out, in, static_cast<uint8_t>(N / 8), AscendC::BrcbRepeatParams(1, 8));
    outQue.EnQue(out);
    inQue.FreeTensor(in);
    out = outQue.DeQue<float>();
    AscendC::DataCopy(yGm, out, N * 8);
    outQue.FreeTensor(out);
}
