// opsdk's model of the host tiling functions of CANN 8.1's LayerNorm and RmsNorm
// (lib/normalization/{layernorm,rmsnorm}_tiling.h), for 220 (910B), the [B, S, H] forms: the tmp
// sizes (bytes of float scratch) and the tilings (rows per chunk from the tmp space). The
// kernel model checks a call's tmp space against the same layout (opsdk_model_hl_norm.h).
// Part of opsdk (not CANN).
#ifndef OPSDK_LIB_NORM_TILING_H
#define OPSDK_LIB_NORM_TILING_H

#include <algorithm>

#include "graph/tensor.h"
#include "lib/normalization/norm_tilingdata.h"

namespace AscendC {
namespace opsdk_host {
inline uint32_t Align32(uint32_t bytes) { return (bytes + 31) / 32 * 32; }
inline void Bsh(const ge::Shape& s, uint32_t& b, uint32_t& sl, uint32_t& h) {
    b = static_cast<uint32_t>(s.GetDim(0));
    sl = static_cast<uint32_t>(s.GetDim(1));
    h = static_cast<uint32_t>(s.GetDim(2));
}
}  // namespace opsdk_host

// LayerNorm [B, S, H] (or [B, S, H, originalH]): float scratch of three rows (two for float
// reusing the source) and the mean and variance of every row
inline void GetLayerNormMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      uint32_t& maxValue, uint32_t& minValue) {
    uint32_t b = 0, s = 0, h = 0;
    opsdk_host::Bsh(srcShape, b, s, h);
    const uint32_t bufs = (isReuseSource && typeSize == 4) ? 2 : 3;
    const uint32_t mv = opsdk_host::Align32(b * s * 4);
    maxValue = bufs * opsdk_host::Align32(b * s * h * 4) + 2 * mv;
    minValue = bufs * opsdk_host::Align32(h * 4) + 2 * mv;
}
inline void GetLayerNormNDTilingInfo(const ge::Shape& srcShape, const uint32_t stackBufferSize,
                                     const uint32_t typeSize, const bool isReuseSource,
                                     optiling::LayerNormTiling& tiling) {
    uint32_t b = 0, s = 0, h = 0;
    opsdk_host::Bsh(srcShape, b, s, h);
    const uint32_t oriH = srcShape.GetDimNum() > 3 ? static_cast<uint32_t>(srcShape.GetDim(3)) : h;
    const uint32_t x = b * s * h, mvSize = b * s;
    const uint32_t bufs = (isReuseSource && typeSize == 4) ? 2 : 3;
    const uint32_t mvTmp = (mvSize + 7) / 8 * 8;
    const uint32_t mvTotal = typeSize == 4 ? 0 : 2 * mvTmp;
    const uint32_t total = stackBufferSize / 4;
    uint32_t one = total > mvTotal && h ? (total - mvTotal) / bufs / h * h : 0;
    one = std::min(one, x);
    if (one == 0) return;  // too little tmp space: the tiling stays empty, as CANN's does
    tiling.set_bLength(b); tiling.set_sLength(s); tiling.set_hLength(h); tiling.set_originalHLength(oriH);
    tiling.set_inputXSize(x); tiling.set_meanVarSize(mvSize); tiling.set_numberOfTmpBuf(bufs);
    tiling.set_meanTmpTensorPos(0); tiling.set_meanTmpTensorSize(mvTmp);
    tiling.set_varianceTmpTensorPos(mvTmp); tiling.set_varianceTmpTensorSize(mvTmp);
    tiling.set_tmpBufSize(total); tiling.set_oneTmpSize(one);
    tiling.set_firstTmpStartPos(mvTotal); tiling.set_secondTmpStartPos(mvTotal + one);
    tiling.set_thirdTmpStartPos(mvTotal + 2 * one);
    tiling.set_loopRound(x / one); tiling.set_inputRoundSize(one); tiling.set_inputTailSize(x % one);
    tiling.set_inputTailPos(x - x % one);
    tiling.set_meanVarRoundSize(one / h); tiling.set_meanVarTailSize((x % one) / h);
    tiling.set_meanVarTailPos(mvSize - (x % one) / h);
    tiling.set_bshCurLength(one); tiling.set_bsCurLength(one / h);
    tiling.set_lastDimValueBack(1.0f / static_cast<float>(oriH));
}
// 8.1's spelling (deprecated there in favour of GetLayerNormNDTilingInfo)
inline void GetLayerNormNDTillingInfo(const ge::Shape& srcShape, const uint32_t stackBufferSize,
                                      const uint32_t typeSize, const bool isReuseSource,
                                      optiling::LayerNormTiling& tilling) {
    GetLayerNormNDTilingInfo(srcShape, stackBufferSize, typeSize, isReuseSource, tilling);
}

// RmsNorm [B, S, H]: a row of x^2 in float (and the row cast to float for half) per chunk row,
// plus one block of row sums
inline bool GetRmsNormMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                    uint32_t& minValue, const bool isBasicBlock = false) {
    uint32_t b = 0, s = 0, h = 0;
    opsdk_host::Bsh(srcShape, b, s, h);
    if (isBasicBlock && (h % 64 != 0 || (b * s) % 8 != 0 || h >= 2048)) return false;
    const uint32_t k = typeSize == 2 ? 2 : 1;
    const uint32_t bs = (b * s + 32 / typeSize - 1) / (32 / typeSize) * (32 / typeSize);
    maxValue = (b * s * h * k + bs) * 4;
    minValue = (h * k + 8) * 4;
    return true;
}
inline bool GetRmsNormTilingInfo(const ge::Shape& srcShape, const ge::Shape& originSrcShape,
                                 const uint32_t stackBufferByteSize, const uint32_t typeSize,
                                 optiling::RmsNormTiling& tiling, const bool isBasicBlock = false) {
    uint32_t b = 0, s = 0, h = 0, ob = 0, os = 0, oh = 0;
    opsdk_host::Bsh(srcShape, b, s, h);
    opsdk_host::Bsh(originSrcShape, ob, os, oh);
    uint32_t maxV = 0, minV = 0;
    if (srcShape.GetDimNum() != 3 || originSrcShape.GetDimNum() != 3 || b != ob || s != os || h < oh || oh == 0 ||
        (h * typeSize) % 32 != 0 || !GetRmsNormMaxMinTmpSize(srcShape, typeSize, maxV, minV, isBasicBlock) ||
        stackBufferByteSize < minV) {
        return false;
    }
    const uint32_t total = stackBufferByteSize / 4, k = typeSize == 4 ? 1 : 2, x = b * s * h;
    uint32_t bs = 1;
    while (total >= (bs + 1) * h * k + (bs + 1 + 7) / 8 * 8) ++bs;
    bs = std::min(bs * h, x) / h;
    if (isBasicBlock) bs = bs < 8 ? bs : bs / 8 * 8;
    else bs = std::min(bs, 255u);
    const uint32_t one = bs * h;
    tiling.set_bLength(b); tiling.set_sLength(s); tiling.set_hLength(h); tiling.set_originalHLength(oh);
    tiling.set_reciprocalOfHLength(1.0f / static_cast<float>(oh));
    tiling.set_mainBshLength(one); tiling.set_mainBsLength(bs); tiling.set_mainBsLengthAlign((bs + 7) / 8 * 8);
    tiling.set_loopRound(x / one); tiling.set_inputTailPos(x - x % one);
    tiling.set_tailBshLength(x % one); tiling.set_tailBsLength((x % one) / h);
    return true;
}
}  // namespace AscendC

#endif  // OPSDK_LIB_NORM_TILING_H
