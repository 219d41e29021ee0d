// opsdk's CPU model of the Ascend C API: the scalar unit's data cache (DataCacheCleanAndInvalid).
// Part of opsdk (not CANN). The model's GM is coherent, so cleaning the cache moves no data; the
// call is one scalar instruction, as on the chip.
#ifndef OPSDK_ASCENDC_MODEL_CACHE_H
#define OPSDK_ASCENDC_MODEL_CACHE_H

#include "opsdk_model_memory.h"

#ifndef OPSDK_HAS_DataCacheCleanAndInvalid
#define OPSDK_HAS_DataCacheCleanAndInvalid 1
#endif

namespace AscendC {

// basic_api/impl/kernel_reg.h
enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };

#if OPSDK_HAS_DataCacheCleanAndInvalid
// Write back and drop the scalar data cache's line holding dstTensor's first element (or the
// whole cache): after GlobalTensor::SetValue, so that the values reach GM. The two-parameter
// form, which basic_api/interface/kernel_common.h has on __CCE_AICORE__ 200, 220 and 300.
template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dstTensor, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("DataCacheCleanAndInvalid", opsdk_ascendc::Pipe::S, loc);
    (void)dstTensor;
}
#else
OPSDK_UNAVAILABLE(DataCacheCleanAndInvalid)
#endif

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_CACHE_H
