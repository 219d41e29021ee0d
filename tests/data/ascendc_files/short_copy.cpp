// A kernel that breaks a documented limit: DataCopy of 7 floats (28 bytes; DataCopy moves whole
// 32-byte blocks, the tail needs DataCopyPad).
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void short_copy(GM_ADDR x, GM_ADDR z)
{
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    AscendC::GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 7);
    AscendC::LocalTensor<float> a = buf.Get<float>(64);
    AscendC::DataCopy(a, xGm, 7);
}
