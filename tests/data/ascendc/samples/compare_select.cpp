// z = x < y ? x : y: Compare (CMPMODE::LT) into a bit mask, then Select in tensor-tensor mode.
// Written for opsdk in the manner of asc-devkit's compare sample
// (03_basic_api/02_memory_vector_compute/compare).
#include "kernel_operator.h"

constexpr uint32_t N = 256;

extern "C" __global__ __aicore__ void compare_select(GM_ADDR x, GM_ADDR y, GM_ADDR z)
{
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> xQue, yQue;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> zQue;
    AscendC::TBuf<AscendC::TPosition::VECCALC> maskBuf;
    pipe.InitBuffer(xQue, 1, N * sizeof(float));
    pipe.InitBuffer(yQue, 1, N * sizeof(float));
    pipe.InitBuffer(zQue, 1, N * sizeof(float));
    pipe.InitBuffer(maskBuf, N / 8);
    AscendC::GlobalTensor<float> xGm, yGm, zGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, N);
    yGm.SetGlobalBuffer((__gm__ float*)y, N);
    zGm.SetGlobalBuffer((__gm__ float*)z, N);

    AscendC::LocalTensor<float> xl = xQue.AllocTensor<float>();
    AscendC::LocalTensor<float> yl = yQue.AllocTensor<float>();
    AscendC::DataCopy(xl, xGm, N);
    AscendC::DataCopy(yl, yGm, N);
    xQue.EnQue(xl);
    yQue.EnQue(yl);
    xl = xQue.DeQue<float>();
    yl = yQue.DeQue<float>();
    AscendC::LocalTensor<uint8_t> mask = maskBuf.Get<uint8_t>();
    AscendC::Compare(mask, xl, yl, AscendC::CMPMODE::LT, N);
    AscendC::LocalTensor<float> zl = zQue.AllocTensor<float>();
    AscendC::Select(zl, mask, xl, yl, AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, N);
    zQue.EnQue(zl);
    xQue.FreeTensor(xl);
    yQue.FreeTensor(yl);
    zl = zQue.DeQue<float>();
    AscendC::DataCopy(zGm, zl, N);
    zQue.FreeTensor(zl);
}
