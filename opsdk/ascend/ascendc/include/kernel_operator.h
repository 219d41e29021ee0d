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

// GET_TILING_DATA(var, tiling): the tiling struct registered by the op's tiling header
// (REGISTER_TILING_DATA_CLASS), filled from the bytes the host wrote.
#define GET_TILING_DATA(var, tiling)           \
    ::optiling::OpsdkTilingData var;           \
    std::memcpy(&var, (tiling), sizeof(var))

#endif  // OPSDK_ASCENDC_KERNEL_OPERATOR_H
