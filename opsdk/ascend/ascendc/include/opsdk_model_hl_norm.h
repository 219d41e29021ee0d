// opsdk's CPU model of the Ascend C API: LayerNorm and RmsNorm of CANN 8.1.RC1's high-level
// library (lib/normalization/{layernorm,rmsnorm}.h), as impl/normalization computes them on 220:
// half is cast to float, statistics and the normalisation are taken in float over the first
// originalHLength elements of each row of hLength, and the rows run in the tiling's chunks, each
// chunk's float scratch laid out in the tmp space as the implementation lays it out. A tmp space
// that cannot hold the tiling's chunk fails naming the size GetLayerNormMaxMinTmpSize /
// GetRmsNormMaxMinTmpSize gives. RmsNorm's 1/sqrt is exp(-0.5 ln(x)), as its implementation's
// "high precision" rsqrt. Part of opsdk (not CANN).
#ifndef OPSDK_ASCENDC_MODEL_HL_NORM_H
#define OPSDK_ASCENDC_MODEL_HL_NORM_H

#include "opsdk_model_hl_common.h"
#include "lib/normalization/norm_tilingdata.h"

using LayerNormTiling = optiling::LayerNormTiling;
using RmsNormTiling = optiling::RmsNormTiling;

namespace opsdk_ascendc {

inline void NormCheckTmp(const char* api, const HlTmp& tmp, uint64_t needFloats, uint32_t rows, uint64_t minBytes,
                         const char* minName, const Loc& loc) {
    if (tmp.bytes / 4 < needFloats) {
        HlFail(api, "has " + S(tmp.bytes) + " bytes of tmp space (" + tmp.where + "); the tiling's chunk of " +
                        S(rows) + " rows needs " + S(needFloats * 4) + " bytes; " + minName + " gives a minimum of " +
                        S(minBytes) + " bytes for this shape: pass a tmp buffer of at least that size and give its "
                        "size to the tiling function", loc);
    }
}

template <typename T>
inline void NormShape(const char* api, uint32_t rows, uint32_t h, uint32_t oriH, const AscendC::LocalTensor<T>& src,
                      const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& gamma, const Loc& loc) {
    if (h == 0 || oriH == 0 || oriH > h || (uint64_t(h) * sizeof(T)) % 32 != 0) {
        HlFail(api, "the tiling's hLength is " + S(h) + " and originalHLength " + S(oriH) + "; hLength must be "
                    "whole 32-byte blocks and originalHLength 1 to hLength (is the tiling filled by the host?)", loc);
    }
    const uint64_t n = uint64_t(rows) * h;
    if (src.GetSize() < n || dst.GetSize() < n || gamma.GetSize() < h) {
        HlFail(api, "the tiling's shape is " + S(rows) + " rows of " + S(h) + "; srcLocal has " + S(src.GetSize()) +
                        ", dstLocal " + S(dst.GetSize()) + ", gammaLocal " + S(gamma.GetSize()) + " elements", loc);
    }
}

// RmsNorm: dst = x / sqrt(mean(x^2) + eps) * gamma, per row.
template <typename T>
inline void RmsNormRun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       const AscendC::LocalTensor<T>& gamma, const HlTmp& tmp, T epsilon, const RmsNormTiling& tl,
                       const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "RmsNorm takes half or float");
    const char* api = "RmsNorm";
    const uint32_t h = tl.hLength, rows = tl.bLength * tl.sLength;
    NormShape<T>(api, rows, h, tl.originalHLength, src, dst, gamma, loc);
    if (tl.mainBsLength == 0) HlFail(api, "the tiling's mainBsLength is 0 (GetRmsNormTilingInfo returned false?)", loc);
    const uint64_t need = tl.mainBsLengthAlign + uint64_t(tl.mainBshLength) * (sizeof(T) == 2 ? 2 : 1);
    NormCheckTmp(api, tmp, need, tl.mainBsLength, (uint64_t(h) * (sizeof(T) == 2 ? 2 : 1) + 8) * 4,
                 "GetRmsNormMaxMinTmpSize", loc);
    const AscendC::LocalTensor<float> w = tmp.f;
    const float eps = ToF(epsilon);
    for (uint32_t r0 = 0; r0 < rows; r0 += tl.mainBsLength) {
        const uint32_t m = std::min(tl.mainBsLength, rows - r0);
        const uint64_t off = uint64_t(r0) * h, n = uint64_t(m) * h;
        std::vector<float> x, sq(n), rs(m);
        {
            HlStep s(api, sizeof(T) == 2 ? "Cast" : "Mul", loc);
            x = HlRead<T>(s, src, "srcLocal", off, n);
            if (sizeof(T) == 2) HlWrite<float>(s, w, "dst tmpBuffer", tl.mainBsLengthAlign + tl.mainBshLength, x);
        }
        {
            HlStep s(api, "Mul", loc);
            for (uint64_t i = 0; i < n; ++i) sq[i] = x[i] * x[i];
            HlWrite<float>(s, w, "dst tmpBuffer", tl.mainBsLengthAlign, sq);
        }
        {
            HlStep s(api, "ReduceSum", loc);
            for (uint32_t r = 0; r < m; ++r) {
                float v = 0.0f;
                for (uint32_t j = 0; j < tl.originalHLength; ++j) v += sq[r * h + j];
                rs[r] = v;
            }
            HlWrite<float>(s, w, "dst tmpBuffer", 0, rs);
        }
        {
            HlStep s(api, "Ln", loc);  // Muls by 1/H, Adds eps, Ln, Muls by -0.5, Exp: one row value each
            for (float& v : rs) v = HlExp(-0.5f * HlLn(v * tl.reciprocalOfHLength + eps));
            HlWrite<float>(s, w, "dst tmpBuffer", 0, rs);
        }
        HlStep s(api, "Mul", loc);
        const std::vector<float> g = HlRead<T>(s, gamma, "gammaLocal", 0, h);
        std::vector<float> y(n);
        for (uint64_t i = 0; i < n; ++i) {
            const float v = x[i] * rs[i / h];
            y[i] = v * g[i % h];
        }
        HlWrite<T>(s, dst, "dstLocal", off, y);
    }
}

