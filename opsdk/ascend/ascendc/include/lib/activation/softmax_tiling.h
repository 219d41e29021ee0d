// opsdk's model of the host tiling functions of CANN 8.1's SoftMax family
// (lib/activation/{softmax,logsoftmax}_tiling.h), for 220 (910B), ND format: the tmp sizes
// (bytes of float scratch: per row 32 bytes of max/sum, the row in float for half, 64 floats of
// reduction scratch) and the tiling (rows per chunk, splitM, from the tmp space). The same
// formulas as the kernel model checks against (opsdk_model_hl_softmax.h). Part of opsdk.
#ifndef OPSDK_LIB_SOFTMAX_TILING_H
#define OPSDK_LIB_SOFTMAX_TILING_H

#include <algorithm>
#include <cstring>

#include "graph/tensor.h"
#include "lib/activation/softmax_tilingdata.h"

namespace AscendC {
namespace opsdk_host {
inline void LastAxis(const ge::Shape& s, uint32_t& m, uint32_t& k) {
    const std::vector<int64_t> d = s.GetDims();
    k = d.empty() ? 0 : static_cast<uint32_t>(d.back());
    m = k == 0 ? 0 : static_cast<uint32_t>(s.GetShapeSize() / k);
}
// float elements of scratch per row: for half the row in float too; SoftmaxFlashV2 keeps two
// 32-byte blocks per row for half
inline uint32_t RowFloats(uint32_t typeSize, uint32_t perBlk, uint32_t k, bool flash) {
    if (typeSize == 2) return (flash ? 2 * perBlk : perBlk) + k + 64;
    return perBlk + 64;
}
inline void Fill(optiling::SoftMaxTiling& t, uint32_t m, uint32_t k, uint32_t perBlk, uint32_t rows) {
    t.set_srcM(m); t.set_srcK(k); t.set_srcSize(m * k);
    t.set_outMaxM(m); t.set_outMaxK(perBlk); t.set_outMaxSize(m * perBlk);
    t.set_splitM(rows); t.set_splitK(k); t.set_splitSize(rows * k);
    t.set_reduceM(rows); t.set_reduceK(perBlk); t.set_reduceSize(rows * perBlk);
    t.set_rangeM(rows ? m / rows : 0);
    t.set_tailM(rows ? m % rows : 0);
    t.set_tailSplitSize((rows ? m % rows : 0) * k);
    t.set_tailReduceSize((rows ? m % rows : 0) * perBlk);
}
inline uint32_t ChunkRows(uint32_t floats, uint32_t row, uint32_t m) {
    uint32_t rows = std::min(floats / row, m);
    if (rows < m && rows > 8) rows = rows / 8 * 8;
    return rows;
}
}  // namespace opsdk_host

inline uint32_t GetSoftMaxMaxTmpSize(const ge::Shape& srcShape, const uint32_t dataTypeSize, const bool) {
    uint32_t m = 0, k = 0;
    opsdk_host::LastAxis(srcShape, m, k);
    return m * (32 / dataTypeSize + k + 64) * 4;
}
inline uint32_t GetSoftMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t dataTypeSize, const bool) {
    uint32_t m = 0, k = 0;
    opsdk_host::LastAxis(srcShape, m, k);
    return m == 0 ? 0 : (32 / dataTypeSize + k + 64) * 4;
}
inline void SoftMaxTilingFunc(const ge::Shape& srcShape, const uint32_t dataTypeSize,
                              const uint32_t localWorkSpaceSize, optiling::SoftMaxTiling& softmaxTiling) {
    uint32_t m = 0, k = 0;
    opsdk_host::LastAxis(srcShape, m, k);
    const uint32_t perBlk = 32 / dataTypeSize;
    const uint32_t rows = opsdk_host::ChunkRows(localWorkSpaceSize / 4, perBlk + k + 64, m);
    opsdk_host::Fill(softmaxTiling, m, k, perBlk, rows);
}

inline uint32_t GetSoftMaxFlashV2MaxTmpSize(const ge::Shape& srcShape, const uint32_t dataTypeSize1,
                                            const uint32_t dataTypeSize2, const bool, const bool = false,
                                            const bool = false) {
    uint32_t m = 0, k = 0;
    opsdk_host::LastAxis(srcShape, m, k);
    return m * opsdk_host::RowFloats(dataTypeSize1, 32 / dataTypeSize2, k, true) * 4;
}
inline uint32_t GetSoftMaxFlashV2MinTmpSize(const ge::Shape& srcShape, const uint32_t dataTypeSize1,
                                            const uint32_t dataTypeSize2, const bool, const bool = false,
                                            const bool = false) {
    uint32_t m = 0, k = 0;
    opsdk_host::LastAxis(srcShape, m, k);
    return m == 0 ? 0 : opsdk_host::RowFloats(dataTypeSize1, 32 / dataTypeSize2, k, true) * 4;
}
inline void SoftMaxFlashV2TilingFunc(const ge::Shape& srcShape, const uint32_t dataTypeSize1,
                                     const uint32_t dataTypeSize2, const uint32_t localWorkSpaceSize,
                                     optiling::SoftMaxTiling& softmaxFlashTiling, const bool,
                                     const bool = false, const bool = false) {
    uint32_t m = 0, k = 0;
    opsdk_host::LastAxis(srcShape, m, k);
    const uint32_t perBlk = 32 / dataTypeSize2;
    const uint32_t rows = opsdk_host::ChunkRows(localWorkSpaceSize / 4,
                                                opsdk_host::RowFloats(dataTypeSize1, perBlk, k, true), m);
    opsdk_host::Fill(softmaxFlashTiling, m, k, perBlk, rows);
}

// LogSoftMax: SoftMax's sizes and tiling (its kernel splits the rows as SoftMax's does)
inline uint32_t GetLogSoftMaxMaxTmpSize(const ge::Shape srcShape, const uint32_t dataTypeSize, const bool reuse) {
    return GetSoftMaxMaxTmpSize(srcShape, dataTypeSize, reuse);
}
inline uint32_t GetLogSoftMaxMinTmpSize(const ge::Shape srcShape, const uint32_t dataTypeSize, const bool reuse) {
    return GetSoftMaxMinTmpSize(srcShape, dataTypeSize, reuse);
}
inline void LogSoftMaxTilingFunc(const ge::Shape srcShape, const uint32_t dataTypeSize,
                                 const uint32_t localWorkSpaceSize, optiling::LogSoftMaxTiling& softmaxTiling) {
    optiling::SoftMaxTiling t;
    SoftMaxTilingFunc(srcShape, dataTypeSize, localWorkSpaceSize, t);
    std::memcpy(static_cast<void*>(&softmaxTiling), &t, sizeof(t));
}
}  // namespace AscendC

#endif  // OPSDK_LIB_SOFTMAX_TILING_H
