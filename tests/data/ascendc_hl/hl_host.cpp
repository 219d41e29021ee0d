// Host tiling functions of the high-level library test kernels (kernel-launch style: plain C++
// with CANN's host tiling API). Each block handles ROWS rows of COLS elements.
#include "tiling/tiling_api.h"
#include "hl_tiling.h"

#ifndef ROWS
#define ROWS 16
#endif
#ifndef COLS
#define COLS 64
#endif

template <uint32_t typeSize, bool minimum>
static void SoftmaxTilingOf(optiling::HlTiling* t) {
    const ge::Shape shape({ROWS, COLS});
    t->set_rowsPerBlock(ROWS);
    t->set_cols(COLS);
    const uint32_t bytes = minimum ? AscendC::GetSoftMaxMinTmpSize(shape, typeSize, false)
                                   : AscendC::GetSoftMaxMaxTmpSize(shape, typeSize, false);
    t->set_tmpBytes(bytes);
    AscendC::SoftMaxTilingFunc(shape, typeSize, bytes, t->softmaxTiling);
}
void SoftmaxFloatMax(optiling::HlTiling* t) { SoftmaxTilingOf<4, false>(t); }
void SoftmaxFloatMin(optiling::HlTiling* t) { SoftmaxTilingOf<4, true>(t); }
void SoftmaxHalfMax(optiling::HlTiling* t) { SoftmaxTilingOf<2, false>(t); }
void SoftmaxHalfMin(optiling::HlTiling* t) { SoftmaxTilingOf<2, true>(t); }
// a tiling made for the maximum, run with a tmp buffer one block short of it
void SoftmaxHalfShort(optiling::HlTiling* t) {
    SoftmaxTilingOf<2, false>(t);
    t->set_tmpBytes(t->get_tmpBytes() - 32);
}

template <uint32_t typeSize>
static void FlashTilingOf(optiling::HlTiling* t) {
    const ge::Shape shape({ROWS, COLS});
    t->set_rowsPerBlock(ROWS);
    t->set_cols(COLS);
    const uint32_t bytes = AscendC::GetSoftMaxFlashV2MinTmpSize(shape, typeSize, typeSize, true) * 3;
    t->set_tmpBytes(bytes);
    AscendC::SoftMaxFlashV2TilingFunc(shape, typeSize, typeSize, bytes, t->softmaxTiling, true);
}
void FlashFloat(optiling::HlTiling* t) { FlashTilingOf<4>(t); }
void FlashHalf(optiling::HlTiling* t) { FlashTilingOf<2>(t); }

void LogSoftmaxFloat(optiling::HlTiling* t) {
    const ge::Shape shape({ROWS, COLS});
    t->set_rowsPerBlock(ROWS);
    t->set_cols(COLS);
    t->set_tmpBytes(AscendC::GetLogSoftMaxMaxTmpSize(shape, 4, false));
    optiling::LogSoftMaxTiling log;
    AscendC::LogSoftMaxTilingFunc(shape, 4, t->get_tmpBytes(), log);
    static_assert(sizeof(log) == sizeof(t->softmaxTiling), "same fields");
    std::memcpy(static_cast<void*>(&t->softmaxTiling), &log, sizeof(log));
}

// [1, ROWS, COLS], epsilon 1e-5
static ge::Shape NormShape(optiling::HlTiling* t) {
    t->set_rowsPerBlock(ROWS);
    t->set_cols(COLS);
    t->set_epsilon(1e-5f);
    return ge::Shape({1, ROWS, COLS});
}

template <uint32_t typeSize, uint32_t chunks>
static void RmsNormTilingOf(optiling::HlTiling* t) {
    const ge::Shape shape = NormShape(t);
    uint32_t maxBytes = 0, minBytes = 0;
    AscendC::GetRmsNormMaxMinTmpSize(shape, typeSize, maxBytes, minBytes);
    // chunks == 0: the minimum, one row at a time
    const uint32_t bytes = chunks == 0 ? minBytes : maxBytes;
    t->set_tmpBytes(bytes);
    AscendC::GetRmsNormTilingInfo(shape, shape, bytes, typeSize, t->rmsnormTiling);
}
void RmsNormFloat(optiling::HlTiling* t) { RmsNormTilingOf<4, 1>(t); }
void RmsNormFloatMin(optiling::HlTiling* t) { RmsNormTilingOf<4, 0>(t); }
void RmsNormHalf(optiling::HlTiling* t) { RmsNormTilingOf<2, 1>(t); }
void RmsNormHalfShort(optiling::HlTiling* t) {
    RmsNormTilingOf<2, 1>(t);
    t->set_tmpBytes(64);
}

template <uint32_t typeSize, bool minimum>
static void LayerNormTilingOf(optiling::HlTiling* t) {
    const ge::Shape shape = NormShape(t);
    uint32_t maxBytes = 0, minBytes = 0;
    AscendC::GetLayerNormMaxMinTmpSize(shape, typeSize, false, maxBytes, minBytes);
    const uint32_t bytes = minimum ? minBytes : maxBytes;
    t->set_tmpBytes(bytes);
    AscendC::GetLayerNormNDTillingInfo(shape, bytes, typeSize, false, t->layernormTiling);
}
void LayerNormFloat(optiling::HlTiling* t) { LayerNormTilingOf<4, false>(t); }
void LayerNormFloatMin(optiling::HlTiling* t) { LayerNormTilingOf<4, true>(t); }
void LayerNormHalf(optiling::HlTiling* t) { LayerNormTilingOf<2, false>(t); }

