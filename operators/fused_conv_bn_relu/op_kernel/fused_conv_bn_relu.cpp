// AI Core kernel of FusedConvBnRelu (Ascend C), hand-written for opsdk: a Cube kernel.
//
// y = relu(conv2d(x, w) + b) as img2col + matrix multiply on the Cube. Operands come in the
// layouts the Cube reads (op_kernel/tiling.py): x as (N * group, C1, H, W, C0), the weights of
// each group as one matrix (rows: output channels, columns: (c1, kh, kw, c0) as img2col unfolds
// the feature map, then C0 columns holding the bias in the first); y goes out as (N, OH * OW, M).
//
// A tile is rowsT x colsT output positions of one image and group times baseN output channels;
// each block takes a run of tileNum tiles, ordered so that the run shares its weights, which
// stay in L1 (wRes) when they fit in half of it. Per tile the accumulator in L0C starts as the bias: a
// column of ones (LoadData 3Dv2 of a window wholly in the padding, padding value 1) times the
// bias row. Then for each C1 block of input channels the feature-map window goes GM -> A1 and,
// in K steps of kTaps filter taps, img2col (LoadData 3Dv2) unfolds it into A2 while the weights
// go GM -> B1 (Nd2Nz: their NZ fractals are the nZ ones L0B takes) -> B2 (LoadData 2D); Mmad
// accumulates in float32. Fixpipe applies ReLU, converts to T and writes the tile row-major.
// Every hand-off is a TQue (EnQue/DeQue: MTE2 -> MTE1 -> M -> FIX); bufs = 2 double-buffers them.
#include "kernel_operator.h"

using namespace AscendC;

namespace {
// Mmads with fewer fractals need PipeBarrier<PIPE_M> before the next one accumulates onto them
// (Huawei's matmul: mmad_compute.h, LIMIT_MNSIZE).
constexpr uint32_t SMALL_MMAD_FRACTALS = 10;

struct ConvShape {
    uint64_t imgs, c1, hIn, wIn, mg, mTotal, kh, kw, oh, ow, sh, sw, dh, dw, pt, pl, group;
    uint64_t taps, kTaps, baseN, nTiles, rowsT, colsT, rowTiles, colTiles, mExt, wCols, tiles;
    uint64_t bufs, a1Bytes, b1Bytes, a2Bytes, b2Bytes, cBytes, wRes, tileNum;
};

// The img2col window of a tile along one axis: the input rows (or columns) it reads from the
// feature map [first, first + count) and the padding before and after them.
struct Span {
    int64_t first, count;
    uint8_t before, after;
};

__aicore__ inline Span WindowOf(uint64_t out0, uint64_t outs, uint64_t stride, uint64_t filter, uint64_t dilation,
                                uint64_t pad, uint64_t size)
{
    const int64_t lo = static_cast<int64_t>(out0 * stride) - static_cast<int64_t>(pad);
    const int64_t hi = lo + static_cast<int64_t>((outs - 1) * stride + (filter - 1) * dilation + 1);
    const int64_t a = lo > 0 ? lo : 0;
    const int64_t b = hi < static_cast<int64_t>(size) ? hi : static_cast<int64_t>(size);
    return {a, b - a, static_cast<uint8_t>(a - lo), static_cast<uint8_t>(hi - b)};
}

template <typename T> class KernelConv {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w, GM_ADDR y, const ConvShape& s)
    {
        s_ = s;
        xGm_.SetGlobalBuffer((__gm__ T*)x, s.imgs * s.c1 * s.hIn * s.wIn * C0);
        wGm_.SetGlobalBuffer((__gm__ T*)w, s.group * s.nTiles * s.baseN * s.wCols);
        yGm_.SetGlobalBuffer((__gm__ T*)y, s.imgs / s.group * s.oh * s.ow * s.mTotal);
        const uint8_t bufs = static_cast<uint8_t>(s.bufs);
        pipe_.InitBuffer(a1Que_, bufs, static_cast<uint32_t>(s.a1Bytes));
        pipe_.InitBuffer(b1Que_, s.wRes ? 1 : bufs, static_cast<uint32_t>(s.b1Bytes));
        pipe_.InitBuffer(a2Que_, bufs, static_cast<uint32_t>(s.a2Bytes));
        pipe_.InitBuffer(b2Que_, bufs, static_cast<uint32_t>(s.b2Bytes));
        pipe_.InitBuffer(cQue_, bufs, static_cast<uint32_t>(s.cBytes));
        pipe_.InitBuffer(onesBuf_, 512);
        small_ = (s.mExt / 16) * (s.baseN / 16) < SMALL_MMAD_FRACTALS;
    }

