// AI Core kernel of GridSample (Ascend C), hand-written for opsdk: 2-D grid sampling, bilinear
// (linear) and nearest, zeros and border padding, align_corners 0 and 1, float16 and float32.
// Cubic, reflection and 5-D calls run on AI CPU (op_kernel/tiling.py: applicable).
//
// The output pixels of each batch image are cut into tiles of tileLength pixels and, when there
// are fewer tiles than cores, the channels into channelGroups groups of groupChannels; the cores
// take runs of blockUnits (tile, channel group) units (the last core the rest). Per unit:
//   1. the tile's grid (x, y pairs) is copied in, split into x and y by two Gathers with fixed
//      byte offsets (2i and 2i + 1 elements) and, for float16, widened to float32: the
//      coordinates are computed in float32, as PyTorch does;
//   2. per axis: unnormalise ((g + 1) * d / 2 - 0.5, or (g + 1) * (d - 1) / 2), NaN to the fill
//      value (border: 0, zeros: outside) by Compare/Select, clamp (border: [0, d-1]; zeros:
//      [-2, d+1], which keeps every tap's inside/outside), then the taps: nearest rounds half to
//      even (Cast CAST_RINT), linear takes floor and floor + 1 (Cast CAST_FLOOR) with weights
//      1 - t and t; a tap outside [0, d-1] gets weight 0 (1 - min(|i - clamp(i)|, 1)) and the
//      clamped index;
//   3. per corner: the byte offset (iy * W + ix) * sizeof(T) and the weight wy * wx; with zeros
//      padding a non-finite linear coordinate makes every weight NaN (x - x), so the pixel is
//      NaN, as PyTorch's grid_sample gives it;
//   4. per channel: the image plane x[n, c] (H * W elements) is copied into the Unified Buffer
//      (double-buffered), each corner's values are gathered from it (Gather, byte offsets),
//      weighted and summed in float32, rounded once to T and copied out.
// Tiling: op_kernel/tiling.py. The plane must fit the Unified Buffer (H * W <= 16384).
#include "kernel_operator.h"

using namespace AscendC;

namespace {
constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t LANES = 64;  // the tile's vector work is rounded up to whole 256-byte repeats

// Float slots of the calculation buffer, each tileLength elements.
enum Slot : uint32_t {
    OFF_X = 0, OFF_Y, GX, GY,                      // split offsets; the coordinates
    TAP_OFF = 4,                                   // 4 corner offsets (int32)
    TAP_W = 8,                                     // 4 corner weights
    AX = 12,                                       // per axis (x: 12..17, y: 18..23): 2 clamped indices,
    AXIS = 6,                                      // 2 inside flags (1 or 0), 2 weights
    POISON = 24,                                   // 0, or NaN where a coordinate is not finite
    T0, T1, I32, MASK, SLOTS                       // temporaries
};

template <typename T, typename G> class KernelGridSample {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR grid, GM_ADDR y, uint64_t channels, uint64_t inH, uint64_t inW,
                                uint64_t outPixels, uint64_t tilesPerBatch, uint64_t groupChannels,
                                uint64_t channelGroups, uint64_t blockUnits, uint64_t totalUnits, uint32_t tileLength,
                                bool nearest, bool border, bool align)
    {
        channels_ = channels;
        inH_ = inH;
        inW_ = inW;
        plane_ = inH * inW;
        pixels_ = outPixels;
        tilesPerBatch_ = tilesPerBatch;
        tile_ = tileLength;
        nearest_ = nearest;
        border_ = border;
        align_ = align;
        groupChannels_ = groupChannels;
        channelGroups_ = channelGroups;
        first_ = static_cast<uint64_t>(GetBlockIdx()) * blockUnits;
        const uint64_t end = first_ + blockUnits < totalUnits ? first_ + blockUnits : totalUnits;
        units_ = end > first_ ? end - first_ : 0;
        xGm_.SetGlobalBuffer((__gm__ T*)x);
        gridGm_.SetGlobalBuffer((__gm__ G*)grid);
        yGm_.SetGlobalBuffer((__gm__ T*)y);
        pipe_.InitBuffer(gridQue_, BUFFER_NUM, 2 * tile_ * sizeof(G));
        zeroAt_ = (plane_ * sizeof(T) + 31) / 32 * 32 / sizeof(T);  // the plane's whole blocks, then a zero block
        pipe_.InitBuffer(planeQue_, BUFFER_NUM, zeroAt_ * sizeof(T) + 32);
        pipe_.InitBuffer(outQue_, BUFFER_NUM, tile_ * sizeof(T));
        pipe_.InitBuffer(calcBuf_, SLOTS * tile_ * sizeof(float));
        calc_ = calcBuf_.Get<float>();
    }

