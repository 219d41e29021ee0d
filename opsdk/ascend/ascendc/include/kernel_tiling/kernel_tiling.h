// kernel_tiling/kernel_tiling.h of opsdk's CPU model of the Ascend C API: the high-level APIs'
// tiling structs as the kernel reads them. TCubeTiling is the Matmul API's (docs/ascendc_model.md,
// "The Matmul API"): 50 int32 fields in the order and with the names of CANN 8.1.RC1's
// TCubeTiling, so a tiling the host wrote with the toolkit is read field for field. The host
// side's optiling::TCubeTiling (lib/matmul_tiling.h) is made from the same list.
#ifndef OPSDK_ASCENDC_KERNEL_TILING_H
#define OPSDK_ASCENDC_KERNEL_TILING_H

#include <cstdint>
#include <cstring>

// X(name) for each field of TCubeTiling, in order.
#define OPSDK_TCUBE_TILING_FIELDS(X)                                                                          \
    X(usedCoreNum) X(M) X(N) X(Ka) X(Kb) X(singleCoreM) X(singleCoreN) X(singleCoreK) X(baseM) X(baseN)      \
    X(baseK) X(depthA1) X(depthB1) X(stepM) X(stepN) X(isBias) X(transLength) X(iterateOrder) X(shareMode)   \
    X(shareL1Size) X(shareL0CSize) X(shareUbSize) X(batchM) X(batchN) X(singleBatchM) X(singleBatchN)        \
    X(stepKa) X(stepKb) X(depthAL1CacheUB) X(depthBL1CacheUB) X(dbL0A) X(dbL0B) X(dbL0C) X(ALayoutInfoB)     \
    X(ALayoutInfoS) X(ALayoutInfoN) X(ALayoutInfoG) X(ALayoutInfoD) X(BLayoutInfoB) X(BLayoutInfoS)          \
    X(BLayoutInfoN) X(BLayoutInfoG) X(BLayoutInfoD) X(CLayoutInfoB) X(CLayoutInfoS1) X(CLayoutInfoN)         \
    X(CLayoutInfoG) X(CLayoutInfoS2) X(BatchNum) X(reserved)

#define OPSDK_TCUBE_FIELD(name) int32_t name = 0;

#pragma pack(push, 8)
struct TCubeTiling {
    OPSDK_TCUBE_TILING_FIELDS(OPSDK_TCUBE_FIELD)
};
#pragma pack(pop)
static_assert(sizeof(TCubeTiling) == 50 * sizeof(int32_t), "TCubeTiling is 50 int32 fields");

namespace AscendC {
namespace tiling {
using ::TCubeTiling;
}  // namespace tiling
}  // namespace AscendC

#endif  // OPSDK_ASCENDC_KERNEL_TILING_H