    __aicore__ inline void Process()
    {
        if (s_.tiles == 0) {
            return;  // an empty batch: nothing to compute (the one block reads nothing)
        }
        // the ones tile's feature map: any 32 bytes, LoadData reads only its padding
        ones_ = onesBuf_.Get<T>();
        DataCopy(ones_, xGm_, C0);
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
        const uint64_t first = GetBlockIdx() * s_.tileNum;
        const uint64_t end = first + s_.tileNum < s_.tiles ? first + s_.tileNum : s_.tiles;
        for (uint64_t t = first; t < end; ++t) {
            Tile(t);
        }
        if (panelRow_ != NONE) {
            b1Que_.FreeTensor(panel_);
        }
    }

private:
    static constexpr uint64_t C0 = 32 / sizeof(T);
    static constexpr uint64_t NONE = ~0ULL;

    __aicore__ inline void Tile(uint64_t t)
    {
        // tile t: (group, channel tile) slowest, so that a block's tiles share their weights
        const uint64_t images = s_.imgs / s_.group;
        const uint64_t ow0 = (t % s_.colTiles) * s_.colsT;
        uint64_t r = t / s_.colTiles;
        const uint64_t oh0 = (r % s_.rowTiles) * s_.rowsT;
        r /= s_.rowTiles;
        const uint64_t img = (r % images) * s_.group + r / images / s_.nTiles;
        const uint64_t nt = (r / images) % s_.nTiles;
        const uint64_t wRow = (r / images) * s_.baseN;  // first weight row: (group, nt)
        if (s_.wRes && wRow != panelRow_) {
            LoadPanel(wRow);
        }
        LocalTensor<float> acc = cQue_.AllocTensor<float>();
        Bias(acc, wRow);
        const Span rows = WindowOf(oh0, (s_.mExt + s_.colsT - 1) / s_.colsT, s_.sh, s_.kh, s_.dh, s_.pt, s_.hIn);
        const Span cols = WindowOf(ow0, s_.colsT, s_.sw, s_.kw, s_.dw, s_.pl, s_.wIn);
        for (uint64_t c1 = 0; c1 < s_.c1; ++c1) {
            LoadWindow(img * s_.c1 + c1, rows, cols);
            LocalTensor<T> a1 = a1Que_.DeQue<T>();
            for (uint64_t k0 = 0; k0 < s_.taps; k0 += s_.kTaps) {
                const uint64_t taps = s_.taps - k0 < s_.kTaps ? s_.taps - k0 : s_.kTaps;
                Img2col(a1, rows, cols, k0 * C0, taps * C0);
                LoadWeights(wRow, (c1 * s_.taps + k0) * C0, taps * C0);
                Multiply(acc, taps * C0, false);
            }
            a1Que_.FreeTensor(a1);
        }
        cQue_.EnQue(acc);
        acc = cQue_.DeQue<float>();
        const uint64_t rowsValid = s_.oh - oh0 < s_.rowsT ? s_.oh - oh0 : s_.rowsT;
        const uint64_t colsValid = s_.ow - ow0 < s_.colsT ? s_.ow - ow0 : s_.colsT;
        const uint64_t n0 = nt * s_.baseN;
        FixpipeParamsV220 fix;
        fix.nSize = static_cast<uint16_t>(s_.mg - n0 < s_.baseN ? s_.mg - n0 : s_.baseN);
        fix.mSize = static_cast<uint16_t>(rowsValid * colsValid);
        fix.srcStride = static_cast<uint16_t>(s_.mExt);
        fix.dstStride = static_cast<uint32_t>(s_.mTotal);
        fix.reluEn = true;
        if constexpr (IsSameType<T, half>::value) {
            fix.quantPre = QuantMode_t::F322F16;
        } else if constexpr (IsSameType<T, bfloat16_t>::value) {
            fix.quantPre = QuantMode_t::F322BF16;
        }
        const uint64_t pos = (img / s_.group) * s_.oh * s_.ow + oh0 * s_.ow + ow0;
        Fixpipe(yGm_[pos * s_.mTotal + (img % s_.group) * s_.mg + n0], acc, fix);
        cQue_.FreeTensor(acc);
    }

