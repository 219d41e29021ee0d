// Brcb as brcb.cpp, in the static tensor style of asc-devkit's newer samples: no TPipe, the
// Unified Buffer cut by LocalMemAllocator, the pipes ordered by SetFlag/WaitFlag. Written for
// opsdk in the manner of asc-devkit's brcb sample (03_basic_api/02_memory_vector_compute/brcb).
#include "kernel_operator.h"

extern "C" __global__ __vector__ void brcb_static(GM_ADDR x, GM_ADDR y)
{
    AscendC::GlobalTensor<int16_t> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ int16_t*)x, 16);
    yGm.SetGlobalBuffer((__gm__ int16_t*)y, 256);
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> ub;
    AscendC::LocalTensor<int16_t> in = ub.Alloc<int16_t, 16>();
    AscendC::LocalTensor<int16_t> out = ub.Alloc<int16_t, 256>();
    AscendC::DataCopy(in, xGm, 16);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::Brcb(out, in, 2, {1, 8});
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID1);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID1);
    AscendC::DataCopy(yGm, out, 256);
}
