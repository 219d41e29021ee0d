// lib/matmul_intf.h of opsdk's CPU model of the Ascend C API: the Matmul high-level API
// (opsdk_model_matmul.h; docs/ascendc_model.md, "The Matmul API").
#ifndef OPSDK_ASCENDC_LIB_MATMUL_INTF_H
#define OPSDK_ASCENDC_LIB_MATMUL_INTF_H
#include "../opsdk_model_matmul.h"
#endif  // OPSDK_ASCENDC_LIB_MATMUL_INTF_H
