// y = x > 0 ? x : alpha * x (LeakyRelu) in half over blockDim blocks; the total need not be a
// whole number of blocks: each block's last tile goes out by DataCopyPad. Written for opsdk in
// the manner of asc-devkit's leaky_relu_custom kernel (02_features/00_framework_launch).
#include "kernel_operator.h"

struct LeakyTiling {
    uint32_t totalLength;
    uint32_t blockLength;  // elements per block (the last block: the rest)
    uint32_t tileLength;   // a multiple of 16 (32 bytes of half)
    float alpha;
};

namespace {
class LeakyReluKernel {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const LeakyTiling& t)
    {
        t_ = t;
        const uint32_t start = t.blockLength * AscendC::GetBlockIdx();
        length_ = start + t.blockLength <= t.totalLength ? t.blockLength : t.totalLength - start;
        xGm_.SetGlobalBuffer((__gm__ half*)x + start, length_);
        yGm_.SetGlobalBuffer((__gm__ half*)y + start, length_);
        pipe_.InitBuffer(inQue_, 2, t.tileLength * sizeof(half));
        pipe_.InitBuffer(outQue_, 2, t.tileLength * sizeof(half));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t off = 0; off < length_; off += t_.tileLength) {
            const uint32_t n = length_ - off < t_.tileLength ? length_ - off : t_.tileLength;
            AscendC::LocalTensor<half> in = inQue_.AllocTensor<half>();
            const AscendC::DataCopyExtParams one{1, static_cast<uint32_t>(n * sizeof(half)), 0, 0, 0};
            AscendC::DataCopyPad(in, xGm_[off], one, AscendC::DataCopyPadExtParams<half>{false, 0, 0, 0});
            inQue_.EnQue(in);
            in = inQue_.DeQue<half>();
            AscendC::LocalTensor<half> out = outQue_.AllocTensor<half>();
            AscendC::LeakyRelu(out, in, static_cast<half>(t_.alpha), static_cast<int32_t>((n + 15) / 16 * 16));
            outQue_.EnQue(out);
            inQue_.FreeTensor(in);
            out = outQue_.DeQue<half>();
            AscendC::DataCopyPad(yGm_[off], out, one);
            outQue_.FreeTensor(out);
        }
    }

private:
    LeakyTiling t_{};
    uint32_t length_ = 0;
    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> inQue_;
    AscendC::TQue<AscendC::TPosition::VECOUT, 2> outQue_;
    AscendC::GlobalTensor<half> xGm_, yGm_;
};
}  // namespace

extern "C" __global__ __aicore__ void leaky_relu(GM_ADDR x, GM_ADDR y, LeakyTiling tiling)
{
    LeakyReluKernel op;
    op.Init(x, y, tiling);
    op.Process();
}
