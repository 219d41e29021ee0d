// Rows of a length that is not a whole number of 32-byte blocks: DataCopyPad GM -> UB pads each
// row to whole blocks (with a pad value), the vector adds 1 to every element, DataCopyPad UB ->
// GM writes the rows back unpadded. Written for opsdk in the manner of asc-devkit's data
// movement sample data_copy_pad_gm2ub_ub2gm (03_basic_api/00_data_movement).
#include "kernel_operator.h"

struct PadTiling {
    uint32_t rows;
    uint32_t cols;  // elements of a row in GM
};

extern "C" __global__ __aicore__ void data_copy_pad(GM_ADDR x, GM_ADDR y, PadTiling t)
{
    constexpr uint32_t PER_BLOCK = 32 / sizeof(float);
    const uint32_t stride = (t.cols + PER_BLOCK - 1) / PER_BLOCK * PER_BLOCK;  // a row in UB
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQue;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQue;
    pipe.InitBuffer(inQue, 1, t.rows * stride * sizeof(float));
    pipe.InitBuffer(outQue, 1, t.rows * stride * sizeof(float));
    AscendC::GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, t.rows * t.cols);
    yGm.SetGlobalBuffer((__gm__ float*)y, t.rows * t.cols);

    // rows blocks of cols * 4 bytes, back to back in GM; each padded to stride elements in UB
    const AscendC::DataCopyExtParams rows{static_cast<uint16_t>(t.rows), static_cast<uint32_t>(t.cols * sizeof(float)),
                                          0, 0, 0};
    AscendC::LocalTensor<float> in = inQue.AllocTensor<float>();
    const AscendC::DataCopyPadExtParams<float> pad{true, 0, static_cast<uint8_t>(stride - t.cols), -1.0f};
    AscendC::DataCopyPad(in, xGm, rows, pad);
    inQue.EnQue(in);
    in = inQue.DeQue<float>();

    AscendC::LocalTensor<float> out = outQue.AllocTensor<float>();
    AscendC::Adds(out, in, 1.0f, static_cast<int32_t>(t.rows * stride));
    outQue.EnQue(out);
    inQue.FreeTensor(in);
    out = outQue.DeQue<float>();
    AscendC::DataCopyPad(yGm, out, rows);
    outQue.FreeTensor(out);
}
