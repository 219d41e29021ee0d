// float -> half rounded to nearest even (CAST_RINT), and float -> int32_t rounded down
// (CAST_FLOOR), in one pass over a VECIN queue and two VECOUT queues. Written for opsdk in the
// manner of asc-devkit's cast sample (03_basic_api/02_memory_vector_compute/cast).
#include "kernel_operator.h"

constexpr uint32_t N = 512;

extern "C" __global__ __aicore__ void cast_modes(GM_ADDR x, GM_ADDR h, GM_ADDR i)
{
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQue;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> halfQue, intQue;
    pipe.InitBuffer(inQue, 1, N * sizeof(float));
    pipe.InitBuffer(halfQue, 1, N * sizeof(half));
    pipe.InitBuffer(intQue, 1, N * sizeof(int32_t));
    AscendC::GlobalTensor<float> xGm;
    AscendC::GlobalTensor<half> hGm;
    AscendC::GlobalTensor<int32_t> iGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, N);
    hGm.SetGlobalBuffer((__gm__ half*)h, N);
    iGm.SetGlobalBuffer((__gm__ int32_t*)i, N);

    AscendC::LocalTensor<float> in = inQue.AllocTensor<float>();
    AscendC::DataCopy(in, xGm, N);
    inQue.EnQue(in);
    in = inQue.DeQue<float>();
    AscendC::LocalTensor<half> hl = halfQue.AllocTensor<half>();
    AscendC::LocalTensor<int32_t> il = intQue.AllocTensor<int32_t>();
    AscendC::Cast(hl, in, AscendC::RoundMode::CAST_RINT, N);
    AscendC::Cast(il, in, AscendC::RoundMode::CAST_FLOOR, N);
    halfQue.EnQue(hl);
    intQue.EnQue(il);
    inQue.FreeTensor(in);
    hl = halfQue.DeQue<half>();
    il = intQue.DeQue<int32_t>();
    AscendC::DataCopy(hGm, hl, N);
    AscendC::DataCopy(iGm, il, N);
    halfQue.FreeTensor(hl);
    intQue.FreeTensor(il);
}
