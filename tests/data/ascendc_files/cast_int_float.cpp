// int32_t -> float Cast with the rounding mode the tiling names (0 CAST_NONE, 1 CAST_RINT,
// 2 CAST_FLOOR, 3 CAST_CEIL), 64 elements on one block.
#include "kernel_operator.h"

struct CastTiling {
    int32_t mode;
};

extern "C" __global__ __aicore__ void cast_int_float(GM_ADDR x, GM_ADDR y, CastTiling tiling)
{
    constexpr uint32_t N = 64;
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQue;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQue;
    pipe.InitBuffer(inQue, 1, N * sizeof(int32_t));
    pipe.InitBuffer(outQue, 1, N * sizeof(float));
    AscendC::GlobalTensor<int32_t> xGm;
    AscendC::GlobalTensor<float> yGm;
    xGm.SetGlobalBuffer((__gm__ int32_t*)x, N);
    yGm.SetGlobalBuffer((__gm__ float*)y, N);
    AscendC::LocalTensor<int32_t> in = inQue.AllocTensor<int32_t>();
    AscendC::DataCopy(in, xGm, N);
    inQue.EnQue(in);
    in = inQue.DeQue<int32_t>();
    AscendC::LocalTensor<float> out = outQue.AllocTensor<float>();
    const AscendC::RoundMode modes[4] = {AscendC::RoundMode::CAST_NONE, AscendC::RoundMode::CAST_RINT,
                                         AscendC::RoundMode::CAST_FLOOR, AscendC::RoundMode::CAST_CEIL};
    AscendC::Cast(out, in, modes[tiling.mode], N);
    outQue.EnQue(out);
    inQue.FreeTensor(in);
    out = outQue.DeQue<float>();
    AscendC::DataCopy(yGm, out, N);
    outQue.FreeTensor(out);
}
