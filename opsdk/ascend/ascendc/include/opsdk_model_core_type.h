// opsdk's CPU model of the Ascend C API: the compiler's core-type macros. Part of opsdk (not CANN).
//
// Huawei's compiler compiles a kernel once per core type: for the Cube core (AIC) with
// __DAV_C220_CUBE__ and g_coreType = AIC, for the vector core (AIV) with __DAV_C220_VEC__ and
// g_coreType = AIV (basic_api/impl/utils/kernel_utils_macros.h: ASCEND_IS_AIC/ASCEND_IS_AIV test
// g_coreType). A translation unit compiled for the Cube core defines OPSDK_AIC. A driver that
// runs a mixed kernel includes the kernel twice, each time after this header (no include guard:
// it defines the macros again for the core type of what follows).
#undef ASCEND_IS_AIC
#undef ASCEND_IS_AIV
#undef ASCEND_IS_NOT_AIC
#undef ASCEND_IS_NOT_AIV
#undef g_coreType
#if OPSDK_AICORE_ARCH == 220 && !defined(OPSDK_CORE_TYPE_FIXED)
#if defined(__DAV_C220_CUBE__) || defined(__DAV_C220_VEC__)
#if !defined(OPSDK_CORE_TYPE_SET)
// the build defined one itself (-D__DAV_C220_CUBE__): it is kept for every inclusion
#define OPSDK_CORE_TYPE_FIXED
#endif
#endif
#endif
#if OPSDK_AICORE_ARCH == 220 && !defined(OPSDK_CORE_TYPE_FIXED)
#undef __DAV_C220_CUBE__
#undef __DAV_C220_VEC__
#ifdef OPSDK_AIC
#define __DAV_C220_CUBE__
#else
#define __DAV_C220_VEC__
#endif
#define OPSDK_CORE_TYPE_SET
#endif
#ifdef OPSDK_AIC
#define g_coreType (1)
#define ASCEND_IS_AIC (true)
#define ASCEND_IS_AIV (false)
#else
#define g_coreType (2)
#define ASCEND_IS_AIC (false)
#define ASCEND_IS_AIV (true)
#endif
#define ASCEND_IS_NOT_AIC (!ASCEND_IS_AIC)
#define ASCEND_IS_NOT_AIV (!ASCEND_IS_AIV)
