// opsdk's CPU model of the Ascend C API: LocalMemAllocator (static tensor programming), for the
// Unified Buffer. Part of opsdk (not CANN). Newer than CANN 8.1.RC1 (whose headers lack it):
// asc-devkit's include/basic_api/kernel_tensor.h, a cursor over the Unified Buffer; each Alloc
// makes LocalTensor(pos, cursor, tileSize) (with that constructor's checks: 32-byte multiples,
// inside the Unified Buffer) and moves the cursor on by the tensor's bytes. The default position
// of Hardware::UB is VECCALC. The model starts the cursor at Unified Buffer byte 0 (asc-devkit
// starts it at GetDynamicMemStartPos, after a reserved part whose size the model does not know)
// and models Hardware::UB only (other memories are a compile error).
#ifndef OPSDK_ASCENDC_MODEL_MEM_ALLOCATOR_H
#define OPSDK_ASCENDC_MODEL_MEM_ALLOCATOR_H

#include "opsdk_model_memory.h"

namespace AscendC {

// basic_api/impl/kernel_event.h (8.1)
enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
    static_assert(hard == Hardware::UB, "opsdk's model has LocalMemAllocator of Hardware::UB only");

public:
    LocalMemAllocator() = default;
    uint32_t GetCurAddr() const { return head_; }
    template <TPosition pos, class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc() { return Alloc<pos, DataType>(tileSize); }
    template <class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc() { return Alloc<TPosition::VECCALC, DataType>(tileSize); }
    template <class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize) { return Alloc<TPosition::VECCALC, DataType>(tileSize); }
    template <TPosition pos, class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize) {
        static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::VECCALC,
                      "LocalMemAllocator<Hardware::UB>: the position must be one of the Unified Buffer "
                      "(VECIN, VECOUT, VECCALC)");
        LocalTensor<DataType> out(pos, head_, tileSize);
        head_ += static_cast<uint32_t>(opsdk_ascendc::BytesOf<DataType>(tileSize));
        return out;
    }

private:
    uint32_t head_ = 0;
};

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_MEM_ALLOCATOR_H
