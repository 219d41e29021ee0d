// opsdk's model of CANN 8.1's SoftMaxTiling (lib/activation/softmax_tilingdata.h): the fields the
// SoftMax family's host tiling functions fill and its kernels read, in CANN's order. The host
// (optiling::SoftMaxTiling) and the kernel (::SoftMaxTiling) share this one layout. Part of opsdk.
#ifndef OPSDK_LIB_SOFTMAX_TILINGDATA_H
#define OPSDK_LIB_SOFTMAX_TILINGDATA_H

#include "register/tilingdata_base.h"

namespace optiling {
#define OPSDK_SOFTMAX_TILING_FIELDS                                                                     \
    TILING_DATA_FIELD_DEF(uint32_t, srcM);                                                              \
    TILING_DATA_FIELD_DEF(uint32_t, srcK);                                                              \
    TILING_DATA_FIELD_DEF(uint32_t, srcSize);                                                           \
    TILING_DATA_FIELD_DEF(uint32_t, outMaxM);                                                           \
    TILING_DATA_FIELD_DEF(uint32_t, outMaxK);                                                           \
    TILING_DATA_FIELD_DEF(uint32_t, outMaxSize);                                                        \
    TILING_DATA_FIELD_DEF(uint32_t, splitM);                                                            \
    TILING_DATA_FIELD_DEF(uint32_t, splitK);                                                            \
    TILING_DATA_FIELD_DEF(uint32_t, splitSize);                                                         \
    TILING_DATA_FIELD_DEF(uint32_t, reduceM);                                                           \
    TILING_DATA_FIELD_DEF(uint32_t, reduceK);                                                           \
    TILING_DATA_FIELD_DEF(uint32_t, reduceSize);                                                        \
    TILING_DATA_FIELD_DEF(uint32_t, rangeM);                                                            \
    TILING_DATA_FIELD_DEF(uint32_t, tailM);                                                             \
    TILING_DATA_FIELD_DEF(uint32_t, tailSplitSize);                                                     \
    TILING_DATA_FIELD_DEF(uint32_t, tailReduceSize);
BEGIN_TILING_DATA_DEF(SoftMaxTiling)
OPSDK_SOFTMAX_TILING_FIELDS
END_TILING_DATA_DEF;
// LogSoftMax's tiling has the same fields (lib/activation/logsoftmax_tilingdata.h)
BEGIN_TILING_DATA_DEF(LogSoftMaxTiling)
OPSDK_SOFTMAX_TILING_FIELDS
END_TILING_DATA_DEF;
#undef OPSDK_SOFTMAX_TILING_FIELDS
}  // namespace optiling

#endif  // OPSDK_LIB_SOFTMAX_TILINGDATA_H
