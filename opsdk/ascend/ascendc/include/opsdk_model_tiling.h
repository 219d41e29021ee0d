// How opsdk's CPU model of the Ascend C API finds a kernel's tiling struct (included by
// kernel_operator.h and register/tilingdata_base.h). GET_TILING_DATA takes, in this order:
// the struct REGISTER_TILING_DEFAULT(S) names in the kernel (a block-scope declaration, so
// argument-dependent lookup is off), the class REGISTER_TILING_DATA_CLASS registered in the
// op_host tiling header (found by argument-dependent lookup), or fails to compile naming both.
#ifndef OPSDK_ASCENDC_MODEL_TILING_H
#define OPSDK_ASCENDC_MODEL_TILING_H

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace opsdk_ascendc {
struct TilingTag {};
struct NoTiling {};
NoTiling OpsdkDefaultTiling(TilingTag, ...);

template <typename T> inline T ReadTiling(const void* bytes) {
    static_assert(!std::is_same_v<T, NoTiling>,
                  "GET_TILING_DATA: no tiling struct; name it with REGISTER_TILING_DEFAULT(MyTiling) in "
                  "the kernel, or register a class with REGISTER_TILING_DATA_CLASS in the op_host tiling header");
    T v;
    std::memcpy(static_cast<void*>(&v), bytes, sizeof(T));
    return v;
}
}  // namespace opsdk_ascendc

#endif  // OPSDK_ASCENDC_MODEL_TILING_H
