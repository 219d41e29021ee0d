// A vector-only kernel (KERNEL_TYPE_AIV_ONLY, two blocks) that hands data between blocks through
// the GM workspace: block b stages its tile of x in the workspace, signals it with IBSet and
// reads the other block's tile after IBWait, so y holds x's two tiles swapped.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t TILE = 256;
constexpr uint32_t SYNC_INTS = 2 * 8;  // IBSet's slots: blockNum * 8 int32_t for event 0

extern "C" __global__ __aicore__ void swap_ib(GM_ADDR x, GM_ADDR y, GM_ADDR workspace)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    const int32_t me = GetBlockIdx();
    const int32_t other = 1 - me;
    GM_ADDR user = GetUserWorkspace(workspace);
    GlobalTensor<int32_t> syncGm;
    GlobalTensor<float> xGm, yGm, stageGm;
    syncGm.SetGlobalBuffer((__gm__ int32_t*)user, SYNC_INTS);
    stageGm.SetGlobalBuffer((__gm__ float*)(user + SYNC_INTS * sizeof(int32_t)), 2 * TILE);
    xGm.SetGlobalBuffer((__gm__ float*)x + me * TILE, TILE);
    yGm.SetGlobalBuffer((__gm__ float*)y + me * TILE, TILE);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * TILE * sizeof(float) + SYNC_INTS * sizeof(int32_t));
    LocalTensor<float> tile = buf.Get<float>();
    LocalTensor<float> back = tile[TILE];
    LocalTensor<int32_t> syncUb = buf.Get<int32_t>()[2 * TILE];
    DataCopy(tile, xGm, TILE);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(stageGm[me * TILE], tile, TILE);
    IBSet(syncGm, syncUb, me, 0);
    IBWait(syncGm, syncUb, other, 0);
    DataCopy(back, stageGm[other * TILE], TILE);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID1);
    DataCopy(yGm, back, TILE);
}
