// A vector kernel written as Huawei's kernel-launch samples write them: an extern "C"
// __global__ __aicore__ entry, a tiling struct passed by value, a workspace parameter, and the
// <<<>>> launcher guarded by ASCENDC_CPU_DEBUG (host main() cut). z = x * scale + y.
#include "kernel_operator.h"

struct AddTiling {
    uint32_t blockLength;  // elements per block
    uint32_t tileLength;   // elements per tile
    float scale;
};

constexpr int32_t BUFFER_NUM = 2;

class KernelAddTiled {
public:
    __aicore__ inline KernelAddTiled() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddTiling& t)
    {
        tiling = t;
        const uint32_t offset = t.blockLength * AscendC::GetBlockIdx();
        xGm.SetGlobalBuffer((__gm__ float*)x + offset, t.blockLength);
        yGm.SetGlobalBuffer((__gm__ float*)y + offset, t.blockLength);
        zGm.SetGlobalBuffer((__gm__ float*)z + offset, t.blockLength);
        xGm.SetL2CacheHint(AscendC::CacheMode::CACHE_MODE_LAST);
        pipe.InitBuffer(inX, BUFFER_NUM, t.tileLength * sizeof(float));
        pipe.InitBuffer(inY, BUFFER_NUM, t.tileLength * sizeof(float));
        pipe.InitBuffer(outZ, BUFFER_NUM, t.tileLength * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        const uint32_t tiles = AscendC::DivCeil(tiling.blockLength, tiling.tileLength);
        for (uint32_t i = 0; i < tiles; i++) {
            AscendC::LocalTensor<float> xl = inX.AllocTensor<float>();
            AscendC::LocalTensor<float> yl = inY.AllocTensor<float>();
            AscendC::DataCopy(xl, xGm[i * tiling.tileLength], tiling.tileLength);
            AscendC::DataCopy(yl, yGm[i * tiling.tileLength], tiling.tileLength);
            inX.EnQue(xl);
            inY.EnQue(yl);
            xl = inX.DeQue<float>();
            yl = inY.DeQue<float>();
            AscendC::LocalTensor<float> zl = outZ.AllocTensor<float>();
            AscendC::Muls(zl, xl, tiling.scale, tiling.tileLength);
            AscendC::Add(zl, zl, yl, tiling.tileLength);
            outZ.EnQue(zl);
            inX.FreeTensor(xl);
            inY.FreeTensor(yl);
            zl = outZ.DeQue<float>();
            AscendC::DataCopy(zGm[i * tiling.tileLength], zl, tiling.tileLength);
            outZ.FreeTensor(zl);
        }
    }

private:
    AddTiling tiling;
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inX, inY;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outZ;
    AscendC::GlobalTensor<float> xGm, yGm, zGm;
};

extern "C" __global__ __aicore__ void add_tiled(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace,
                                                AddTiling tiling)
{
    KernelAddTiled op;
    op.Init(x, y, z, tiling);
    op.Process();
}

#ifndef ASCENDC_CPU_DEBUG
void add_tiled_do(uint32_t blockDim, void* stream, uint8_t* x, uint8_t* y, uint8_t* z, uint8_t* workspace,
                  AddTiling tiling)
{
    add_tiled<<<blockDim, nullptr, stream>>>(x, y, z, workspace, tiling);
}
#endif