    // The accumulator starts as the bias: ones (m x C0, the padding value of a window wholly in
    // the padding of a 1 x 1 map) times the weights' bias columns.
    __aicore__ inline void Bias(LocalTensor<float>& acc, uint64_t wRow)
    {
        LocalTensor<T> a2 = a2Que_.AllocTensor<T>();
        LoadData3DParamsV2<T> p;
        p.padList[1] = 15;   // right: 16 output columns
        p.padList[3] = 255;  // bottom: 256 output rows; row 0 holds the map's one position
        p.l1H = 1;
        p.l1W = 1;
        p.channelSize = static_cast<uint16_t>(C0);
        p.kExtension = static_cast<uint16_t>(C0);
        p.mExtension = static_cast<uint16_t>(s_.mExt);
        p.mStartPt = 16;
        p.padValue = static_cast<T>(1.0f);
        LoadData(a2, ones_, p);
        a2Que_.EnQue(a2);
        LoadWeights(wRow, s_.c1 * s_.taps * C0, C0);
        Multiply(acc, C0, true);
    }

    // x5[plane] rows x cols -> A1 ([rows][cols][C0], 32 bytes per position).
    __aicore__ inline void LoadWindow(uint64_t plane, const Span& rows, const Span& cols)
    {
        LocalTensor<T> a1 = a1Que_.AllocTensor<T>();
        DataCopyParams p;
        p.blockCount = static_cast<uint16_t>(rows.count);
        p.blockLen = static_cast<uint16_t>(cols.count);
        p.srcStride = static_cast<uint16_t>(s_.wIn - cols.count);
        const uint64_t at = ((plane * s_.hIn + rows.first) * s_.wIn + cols.first) * C0;
        DataCopy(a1, xGm_[at], p);
        a1Que_.EnQue(a1);
    }

    __aicore__ inline void Img2col(const LocalTensor<T>& a1, const Span& rows, const Span& cols, uint64_t kStart,
                                   uint64_t kExt)
    {
        LocalTensor<T> a2 = a2Que_.AllocTensor<T>();
        LoadData3DParamsV2<T> p;
        p.padList[0] = cols.before;
        p.padList[1] = cols.after;
        p.padList[2] = rows.before;
        p.padList[3] = rows.after;
        p.l1H = static_cast<uint16_t>(rows.count);
        p.l1W = static_cast<uint16_t>(cols.count);
        p.channelSize = static_cast<uint16_t>(C0);
        p.kStartPt = static_cast<uint16_t>(kStart);
        p.kExtension = static_cast<uint16_t>(kExt);
        p.mExtension = static_cast<uint16_t>(s_.mExt);
        p.strideH = static_cast<uint8_t>(s_.sh);
        p.strideW = static_cast<uint8_t>(s_.sw);
        p.filterH = static_cast<uint8_t>(s_.kh);
        p.filterW = static_cast<uint8_t>(s_.kw);
        p.dilationFilterH = static_cast<uint8_t>(s_.dh);
        p.dilationFilterW = static_cast<uint8_t>(s_.dw);
        LoadData(a2, a1, p);
        a2Que_.EnQue(a2);
    }

    // The weights of rows [wRow, wRow + baseN), all columns, into B1 for the tiles that use them.
    __aicore__ inline void LoadPanel(uint64_t wRow)
    {
        if (panelRow_ != NONE) {
            b1Que_.FreeTensor(panel_);
        }
        panel_ = b1Que_.AllocTensor<T>();
        Nd2NzParams nd;
        nd.ndNum = 1;
        nd.nValue = static_cast<uint16_t>(s_.baseN);
        nd.dValue = static_cast<uint16_t>(s_.wCols);
        nd.srcDValue = static_cast<uint16_t>(s_.wCols);
        nd.dstNzC0Stride = static_cast<uint16_t>(s_.baseN);
        nd.dstNzNStride = 1;
        DataCopy(panel_, wGm_[wRow * s_.wCols], nd);
        b1Que_.EnQue(panel_);
        panel_ = b1Que_.DeQue<T>();
        panelRow_ = wRow;
    }

