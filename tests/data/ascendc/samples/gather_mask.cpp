// The odd elements of each repeat (GatherMask with the built-in pattern 2, normal mode, 4
// repeats of 64 int32_t), packed; the count kept goes out as well (int32_t here; the sample takes uint32_t). Written for opsdk in the
// manner of asc-devkit's gather sample, its built-in pattern scenario
// (03_basic_api/02_memory_vector_compute/gather).
#include "kernel_operator.h"

constexpr uint32_t N = 256;

extern "C" __global__ __aicore__ void gather_mask(GM_ADDR src, GM_ADDR dst, GM_ADDR kept)
{
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * N * sizeof(int32_t) + 32);
    AscendC::LocalTensor<int32_t> srcLocal = buf.Get<int32_t>(N);
    AscendC::LocalTensor<int32_t> dstLocal = buf.GetWithOffset<int32_t>(N, N * sizeof(int32_t));
    AscendC::LocalTensor<int32_t> keptLocal = buf.GetWithOffset<int32_t>(8, 2 * N * sizeof(int32_t));
    AscendC::GlobalTensor<int32_t> srcGm, dstGm, keptGm;
    srcGm.SetGlobalBuffer((__gm__ int32_t*)src, N);
    dstGm.SetGlobalBuffer((__gm__ int32_t*)dst, N / 2);
    keptGm.SetGlobalBuffer((__gm__ int32_t*)kept, 8);

    AscendC::DataCopy(srcLocal, srcGm, N);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    uint64_t rsvdCnt = 0;
    const AscendC::GatherMaskParams params{1, 4, 8, 0};  // block stride 1, 4 repeats, 8 blocks apart
    AscendC::GatherMask(dstLocal, srcLocal, static_cast<uint8_t>(2), false, 0, params, rsvdCnt);
    AscendC::SetFlag<AscendC::HardEvent::V_S>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_S>(EVENT_ID0);
    for (uint32_t i = 0; i < 8; ++i) {
        keptLocal.SetValue(i, static_cast<int32_t>(rsvdCnt));
    }
    AscendC::SetFlag<AscendC::HardEvent::S_MTE3>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::S_MTE3>(EVENT_ID0);
    AscendC::DataCopy(dstGm, dstLocal, N / 2);
    AscendC::DataCopy(keptGm, keptLocal, 8);
}
