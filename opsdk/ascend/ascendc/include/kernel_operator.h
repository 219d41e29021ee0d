// kernel_operator.h of opsdk's CPU model of the Ascend C API.
//
// An AI Core kernel written for CANN's Ascend C includes "kernel_operator.h"; compiled with
// opsdk's include path it gets this file instead, and runs on the CPU against a functional
// model of the documented API subset listed in docs/ascendc_model.md. Every documented
// constraint the model knows is checked and reported with the kernel, API, argument and limit.
// An API the model lacks is a compile error. Passing on the model means the kernel's tiling,
// indexing and API use are right by the documentation; it does not mean that an NPU ran it.
#ifndef OPSDK_ASCENDC_KERNEL_OPERATOR_H
#define OPSDK_ASCENDC_KERNEL_OPERATOR_H

#include "opsdk_model_core.h"
#include "opsdk_model_memory.h"
#include "opsdk_model_vector.h"
#include "opsdk_model_misc.h"
#include "opsdk_model_cache.h"
#include "opsdk_model_cube.h"
#include "opsdk_model_utils.h"
#include "opsdk_model_copy_pad.h"
#include "opsdk_model_brcb.h"
#include "opsdk_model_transpose.h"
#include "opsdk_model_sort.h"
#include "opsdk_model_sync_all.h"
#include "opsdk_model_mix.h"
#include "opsdk_model_activation.h"
#include "opsdk_model_hl_softmax.h"
#include "opsdk_model_hl_norm.h"
#include "opsdk_model_hl_gelu.h"
#include "opsdk_model_hl_reduce.h"
#include "opsdk_model_hl_topk.h"
#include "opsdk_model_vec_index.h"
#include "opsdk_model_mem_allocator.h"

#include "opsdk_model_tiling.h"

// GET_TILING_DATA(var, tiling): the struct REGISTER_TILING_DEFAULT names in the kernel, else
// the class the op's tiling header registers (REGISTER_TILING_DATA_CLASS), filled from the bytes
// the host wrote (opsdk_model_tiling.h).
#define REGISTER_TILING_DEFAULT(tiling_struct) \
    tiling_struct OpsdkDefaultTiling(::opsdk_ascendc::TilingTag, int)
#define GET_TILING_DATA(var, tiling) \
    auto var = ::opsdk_ascendc::ReadTiling<decltype(OpsdkDefaultTiling(::opsdk_ascendc::TilingTag{}, 0))>(tiling)
#define GET_TILING_DATA_WITH_STRUCT(tiling_struct, var, tiling) \
    auto var = ::opsdk_ascendc::ReadTiling<tiling_struct>(tiling)

#endif  // OPSDK_ASCENDC_KERNEL_OPERATOR_H
