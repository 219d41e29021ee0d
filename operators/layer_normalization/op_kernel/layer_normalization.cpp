// AI Core kernel of LayerNormalization (Ascend C), hand-written for opsdk: normalisation over
// the last axis, with Scale and optional B of that axis's length.
//
// Each core takes a run of whole rows (the last core takes the tail). A row of any length is
// walked in tiles three times: the mean, the variance about it (two passes, no cancellation),
// then Y = (X - mean) * invStdDev * Scale + B. Statistics are float32 whatever X's dtype, as
// stash_type 1 asks; X, Scale and B are widened to float32 on load and Y rounded once on store.
// Mean and InvStdDev are written per row. Tiling: op_kernel/tiling.py.
//
// The Ascend C of __CCE_AICORE__ 200 (Ascend310P) has no DataCopyPad: there GM <-> UB copies
// move whole 32-byte blocks (opsdk_block_copy.h). A tile's last part block is read by the scalar
// unit and written as the block ending at the tile's end; Mean, InvStdDev and rows shorter
// than one block go out through staging buffers, each core taking at least one block's worth
// of rows (8 rows for the float32 statistics).
#include "kernel_operator.h"
#include "opsdk_block_copy.h"

using namespace AscendC;

namespace {
constexpr int32_t BUFFER_NUM = 2;

template <typename T> class KernelLayerNorm {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR scale, GM_ADDR b, GM_ADDR y, GM_ADDR mean, GM_ADDR inv,
                                uint64_t rowLength, uint64_t blockRows, uint64_t lastBlockRows, uint32_t tileLength,
                                float epsilon)
    {
        rowLength_ = rowLength;
        tile_ = tileLength;
        epsilon_ = epsilon;
        hasBias_ = b != nullptr;
        rows_ = GetBlockIdx() == GetBlockNum() - 1 ? lastBlockRows : blockRows;
        uint64_t firstRow = static_cast<uint64_t>(GetBlockIdx()) * blockRows;
#if OPSDK_BLOCK_COPY_ONLY
        constexpr uint64_t BLOCK = 32 / sizeof(T), STATS = 32 / sizeof(float);
        short_ = rowLength < BLOCK;  // rows shorter than one block
        const uint64_t minRows = short_ && (BLOCK + rowLength - 1) / rowLength > STATS ? (BLOCK + rowLength - 1) / rowLength : STATS;
        block_copy::Rows(blockRows, lastBlockRows, minRows, firstRow, rows_);
#endif
        xGm_.SetGlobalBuffer((__gm__ T*)x + firstRow * rowLength, rows_ * rowLength);
        yGm_.SetGlobalBuffer((__gm__ T*)y + firstRow * rowLength, rows_ * rowLength);
        scaleGm_.SetGlobalBuffer((__gm__ T*)scale, rowLength);
        if (hasBias_) {
            biasGm_.SetGlobalBuffer((__gm__ T*)b, rowLength);
        }
        meanGm_.SetGlobalBuffer((__gm__ float*)mean + firstRow, rows_);
        invGm_.SetGlobalBuffer((__gm__ float*)inv + firstRow, rows_);
        pipe_.InitBuffer(inQue_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(paramQue_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(outQue_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(statQue_, 1, 32);
        pipe_.InitBuffer(calcBuf_, 3 * tile_ * sizeof(float));
#if OPSDK_BLOCK_COPY_ONLY
        pipe_.InitBuffer(blockBuf_, block_copy::Writer<T>::BYTES);
        pipe_.InitBuffer(statBuf_, 2 * block_copy::Writer<float>::BYTES);
        writer_.Init(yGm_, blockBuf_.Get<T>());
        meanWriter_.Init(meanGm_, statBuf_.Get<float>());
        invWriter_.Init(invGm_, statBuf_.Get<float>()[block_copy::Writer<float>::BYTES / sizeof(float)]);
#endif
    }

    __aicore__ inline void Process()
    {
        for (uint64_t r = 0; r < rows_; ++r) {
            const uint64_t base = r * rowLength_;
            const float mean = RowMean(base);
            const float inv = RowInvStd(base, mean);
#if OPSDK_BLOCK_COPY_ONLY
            meanWriter_.Put(mean);
            invWriter_.Put(inv);
#else
            WriteStat(meanGm_, r, mean);
            WriteStat(invGm_, r, inv);
#endif
            Normalise(base, mean, inv);
        }
#if OPSDK_BLOCK_COPY_ONLY
        if (rows_ > 0) {
            meanWriter_.Finish();
            invWriter_.Finish();
            if (short_) {
                writer_.Finish();
            }
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

    // src[at .. at + n) as float32 in dst, through queue que.
    template <typename Q>
    __aicore__ inline void Load(Q& que, const GlobalTensor<T>& src, uint64_t at, uint32_t n, const LocalTensor<float>& dst)
    {
        LocalTensor<T> in = que.template AllocTensor<T>();
#if OPSDK_BLOCK_COPY_ONLY
        block_copy::Load(in, src[at], n);
#else
        if ((n * sizeof(T)) % 32 == 0) {
            DataCopy(in, src[at], n);
        } else {
            DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPadExtParams<T> pad;
            DataCopyPad(in, src[at], params, pad);
        }
#endif
        que.EnQue(in);
        in = que.template DeQue<T>();
        if constexpr (IsSameType<T, float>::value) {
            DataCopy(dst, in, (n + 7) / 8 * 8);
        } else {
            Cast(dst, in, RoundMode::CAST_NONE, n);
        }
        que.FreeTensor(in);
    }

    __aicore__ inline float ScalarOf(const LocalTensor<float>& t)
    {
        event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(e);
        WaitFlag<HardEvent::V_S>(e);
        return t.GetValue(0);
    }

    __aicore__ inline float RowMean(uint64_t base)
    {
        LocalTensor<float> xf = calcBuf_.Get<float>();
        LocalTensor<float> work = xf[tile_];
        LocalTensor<float> red = xf[2 * tile_];
        float sum = 0.0f;
        for (uint64_t off = 0; off < rowLength_;) {
            const uint32_t n = Chunk(off);
            Load(inQue_, xGm_, base + off, n, xf);
            ReduceSum(red, xf, work, static_cast<int32_t>(n));
            sum += ScalarOf(red);
            off += n;
        }
        return sum / static_cast<float>(rowLength_);
    }

    __aicore__ inline float RowInvStd(uint64_t base, float mean)
    {
        LocalTensor<float> xf = calcBuf_.Get<float>();
        LocalTensor<float> work = xf[tile_];
        LocalTensor<float> red = xf[2 * tile_];
        float sum = 0.0f;
        for (uint64_t off = 0; off < rowLength_;) {
            const uint32_t n = Chunk(off);
            Load(inQue_, xGm_, base + off, n, xf);
            Adds(xf, xf, -mean, static_cast<int32_t>(n));
            Mul(xf, xf, xf, static_cast<int32_t>(n));
            ReduceSum(red, xf, work, static_cast<int32_t>(n));
            sum += ScalarOf(red);
            off += n;
        }
        // 1 / sqrt(var + epsilon) on the vector unit (the scalar unit has no square root).
        Duplicate(red, sum / static_cast<float>(rowLength_) + epsilon_, 8);
        Sqrt(red, red, 8);
        Duplicate(work, 1.0f, 8);
        Div(red, work, red, 8);
        return ScalarOf(red);
    }

#if !OPSDK_BLOCK_COPY_ONLY
    __aicore__ inline void WriteStat(const GlobalTensor<float>& dst, uint64_t row, float value)
    {
        LocalTensor<float> s = statQue_.AllocTensor<float>();
        Duplicate(s, value, 8);
        statQue_.EnQue(s);
        s = statQue_.DeQue<float>();
        DataCopyExtParams params{1, static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
        DataCopyPad(dst[row], s, params);
        statQue_.FreeTensor(s);
    }
#endif

    __aicore__ inline void Normalise(uint64_t base, float mean, float inv)
    {
        LocalTensor<float> xf = calcBuf_.Get<float>();
        LocalTensor<float> pf = xf[tile_];
        for (uint64_t off = 0; off < rowLength_;) {
            const uint32_t n = Chunk(off);
            const int32_t count = static_cast<int32_t>(n);
            Load(inQue_, xGm_, base + off, n, xf);
            Adds(xf, xf, -mean, count);
            Muls(xf, xf, inv, count);
            Load(paramQue_, scaleGm_, off, n, pf);
            Mul(xf, xf, pf, count);
            if (hasBias_) {
                Load(paramQue_, biasGm_, off, n, pf);
                Add(xf, xf, pf, count);
            }
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
    TQue<QuePosition::VECIN, BUFFER_NUM> paramQue_;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQue_;
    TQue<QuePosition::VECOUT, 1> statQue_;
    TBuf<QuePosition::VECCALC> calcBuf_;
    GlobalTensor<T> xGm_, yGm_, scaleGm_, biasGm_;
    GlobalTensor<float> meanGm_, invGm_;
#if OPSDK_BLOCK_COPY_ONLY
    TBuf<QuePosition::VECCALC> blockBuf_, statBuf_;
    block_copy::Writer<T> writer_;
    block_copy::Writer<float> meanWriter_, invWriter_;
    bool short_ = false;
#endif
    uint64_t rowLength_ = 0;
    uint64_t rows_ = 0;
    uint32_t tile_ = 0;
    float epsilon_ = 0.0f;
    bool hasBias_ = false;
};
}  // namespace

extern "C" __global__ __aicore__ void layer_normalization(GM_ADDR X, GM_ADDR Scale, GM_ADDR B, GM_ADDR Y, GM_ADDR Mean,
                                                          GM_ADDR InvStdDev, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelLayerNorm<DTYPE_X> op;
    op.Init(X, Scale, B, Y, Mean, InvStdDev, tilingData.rowLength, tilingData.blockRows, tilingData.lastBlockRows,
            tilingData.tileLength, tilingData.epsilon);
    op.Process();
}
