// dst[i] = first + i (CreateVecIndex, count form) in float and in int32_t. Written for opsdk in
// the manner of asc-devkit's create_vec_index sample (03_basic_api/02_memory_vector_compute).
#include "kernel_operator.h"

struct IndexTiling {
    uint32_t count;  // elements of each output
    float first;
};

extern "C" __global__ __aicore__ void create_vec_index(GM_ADDR f, GM_ADDR i, IndexTiling t)
{
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> fQue, iQue;
    pipe.InitBuffer(fQue, 1, t.count * sizeof(float));
    pipe.InitBuffer(iQue, 1, t.count * sizeof(int32_t));
    AscendC::GlobalTensor<float> fGm;
    AscendC::GlobalTensor<int32_t> iGm;
    fGm.SetGlobalBuffer((__gm__ float*)f, t.count);
    iGm.SetGlobalBuffer((__gm__ int32_t*)i, t.count);

    AscendC::LocalTensor<float> fl = fQue.AllocTensor<float>();
    AscendC::LocalTensor<int32_t> il = iQue.AllocTensor<int32_t>();
    AscendC::CreateVecIndex(fl, t.first, t.count);
    AscendC::CreateVecIndex(il, static_cast<int32_t>(t.first), t.count);
    fQue.EnQue(fl);
    iQue.EnQue(il);
    fl = fQue.DeQue<float>();
    il = iQue.DeQue<int32_t>();
    AscendC::DataCopy(fGm, fl, t.count);
    AscendC::DataCopy(iGm, il, t.count);
    fQue.FreeTensor(fl);
    iQue.FreeTensor(il);
}