// The tmp sizes the host API gives for ROWS x COLS ([1, ROWS, COLS] for the norms): softmax
// float min/max, half min/max, FlashV2 half min, LayerNorm float min/max, RmsNorm half min/max
struct TmpSizes {
    uint32_t v[9];
};
void TmpSizesOf(TmpSizes* s) {
    const ge::Shape rows({ROWS, COLS}), bsh({1, ROWS, COLS});
    s->v[0] = AscendC::GetSoftMaxMinTmpSize(rows, 4, false);
    s->v[1] = AscendC::GetSoftMaxMaxTmpSize(rows, 4, false);
    s->v[2] = AscendC::GetSoftMaxMinTmpSize(rows, 2, false);
    s->v[3] = AscendC::GetSoftMaxMaxTmpSize(rows, 2, false);
    s->v[4] = AscendC::GetSoftMaxFlashV2MinTmpSize(rows, 2, 2, true);
    AscendC::GetLayerNormMaxMinTmpSize(bsh, 4, false, s->v[6], s->v[5]);
    AscendC::GetRmsNormMaxMinTmpSize(bsh, 2, s->v[8], s->v[7]);
}

// Gelu and GeGLU: the maximum tmp size for ROWS x COLS (GeGLU of float needs none: 32 bytes)
template <uint32_t typeSize, bool geglu>
static void ActTilingOf(optiling::HlTiling* t) {
    const ge::Shape shape({ROWS, COLS});
    t->set_rowsPerBlock(ROWS);
    t->set_cols(COLS);
    uint32_t maxBytes = 0, minBytes = 0;
    if (geglu) AscendC::GetGeGLUMaxMinTmpSize(shape, typeSize, false, maxBytes, minBytes);
    else AscendC::GetGeluMaxMinTmpSize(shape, typeSize, maxBytes, minBytes);
    t->set_tmpBytes(maxBytes < 32 ? 32 : maxBytes);
}
void GeluFloat(optiling::HlTiling* t) { ActTilingOf<4, false>(t); }
void GeluHalf(optiling::HlTiling* t) { ActTilingOf<2, false>(t); }
void GeGLUFloat(optiling::HlTiling* t) { ActTilingOf<4, true>(t); }
void GeGLUHalf(optiling::HlTiling* t) { ActTilingOf<2, true>(t); }
// the minimum Gelu tmp size, and a tmp buffer of one block (too small for Gelu's two buffers)
void GeluHalfMin(optiling::HlTiling* t) {
    ActTilingOf<2, false>(t);
    t->set_tmpBytes(3 * 256);
}
void GeluFloatShort(optiling::HlTiling* t) {
    ActTilingOf<4, false>(t);
    t->set_tmpBytes(32);
}

// Sum and Mean (in float) of ROWS rows of COLS - 5 elements; CumSum of ROWS x COLS along the last or the first axis
template <uint32_t typeSize, int kind>
static void ReduceTilingOf(optiling::HlTiling* t) {
    t->set_rowsPerBlock(ROWS);
    t->set_cols(COLS);
    uint32_t maxBytes = 0, minBytes = 0;
    if (kind == 0) AscendC::GetSumMaxMinTmpSize(COLS - 5, typeSize, false, maxBytes, minBytes);
    else if (kind == 3) AscendC::GetMeanMaxMinTmpSize(COLS - 5, typeSize, 4, false, maxBytes, minBytes);
    else AscendC::GetCumSumMaxMinTmpSize(ge::Shape({ROWS, COLS}), typeSize, kind == 1, false, maxBytes, minBytes);
    t->set_tmpBytes(minBytes < 32 ? 32 : minBytes);
}
void SumFloat(optiling::HlTiling* t) { ReduceTilingOf<4, 0>(t); }
void SumHalf(optiling::HlTiling* t) { ReduceTilingOf<2, 0>(t); }
void CumSumLastHalf(optiling::HlTiling* t) { ReduceTilingOf<2, 1>(t); }
void MeanHalf(optiling::HlTiling* t) { ReduceTilingOf<2, 3>(t); }
void CumSumFirstFloat(optiling::HlTiling* t) { ReduceTilingOf<4, 2>(t); }
void CumSumLastHalfShort(optiling::HlTiling* t) {
    ReduceTilingOf<2, 1>(t);
    t->set_tmpBytes(t->get_tmpBytes() - 32);
}

// TopK, k = 5, of ROWS rows of COLS; the platform object is what a TilingFunc has (unused here)
struct HostPlatform {};
template <uint32_t typeSize, bool largest, bool shortTmp>
static void TopKTilingOf(optiling::HlTopKTiling* t) {
    t->set_rowsPerBlock(ROWS);
    t->set_cols(COLS);
    t->set_k(5);
    uint32_t maxBytes = 0, minBytes = 0;
    const HostPlatform platform;
    AscendC::GetTopKMaxMinTmpSize(platform, COLS, ROWS, false, false, AscendC::TopKMode::TOPK_NORMAL, largest, typeSize,
                                  maxBytes, minBytes);
    t->set_tmpBytes(shortTmp ? minBytes - 32 : minBytes);
    AscendC::TopKTilingFunc(platform, COLS, ROWS, 5, typeSize, false, AscendC::TopKMode::TOPK_NORMAL, largest, t->topk);
}
void TopKFloat(optiling::HlTopKTiling* t) { TopKTilingOf<4, true, false>(t); }
void BottomKHalf(optiling::HlTopKTiling* t) { TopKTilingOf<2, false, false>(t); }
void TopKFloatShort(optiling::HlTopKTiling* t) { TopKTilingOf<4, true, true>(t); }