    __aicore__ inline void Process()
    {
        if (units_ == 0) {
            return;
        }
        SplitOffsets();
        for (uint64_t i = 0; i < units_; ++i) {
            const uint64_t t = (first_ + i) / channelGroups_;
            const uint64_t c0 = (first_ + i) % channelGroups_ * groupChannels_;
            const uint64_t c1 = c0 + groupChannels_ < channels_ ? c0 + groupChannels_ : channels_;
            const uint64_t n = t / tilesPerBatch_;
            const uint64_t p0 = (t % tilesPerBatch_) * tile_;
            const uint32_t count = static_cast<uint32_t>(pixels_ - p0 < tile_ ? pixels_ - p0 : tile_);
            const uint32_t lanes = (count + LANES - 1) / LANES * LANES;
            LoadGrid(n * pixels_ + p0, count, lanes);
            Axis(S(GX), static_cast<float>(inW_), lanes, AX);
            Axis(S(GY), static_cast<float>(inH_), lanes, AX + AXIS);
            Corners(lanes);
            for (uint64_t c = c0; c < c1; ++c) {
                Channel((n * channels_ + c), p0, count, lanes);
            }
        }
    }

private:
    __aicore__ inline LocalTensor<float> S(uint32_t slot) const { return calc_[slot * tile_]; }
    __aicore__ inline LocalTensor<int32_t> SI(uint32_t slot) const
    {
        return calc_[slot * tile_].template ReinterpretCast<int32_t>();
    }

    // The byte offsets splitting a tile's (x, y) pairs: element 2i and 2i + 1 of the grid tile.
    __aicore__ inline void SplitOffsets()
    {
        LocalTensor<float> idx = S(T0);
        for (uint32_t i = 0; i < 8; ++i) {
            idx.SetValue(i, static_cast<float>(i));
        }
        event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
        SetFlag<HardEvent::S_V>(e);
        WaitFlag<HardEvent::S_V>(e);
        for (uint32_t have = 8; have < tile_; have *= 2) {
            const uint32_t more = tile_ - have < have ? tile_ - have : have;
            Adds(idx[have], idx, static_cast<float>(have), static_cast<int32_t>(more));
        }
        Muls(S(T1), idx, static_cast<float>(2 * sizeof(G)), static_cast<int32_t>(tile_));
        Cast(SI(OFF_X), S(T1), RoundMode::CAST_RINT, tile_);
        Adds(S(T1), S(T1), static_cast<float>(sizeof(G)), static_cast<int32_t>(tile_));
        Cast(SI(OFF_Y), S(T1), RoundMode::CAST_RINT, tile_);
    }

    // The tile's grid pairs into GX and GY as float32.
    __aicore__ inline void LoadGrid(uint64_t at, uint32_t count, uint32_t lanes)
    {
        LocalTensor<G> in = gridQue_.AllocTensor<G>();
        CopyIn(in, gridGm_[2 * at], 2 * count);
        gridQue_.EnQue(in);
        in = gridQue_.DeQue<G>();
        const LocalTensor<uint32_t> offX = SI(OFF_X).template ReinterpretCast<uint32_t>();
        const LocalTensor<uint32_t> offY = SI(OFF_Y).template ReinterpretCast<uint32_t>();
        if constexpr (IsSameType<G, float>::value) {
            Gather(S(GX), in, offX, 0, lanes);
            Gather(S(GY), in, offY, 0, lanes);
        } else {
            LocalTensor<G> narrow = S(T0).template ReinterpretCast<G>();
            Gather(narrow, in, offX, 0, lanes);
            Cast(S(GX), narrow, RoundMode::CAST_NONE, lanes);
            Gather(narrow, in, offY, 0, lanes);
            Cast(S(GY), narrow, RoundMode::CAST_NONE, lanes);
        }
        gridQue_.FreeTensor(in);
    }

