// register/tilingdata_base.h of opsdk's CPU model of the Ascend C API: the tiling-data macros
// as plain structs, so the op_host tiling header of a CANN project compiles for the model.
// Fields are laid out in declaration order with natural alignment (opsdk orders them by size).
#ifndef OPSDK_ASCENDC_TILINGDATA_BASE_H
#define OPSDK_ASCENDC_TILINGDATA_BASE_H

#include <cstdint>
#include <cstring>
#if __has_include("../kernel_tiling/kernel_tiling.h")
#include "../kernel_tiling/kernel_tiling.h"
#endif

// Declared only: this header also goes, as opsdk_tilingdata.h, into the toolkit's CPU-debug
// build (toolkit.py), where the model's opsdk_model_tiling.h that defines it is absent.
namespace opsdk_ascendc {
struct TilingTag;
}

#define BEGIN_TILING_DATA_DEF(cls) \
    class cls {                    \
    public:
#define TILING_DATA_FIELD_DEF(type, name)         \
    type name = 0;                                \
    void set_##name(type v) { name = v; }         \
    type get_##name() const { return name; }
#define TILING_DATA_FIELD_DEF_ARR(type, n, name)                            \
    type name[n] = {};                                                      \
    void set_##name(const type* v) { std::memcpy(name, v, sizeof(name)); } \
    const type* get_##name() const { return name; }
// A struct field: the high-level APIs' tiling structs (TCubeTiling: ::TCubeTiling in a kernel,
// optiling::TCubeTiling with set_/get_ where the host's tiling/tiling_api.h came first).
#define TILING_DATA_FIELD_DEF_STRUCT(type, name) type name{};
#define END_TILING_DATA_DEF }
// Used at namespace optiling scope, as CANN's op_host tiling headers do; the declaration in
// opsdk_ascendc lets GET_TILING_DATA find the class (opsdk_model_tiling.h).
#define REGISTER_TILING_DATA_CLASS(op, cls)                                 \
    using OpsdkTilingData = cls;                                            \
    }                                                                       \
    namespace opsdk_ascendc {                                               \
    ::optiling::cls OpsdkDefaultTiling(TilingTag, long);                    \
    }                                                                       \
    namespace optiling {

#endif  // OPSDK_ASCENDC_TILINGDATA_BASE_H
