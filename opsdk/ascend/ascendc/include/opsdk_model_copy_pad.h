// opsdk's CPU model of the Ascend C API: DataCopyPad's DataCopyParams forms (the older ones,
// kept in CANN 8.1.RC1's basic_api/interface/kernel_operator_data_copy_intf.h next to the
// DataCopyExtParams forms). Part of opsdk (not CANN). blockLen is in bytes as in the Ext form,
// at most 65535 (uint16_t); the pad value of DataCopyPadParams is the pad register's bit code
// (impl/dav_c220/kernel_operator_data_copy_impl.h: set_mov_pad_val(padParams.paddingValue)).
#ifndef OPSDK_ASCENDC_MODEL_COPY_PAD_H
#define OPSDK_ASCENDC_MODEL_COPY_PAD_H

#include "opsdk_model_memory.h"

namespace AscendC {

// basic_api/interface/kernel_struct_data_copy.h
struct DataCopyPadParams {
    DataCopyPadParams() = default;
    DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue,
                      const uint64_t padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};

#if OPSDK_HAS_DataCopyPad
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dstLocal, const GlobalTensor<T>& srcGlobal,
                        const DataCopyParams& dataCopyParams, const DataCopyPadParams& padParams,
                        opsdk_ascendc::Loc loc = {}) {
    DataCopyExtParams ext(dataCopyParams.blockCount, dataCopyParams.blockLen, dataCopyParams.srcStride,
                          dataCopyParams.dstStride, 0);
    T value{};
    std::memcpy(&value, &padParams.paddingValue, std::min(sizeof(T), sizeof(uint64_t)));
    DataCopyPad(dstLocal, srcGlobal, ext,
                DataCopyPadExtParams<T>(padParams.isPad, padParams.leftPadding, padParams.rightPadding, value), loc);
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dstGlobal, const LocalTensor<T>& srcLocal,
                        const DataCopyParams& dataCopyParams, opsdk_ascendc::Loc loc = {}) {
    DataCopyExtParams ext(dataCopyParams.blockCount, dataCopyParams.blockLen, dataCopyParams.srcStride,
                          dataCopyParams.dstStride, 0);
    DataCopyPad(dstGlobal, srcLocal, ext, loc);
}
#endif

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_COPY_PAD_H
