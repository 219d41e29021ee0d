// A kernel with a race: the vector unit reads x before MTE2's copy is known to have landed
// (no EnQue/DeQue and no SetFlag/WaitFlag between DataCopy and Abs).
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void racy_abs(GM_ADDR x, GM_ADDR z)
{
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * 256 * sizeof(float));
    AscendC::GlobalTensor<float> xGm, zGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    zGm.SetGlobalBuffer((__gm__ float*)z, 256);
    AscendC::LocalTensor<float> a = buf.Get<float>(256);
    AscendC::LocalTensor<float> b = buf.GetWithOffset<float>(256, 1024);
    AscendC::DataCopy(a, xGm, 256);
    AscendC::Abs(b, a, 256);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::DataCopy(zGm, b, 256);
}