// LayerNorm: mean, variance about it, dst = (x - mean) / sqrt(var + eps) * gamma + beta per row;
// mean and variance out in T, one per row.
template <typename T>
inline void LayerNormRun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& mean,
                         const AscendC::LocalTensor<T>& var, const AscendC::LocalTensor<T>& src,
                         const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<T>& beta, const HlTmp& tmp,
                         T epsilon, const LayerNormTiling& tl, const Loc& loc) {
    static_assert(OneOfT<T, half, float>, "LayerNorm takes half or float");
    const char* api = "LayerNorm";
    const uint32_t h = tl.hLength, rows = tl.bLength * tl.sLength;
    NormShape<T>(api, rows, h, tl.originalHLength, src, dst, gamma, loc);
    if (beta.GetSize() < h || mean.GetSize() < rows || var.GetSize() < rows) {
        HlFail(api, "betaLocal has " + S(beta.GetSize()) + " elements (needs " + S(h) + "), outputMean " +
                        S(mean.GetSize()) + " and outputVariance " + S(var.GetSize()) + " (need " + S(rows) + ")", loc);
    }
    if (tl.oneTmpSize == 0 || tl.oneTmpSize % h != 0) {
        HlFail(api, "the tiling's oneTmpSize is " + S(tl.oneTmpSize) + "; it must be a positive multiple of hLength " +
                        S(h) + " (GetLayerNormNDTillingInfo had too little tmp space?)", loc);
    }
    const uint64_t need = uint64_t(tl.firstTmpStartPos) + uint64_t(tl.numberOfTmpBuf) * tl.oneTmpSize;
    const uint64_t mv = HlAlign(rows * 4, 32), hb = HlAlign(h * 4, 32);
    NormCheckTmp(api, tmp, need, tl.oneTmpSize / h, (tl.numberOfTmpBuf == 2 ? 2 : 3) * hb + 2 * mv,
                 "GetLayerNormMaxMinTmpSize", loc);
    const AscendC::LocalTensor<float> w = tmp.f;
    const float eps = ToF(epsilon), inv = tl.lastDimValueBack;
    const uint32_t per = tl.oneTmpSize / h;
    for (uint32_t r0 = 0; r0 < rows; r0 += per) {
        const uint32_t m = std::min(per, rows - r0);
        const uint64_t off = uint64_t(r0) * h, n = uint64_t(m) * h;
        std::vector<float> x, mu(m), va(m), d(n);
        {
            HlStep s(api, sizeof(T) == 2 ? "Cast" : "Muls", loc);
            x = HlRead<T>(s, src, "inputX", off, n);
            HlWrite<float>(s, w, "dst tmpBuffer", tl.firstTmpStartPos, x);
        }
        {
            HlStep s(api, "ReduceSum", loc);  // mean: the sum of x / H (Muls by lastDimValueBack first)
            for (uint32_t r = 0; r < m; ++r) {
                float v = 0.0f;
                for (uint32_t j = 0; j < tl.originalHLength; ++j) v += x[r * h + j] * inv;
                mu[r] = v;
            }
            HlWrite<T>(s, mean, "dstMean", r0, mu);
        }
        {
            HlStep s(api, "Sub", loc);
            for (uint64_t i = 0; i < n; ++i) d[i] = x[i] - mu[i / h];
            HlWrite<float>(s, w, "dst tmpBuffer", tl.secondTmpStartPos, d);
        }
        {
            HlStep s(api, "ReduceSum", loc);  // variance: the sum of (x - mean)^2 / H
            for (uint32_t r = 0; r < m; ++r) {
                float v = 0.0f;
                for (uint32_t j = 0; j < tl.originalHLength; ++j) v += d[r * h + j] * d[r * h + j] * inv;
                va[r] = v;
            }
            HlWrite<T>(s, var, "dstVariance", r0, va);
        }
        HlStep s(api, "Mul", loc);  // (x - mean) * rsqrt(var + eps) * gamma + beta
        const std::vector<float> g = HlRead<T>(s, gamma, "gamma", 0, h), b = HlRead<T>(s, beta, "beta", 0, h);
        std::vector<float> y(n);
        for (uint64_t i = 0; i < n; ++i) {
            const float rstd = 1.0f / std::sqrt(va[i / h] + eps);
            y[i] = d[i] * rstd * g[i % h] + b[i % h];
        }
        HlWrite<T>(s, dst, "dstOutput", off, y);
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon, const RmsNormTiling& tiling,
                    opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::RmsNormRun<T>(dstLocal, srcLocal, gammaLocal, opsdk_ascendc::HlShared("RmsNorm", sharedTmpBuffer),
                                 epsilon, tiling, loc);
}
template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const T epsilon, const RmsNormTiling& tiling, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::RmsNormRun<T>(dstLocal, srcLocal, gammaLocal, opsdk_ascendc::HlStack(), epsilon, tiling, loc);
}

template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon,
                      LayerNormTiling& tiling, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::LayerNormRun<T>(output, outputMean, outputVariance, inputX, gamma, beta,
                                   opsdk_ascendc::HlShared("LayerNorm", sharedTmpBuffer), epsilon, tiling, loc);
}
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const T epsilon, LayerNormTiling& tiling,
                      opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::LayerNormRun<T>(output, outputMean, outputVariance, inputX, gamma, beta, opsdk_ascendc::HlStack(),
                                   epsilon, tiling, loc);
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_HL_NORM_H
