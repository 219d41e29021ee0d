// z = x + y in half over blockDim blocks, each block's run in double-buffered tiles through
// TPipe/TQue (CopyIn, Compute, CopyOut). Written for opsdk in the manner of asc-devkit's
// introduction sample of TPipe and TQue (00_introduction/01_add/add_tpipe_tque).
#include "kernel_operator.h"

struct AddTiling {
    uint32_t blockLength;  // elements per block
    uint32_t tileNum;      // tiles per block, each split in two buffers
};

namespace {
constexpr int32_t BUFFERS = 2;

class AddQueued {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddTiling& t)
    {
        tileLength_ = t.blockLength / t.tileNum / BUFFERS;
        loops_ = t.tileNum * BUFFERS;
        const uint32_t start = t.blockLength * AscendC::GetBlockIdx();
        xGm_.SetGlobalBuffer((__gm__ half*)x + start, t.blockLength);
        yGm_.SetGlobalBuffer((__gm__ half*)y + start, t.blockLength);
        zGm_.SetGlobalBuffer((__gm__ half*)z + start, t.blockLength);
        pipe_.InitBuffer(xQue_, BUFFERS, tileLength_ * sizeof(half));
        pipe_.InitBuffer(yQue_, BUFFERS, tileLength_ * sizeof(half));
        pipe_.InitBuffer(zQue_, BUFFERS, tileLength_ * sizeof(half));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t i = 0; i < loops_; ++i) {
            CopyIn(i);
            Compute();
            CopyOut(i);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t i)
    {
        AscendC::LocalTensor<half> xl = xQue_.AllocTensor<half>();
        AscendC::LocalTensor<half> yl = yQue_.AllocTensor<half>();
        AscendC::DataCopy(xl, xGm_[i * tileLength_], tileLength_);
        AscendC::DataCopy(yl, yGm_[i * tileLength_], tileLength_);
        xQue_.EnQue(xl);
        yQue_.EnQue(yl);
    }
    __aicore__ inline void Compute()
    {
        AscendC::LocalTensor<half> xl = xQue_.DeQue<half>();
        AscendC::LocalTensor<half> yl = yQue_.DeQue<half>();
        AscendC::LocalTensor<half> zl = zQue_.AllocTensor<half>();
        AscendC::Add(zl, xl, yl, tileLength_);
        zQue_.EnQue<half>(zl);
        xQue_.FreeTensor(xl);
        yQue_.FreeTensor(yl);
    }
    __aicore__ inline void CopyOut(uint32_t i)
    {
        AscendC::LocalTensor<half> zl = zQue_.DeQue<half>();
        AscendC::DataCopy(zGm_[i * tileLength_], zl, tileLength_);
        zQue_.FreeTensor(zl);
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFERS> xQue_, yQue_;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFERS> zQue_;
    AscendC::GlobalTensor<half> xGm_, yGm_, zGm_;
    uint32_t tileLength_ = 0, loops_ = 0;
};
}  // namespace

extern "C" __global__ __aicore__ void add_tque(GM_ADDR x, GM_ADDR y, GM_ADDR z, AddTiling tiling)
{
    AddQueued op;
    op.Init(x, y, z, tiling);
    op.Process();
}