    // One axis of size d: coordinates u (in place) -> per tap j (nearest: j = 0 only) the clamped
    // index in slot out + j, 1 inside [0, d-1] else 0 in out + 2 + j, the weight in out + 4 + j.
    __aicore__ inline void Axis(const LocalTensor<float>& u, float d, uint32_t n, uint32_t out)
    {
        const int32_t k = static_cast<int32_t>(n);
        // unnormalise, in float32 as PyTorch: align ? (g + 1) * ((d - 1) / 2) : (g + 1) * (d / 2) - 0.5
        Adds(u, u, 1.0f, k);
        Muls(u, u, align_ ? (d - 1.0f) / 2.0f : d / 2.0f, k);
        if (!align_) {
            Adds(u, u, -0.5f, k);
        }
        if (!border_ && !nearest_) {  // 0, or NaN for a non-finite coordinate: poisons the weights
            Sub(S(out == AX ? POISON : T1), u, u, k);
            if (out != AX) {
                Add(S(POISON), S(POISON), S(T1), k);
            }
        }
        // NaN -> fill; then clamp
        const float fill = border_ ? 0.0f : -2.0f;
        LocalTensor<uint8_t> mask = calc_[MASK * tile_].template ReinterpretCast<uint8_t>();
        Compare(mask, u, u, CMPMODE::EQ, n);
        Select(u, mask, u, fill, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
        Maxs(u, u, border_ ? 0.0f : -2.0f, k);
        Mins(u, u, border_ ? d - 1.0f : d + 1.0f, k);
        LocalTensor<float> floor0 = S(T0);
        Cast(SI(I32), u, nearest_ ? RoundMode::CAST_RINT : RoundMode::CAST_FLOOR, n);
        Cast(floor0, SI(I32), RoundMode::CAST_NONE, n);
        Tap(floor0, d, n, S(out), S(out + 2));
        if (nearest_) {
            DataCopy(S(out + 4), S(out + 2), n);
            return;
        }
        LocalTensor<float> t = S(T1);
        Sub(t, u, floor0, k);
        // weight of floor: (1 - t) * valid; of floor + 1: t * valid
        LocalTensor<float> rest = u;  // u is no longer needed: 1 - t
        Muls(rest, t, -1.0f, k);
        Adds(rest, rest, 1.0f, k);
        Mul(S(out + 4), S(out + 2), rest, k);
        Adds(floor0, floor0, 1.0f, k);
        Tap(floor0, d, n, S(out + 1), S(out + 3));
        Mul(S(out + 5), S(out + 3), t, k);
    }

    // index i (integer-valued) -> the clamped index and 1 inside [0, d-1], else 0
    __aicore__ inline void Tap(const LocalTensor<float>& i, float d, uint32_t n, const LocalTensor<float>& clamped,
                               const LocalTensor<float>& valid)
    {
        const int32_t k = static_cast<int32_t>(n);
        Maxs(clamped, i, 0.0f, k);
        Mins(clamped, clamped, d - 1.0f, k);
        Sub(valid, i, clamped, k);
        Abs(valid, valid, k);
        Mins(valid, valid, 1.0f, k);
        Muls(valid, valid, -1.0f, k);
        Adds(valid, valid, 1.0f, k);
    }

    // Per corner (y tap a, x tap b): the byte offset (iy * W + ix) * sizeof(T), or that of the
    // zero after the plane when the corner is outside; the weight wy * wx. An outside corner
    // reads 0 whatever the image holds (a NaN at the clamped pixel times weight 0 would be NaN).
    __aicore__ inline void Corners(uint32_t n)
    {
        const int32_t k = static_cast<int32_t>(n);
        const uint32_t taps = nearest_ ? 1 : 2;
        const bool poison = !border_ && !nearest_;
        const uint32_t ax = AX, ay = AX + AXIS;
        const float zero = static_cast<float>(zeroAt_);
        for (uint32_t a = 0; a < taps; ++a) {
            for (uint32_t b = 0; b < taps; ++b) {
                const uint32_t corner = a * 2 + b;
                LocalTensor<float> off = S(T0);
                LocalTensor<float> inside = S(T1);
                Mul(inside, S(ay + 2 + a), S(ax + 2 + b), k);
                Muls(off, S(ay + a), static_cast<float>(inW_), k);
                Add(off, off, S(ax + b), k);
                Adds(off, off, -zero, k);  // (off - zeroAt) * inside + zeroAt
                Mul(off, off, inside, k);
                Adds(off, off, zero, k);
                Muls(off, off, static_cast<float>(sizeof(T)), k);
                Cast(SI(TAP_OFF + corner), off, RoundMode::CAST_RINT, n);
                Mul(S(TAP_W + corner), S(ay + 4 + a), S(ax + 4 + b), k);
                if (poison) {
                    Add(S(TAP_W + corner), S(TAP_W + corner), S(POISON), k);
                }
            }
        }
    }

    __aicore__ inline void Channel(uint64_t planeIndex, uint64_t p0, uint32_t count, uint32_t lanes)
    {
        const int32_t k = static_cast<int32_t>(lanes);
        LocalTensor<T> plane = planeQue_.AllocTensor<T>();
        Duplicate(plane[zeroAt_], static_cast<T>(0), static_cast<int32_t>(32 / sizeof(T)));  // what outside corners read
        CopyIn(plane, xGm_[planeIndex * plane_], static_cast<uint32_t>(plane_));
        planeQue_.EnQue(plane);
        plane = planeQue_.DeQue<T>();
        LocalTensor<T> out = outQue_.AllocTensor<T>();
        LocalTensor<float> acc = S(AX);
        LocalTensor<float> value = S(AX + 1);
        const uint32_t corners = nearest_ ? 1 : 4;
        for (uint32_t corner = 0; corner < corners; ++corner) {
            const LocalTensor<uint32_t> off = SI(TAP_OFF + corner).template ReinterpretCast<uint32_t>();
            if constexpr (IsSameType<T, float>::value) {
                Gather(value, plane, off, 0, lanes);
            } else {
                LocalTensor<T> narrow = S(AX + 2).template ReinterpretCast<T>();
                Gather(narrow, plane, off, 0, lanes);
                Cast(value, narrow, RoundMode::CAST_NONE, lanes);
            }
            if (corner == 0) {
                Mul(acc, value, S(TAP_W), k);
            } else {
                Mul(value, value, S(TAP_W + corner), k);
                Add(acc, acc, value, k);
            }
        }
        planeQue_.FreeTensor(plane);
        if constexpr (IsSameType<T, float>::value) {
            DataCopy(out, acc, lanes);
        } else {
            Cast(out, acc, RoundMode::CAST_RINT, lanes);
        }
        outQue_.EnQue(out);
        out = outQue_.DeQue<T>();
        CopyOut(yGm_[planeIndex * pixels_ + p0], out, count);
        outQue_.FreeTensor(out);
    }

    template <typename U> __aicore__ inline void CopyIn(const LocalTensor<U>& dst, const GlobalTensor<U>& src, uint32_t n)
    {
        if ((n * sizeof(U)) % 32 == 0) {
            DataCopy(dst, src, n);
        } else {
            DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(U)), 0, 0, 0};
            DataCopyPadExtParams<U> pad;
            DataCopyPad(dst, src, params, pad);
        }
    }

    __aicore__ inline void CopyOut(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t n)
    {
        if ((n * sizeof(T)) % 32 == 0) {
            DataCopy(dst, src, n);
        } else {
            DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
            DataCopyPad(dst, src, params);
        }
    }

    TPipe pipe_;
    TQue<QuePosition::VECIN, BUFFER_NUM> gridQue_;
    TQue<QuePosition::VECIN, BUFFER_NUM> planeQue_;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQue_;
    TBuf<QuePosition::VECCALC> calcBuf_;
    LocalTensor<float> calc_;
    GlobalTensor<T> xGm_, yGm_;
    GlobalTensor<G> gridGm_;
    uint64_t channels_ = 0, inH_ = 0, inW_ = 0, plane_ = 0, pixels_ = 0, tilesPerBatch_ = 0;
    uint64_t groupChannels_ = 0, channelGroups_ = 0, first_ = 0, units_ = 0, zeroAt_ = 0;
    uint32_t tile_ = 0;
    bool nearest_ = false, border_ = false, align_ = false;
};
}  // namespace

extern "C" __global__ __aicore__ void grid_sample(GM_ADDR x, GM_ADDR grid, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tilingData, tiling);
    KernelGridSample<DTYPE_X, DTYPE_GRID> op;
    op.Init(x, grid, y, tilingData.channels, tilingData.inH, tilingData.inW, tilingData.outPixels,
            tilingData.tilesPerBatch, tilingData.groupChannels, tilingData.channelGroups, tilingData.blockUnits,
            tilingData.totalUnits, tilingData.tileLength,
            tilingData.mode[0] == 'n', tilingData.padding_mode[0] == 'b', tilingData.align_corners != 0);
    op.Process();
}