    // Weight rows [wRow, wRow + baseN), columns [k, k + kExt) into B2: from the panel in B1, or
    // GM -> B1 (Nd2Nz) -> B2.
    __aicore__ inline void LoadWeights(uint64_t wRow, uint64_t k, uint64_t kExt)
    {
        LoadData2DParams load;
        load.repeatTimes = static_cast<uint8_t>((kExt / C0) * (s_.baseN / 16));
        load.srcStride = 1;
        if (s_.wRes) {
            LocalTensor<T> b2 = b2Que_.AllocTensor<T>();
            load.startIndex = static_cast<uint16_t>((k / C0) * (s_.baseN / 16));
            LoadData(b2, panel_, load);
            b2Que_.EnQue(b2);
            return;
        }
        LocalTensor<T> b1 = b1Que_.AllocTensor<T>();
        Nd2NzParams nd;
        nd.ndNum = 1;
        nd.nValue = static_cast<uint16_t>(s_.baseN);
        nd.dValue = static_cast<uint16_t>(kExt);
        nd.srcDValue = static_cast<uint16_t>(s_.wCols);
        nd.dstNzC0Stride = static_cast<uint16_t>(s_.baseN);
        nd.dstNzNStride = 1;
        DataCopy(b1, wGm_[wRow * s_.wCols + k], nd);
        b1Que_.EnQue(b1);
        b1 = b1Que_.DeQue<T>();
        LocalTensor<T> b2 = b2Que_.AllocTensor<T>();
        LoadData(b2, b1, load);
        b2Que_.EnQue(b2);
        b1Que_.FreeTensor(b1);
    }

    __aicore__ inline void Multiply(LocalTensor<float>& acc, uint64_t k, bool first)
    {
        LocalTensor<T> a2 = a2Que_.DeQue<T>();
        LocalTensor<T> b2 = b2Que_.DeQue<T>();
        MmadParams mm;
        mm.m = static_cast<uint16_t>(s_.mExt);
        mm.n = static_cast<uint16_t>(s_.baseN);
        mm.k = static_cast<uint16_t>(k);
        mm.cmatrixInitVal = first;
        Mmad(acc, a2, b2, mm);
        if (small_) {
            PipeBarrier<PIPE_M>();
        }
        a2Que_.FreeTensor(a2);
        b2Que_.FreeTensor(b2);
    }

    TPipe pipe_;
    TQue<TPosition::A1, 1> a1Que_;
    TQue<TPosition::B1, 1> b1Que_;
    TQue<TPosition::A2, 1> a2Que_;
    TQue<TPosition::B2, 1> b2Que_;
    TQue<TPosition::CO1, 1> cQue_;
    TBuf<TPosition::A1> onesBuf_;
    LocalTensor<T> ones_;
    LocalTensor<T> panel_;
    uint64_t panelRow_ = NONE;
    GlobalTensor<T> xGm_;
    GlobalTensor<T> wGm_;
    GlobalTensor<T> yGm_;
    ConvShape s_;
    bool small_ = false;
};
}  // namespace

extern "C" __global__ __aicore__ void fused_conv_bn_relu(GM_ADDR x, GM_ADDR w, GM_ADDR b, GM_ADDR y,
                                                         GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    const ConvShape s = {t.imgs, t.c1, t.hIn, t.wIn, t.mg, t.mTotal, t.kh, t.kw, t.oh, t.ow, t.sh, t.sw,
                         t.dh, t.dw, t.pt, t.pl, static_cast<uint64_t>(t.group), t.taps, t.kTaps, t.baseN,
                         t.nTiles, t.rowsT, t.colsT, t.rowTiles, t.colTiles, t.mExt, t.wCols, t.tiles, t.bufs,
                         t.a1Bytes, t.b1Bytes, t.a2Bytes, t.b2Bytes, t.cBytes, t.wRes, t.tileNum};
    KernelConv<DTYPE_X> op;
    op.Init(x, w, y, s);
    op.Process();
}
