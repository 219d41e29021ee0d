// AI Core kernel of Softmax (Ascend C), hand-written for opsdk: softmax along the last axis.
//
// Each core takes a run of whole rows (the last core takes the tail). A row of any length is
// walked in tiles three times: the maximum, the sum of exp(x - max), then exp(x - max) / sum.
// float16 and bfloat16 are widened to float32 on load and rounded once on store. A NaN or an
// Inf in a row makes the whole row NaN, as the formula does. Tiling: op_kernel/tiling.py.
//
// The Ascend C of __CCE_AICORE__ 200 (Ascend310P) has no DataCopyPad: there GM <-> UB copies
// move whole 32-byte blocks (opsdk_block_copy.h). A tile's last part block is read by the scalar
// unit and written as the block ending at the tile's end; rows shorter than one block go out
// through a staging buffer, each core taking at least one block's worth of rows.
#include "kernel_operator.h"
#include "opsdk_block_copy.h"

using namespace AscendC;

namespace {
constexpr int32_t BUFFER_NUM = 2;

template <typename T> class KernelSoftmax {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint64_t rowLength, uint64_t blockRows,
                                uint64_t lastBlockRows, uint32_t tileLength)
    {
        rowLength_ = rowLength;
        tile_ = tileLength;
        rows_ = GetBlockIdx() == GetBlockNum() - 1 ? lastBlockRows : blockRows;
        uint64_t first = static_cast<uint64_t>(GetBlockIdx()) * blockRows;
#if OPSDK_BLOCK_COPY_ONLY
        constexpr uint64_t BLOCK = 32 / sizeof(T);
        short_ = rowLength < BLOCK;  // rows shorter than one block: at least a block of rows per core
        if (short_) {
            block_copy::Rows(blockRows, lastBlockRows, (BLOCK + rowLength - 1) / rowLength, first, rows_);
        }
#endif
        const uint64_t start = first * rowLength;
        xGm_.SetGlobalBuffer((__gm__ T*)x + start, rows_ * rowLength);
        yGm_.SetGlobalBuffer((__gm__ T*)y + start, rows_ * rowLength);
        pipe_.InitBuffer(inQue_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(outQue_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(calcBuf_, 3 * tile_ * sizeof(float));
#if OPSDK_BLOCK_COPY_ONLY
        pipe_.InitBuffer(blockBuf_, block_copy::Writer<T>::BYTES);
        writer_.Init(yGm_, blockBuf_.Get<T>());
#endif
    }

    __aicore__ inline void Process()
    {
        for (uint64_t r = 0; r < rows_; ++r) {
            const uint64_t base = r * rowLength_;
            const float rowMax = RowMax(base);
            const float rowSum = RowSum(base, rowMax);
            Normalise(base, rowMax, rowSum);
        }
#if OPSDK_BLOCK_COPY_ONLY
        if (short_ && rows_ > 0) {
            writer_.Finish();
        }
#endif
    }

private:
    __aicore__ inline uint32_t Chunk(uint64_t off) const
    {
#if OPSDK_BLOCK_COPY_ONLY
        // no tile after the first shorter than one block (Store writes the block ending at a tile's end)
        const uint64_t rest = rowLength_ - off;
        if (rest > tile_ && rest - tile_ < 32 / sizeof(T) && tile_ > 64) {
            return tile_ - 64;
        }
#endif
        return rowLength_ - off < tile_ ? static_cast<uint32_t>(rowLength_ - off) : tile_;
    }

    // x[base + off .. + n) as float32 in xf.
    __aicore__ inline void Load(uint64_t at, uint32_t n, const LocalTensor<float>& xf)
    {
        LocalTensor<T> in = inQue_.AllocTensor<T>();
#if OPSDK_BLOCK_COPY_ONLY
        block_copy::Load(in, xGm_[at], n);
#else
        if ((n * sizeof(T)) % 32 == 0) {
            DataCopy(in, xGm_[at], n);
        } else {
            DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPadExtParams<T> pad;
            DataCopyPad(in, xGm_[at], params, pad);
        }
#endif
        inQue_.EnQue(in);
        in = inQue_.DeQue<T>();
        if constexpr (IsSameType<T, float>::value) {
            DataCopy(xf, in, (n + 7) / 8 * 8);
        } else {
            Cast(xf, in, RoundMode::CAST_NONE, n);
        }
        inQue_.FreeTensor(in);
    }

    __aicore__ inline float ScalarOf(const LocalTensor<float>& t)
    {
        event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(e);
        WaitFlag<HardEvent::V_S>(e);
        return t.GetValue(0);
    }

    __aicore__ inline float RowMax(uint64_t base)
    {
        LocalTensor<float> xf = calcBuf_.Get<float>();
        LocalTensor<float> work = xf[tile_];
        LocalTensor<float> red = xf[2 * tile_];
        float best = 0.0f;
        bool first = true;
        for (uint64_t off = 0; off < rowLength_;) {
            const uint32_t n = Chunk(off);
            Load(base + off, n, xf);
            ReduceMax(red, xf, work, static_cast<int32_t>(n));
            const float v = ScalarOf(red);
            if (v != v) {
                return v;  // NaN: the whole row is NaN
            }
            if (first || v > best) {
                best = v;
                first = false;
            }
            off += n;
        }
        return best;
    }

    __aicore__ inline float RowSum(uint64_t base, float rowMax)
    {
        LocalTensor<float> xf = calcBuf_.Get<float>();
        LocalTensor<float> work = xf[tile_];
        LocalTensor<float> red = xf[2 * tile_];
        float sum = 0.0f;
        for (uint64_t off = 0; off < rowLength_;) {
            const uint32_t n = Chunk(off);
            Load(base + off, n, xf);
            Adds(xf, xf, -rowMax, static_cast<int32_t>(n));
            Exp(xf, xf, static_cast<int32_t>(n));
            ReduceSum(red, xf, work, static_cast<int32_t>(n));
            sum += ScalarOf(red);
            off += n;
        }
        return sum;
    }

    __aicore__ inline void Normalise(uint64_t base, float rowMax, float rowSum)
    {
        LocalTensor<float> xf = calcBuf_.Get<float>();
        LocalTensor<float> den = xf[tile_];
        for (uint64_t off = 0; off < rowLength_;) {
            const uint32_t n = Chunk(off);
            Load(base + off, n, xf);
            Adds(xf, xf, -rowMax, static_cast<int32_t>(n));
            Exp(xf, xf, static_cast<int32_t>(n));
            Duplicate(den, rowSum, static_cast<int32_t>(n));
            Div(xf, xf, den, static_cast<int32_t>(n));
            Store(base + off, n, xf);
            off += n;
        }
    }

    __aicore__ inline void Store(uint64_t at, uint32_t n, const LocalTensor<float>& yf)
    {
        LocalTensor<T> out = outQue_.AllocTensor<T>();
        if constexpr (IsSameType<T, float>::value) {
            DataCopy(out, yf, (n + 7) / 8 * 8);
        } else {
            Cast(out, yf, RoundMode::CAST_RINT, n);
        }
        outQue_.EnQue(out);
        out = outQue_.DeQue<T>();
#if OPSDK_BLOCK_COPY_ONLY
        writer_.Store(yGm_[at], out, n, short_);
#else
        if ((n * sizeof(T)) % 32 == 0) {
            DataCopy(yGm_[at], out, n);
        } else {
            DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPad(yGm_[at], out, params);
        }
#endif
        outQue_.FreeTensor(out);
    }

    TPipe pipe_;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQue_;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQue_;
    TBuf<QuePosition::VECCALC> calcBuf_;
    GlobalTensor<T> xGm_;
    GlobalTensor<T> yGm_;
    uint64_t rowLength_ = 0;
    uint64_t rows_ = 0;
    uint32_t tile_ = 0;
#if OPSDK_BLOCK_COPY_ONLY
    TBuf<QuePosition::VECCALC> blockBuf_;
    block_copy::Writer<T> writer_;
    bool short_ = false;
#endif
};
}  // namespace

extern "C" __global__ __aicore__ void softmax(GM_ADDR input, GM_ADDR output, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelSoftmax<DTYPE_INPUT> op;
    op.Init(input, output, tilingData.rowLength, tilingData.blockRows, tilingData.lastBlockRows,
            tilingData.tileLength);
    op.Process();
}
