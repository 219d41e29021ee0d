// dst[i] = src at byte offset offsets[i] (Gather, count form): the offsets come from GM as
// uint32_t byte offsets. Written for opsdk in the manner of asc-devkit's gather sample, its
// tensor-offset scenario (03_basic_api/02_memory_vector_compute/gather).
#include "kernel_operator.h"

constexpr uint32_t N = 128;

extern "C" __global__ __aicore__ void gather_offsets(GM_ADDR src, GM_ADDR offsets, GM_ADDR dst)
{
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * (2 * sizeof(half) + sizeof(uint32_t)));
    AscendC::LocalTensor<half> srcLocal = buf.Get<half>(N);
    AscendC::LocalTensor<uint32_t> offLocal = buf.GetWithOffset<uint32_t>(N, N * sizeof(half));
    AscendC::LocalTensor<half> dstLocal = buf.GetWithOffset<half>(N, N * (sizeof(half) + sizeof(uint32_t)));
    AscendC::GlobalTensor<half> srcGm, dstGm;
    AscendC::GlobalTensor<uint32_t> offGm;
    srcGm.SetGlobalBuffer((__gm__ half*)src, N);
    offGm.SetGlobalBuffer((__gm__ uint32_t*)offsets, N);
    dstGm.SetGlobalBuffer((__gm__ half*)dst, N);

    AscendC::DataCopy(srcLocal, srcGm, N);
    AscendC::DataCopy(offLocal, offGm, N);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::Gather(dstLocal, srcLocal, offLocal, static_cast<uint32_t>(0), N);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::DataCopy(dstGm, dstLocal, N);
}
