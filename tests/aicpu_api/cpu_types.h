// Stand-in for the CANN toolkit's <arch>-linux/include/aicpu/cpu_types.h (AI CPU kernel API),
// written for opsdk's tests. It declares what the toolkit's header declares (checked against
// CANN 8.1.RC1), no more; the definitions behind these headers are in runtime.cpp here.
#ifndef CPU_KERNEL_TYPES_H
#define CPU_KERNEL_TYPES_H

#include <map>

namespace aicpu {
#ifdef VISIBILITY
#define AICPU_VISIBILITY __attribute__((visibility("default")))
#else
#define AICPU_VISIBILITY
#endif

enum DataType {
  DT_FLOAT = 0,
  DT_FLOAT16 = 1,
  DT_INT8 = 2,
  DT_INT16 = 6,
  DT_UINT16 = 7,
  DT_UINT8 = 4,
  DT_INT32 = 3,
  DT_INT64 = 9,
  DT_UINT32 = 8,
  DT_UINT64 = 10,
  DT_BOOL = 12,
  DT_DOUBLE = 11,
  DT_STRING = 13,
  DT_DUAL_SUB_INT8 = 14,
  DT_DUAL_SUB_UINT8 = 15,
  DT_COMPLEX64 = 16,
  DT_COMPLEX128 = 17,
  DT_QINT8 = 18,
  DT_QINT16 = 19,
  DT_QINT32 = 20,
  DT_QUINT8 = 21,
  DT_QUINT16 = 22,
  DT_RESOURCE = 23,
  DT_STRING_REF = 24,
  DT_DUAL = 25,
  DT_BFLOAT16 = 27,
  DT_UNDEFINED = 28,
  DT_INT4 = 29,
  DT_UINT1 = 30,
  DT_INT2 = 31,
  DT_UINT2 = 32,
  DT_COMPLEX32 = 33,
  DT_HIFLOAT8 = 34,
  DT_MAX
};

AICPU_VISIBILITY inline int GetSizeByDataType(DataType dataType) {
  static const std::map<DataType, int> sizes = {
      {DT_FLOAT, 4},        {DT_FLOAT16, 2},        {DT_INT8, 1},           {DT_INT16, 2},
      {DT_UINT16, 2},       {DT_UINT8, 1},          {DT_INT32, 4},          {DT_INT64, 8},
      {DT_UINT32, 4},       {DT_UINT64, 8},         {DT_BOOL, 1},           {DT_DOUBLE, 8},
      {DT_STRING, -1},      {DT_DUAL_SUB_INT8, 1},  {DT_DUAL_SUB_UINT8, 1}, {DT_COMPLEX64, 8},
      {DT_COMPLEX128, 16},  {DT_QINT8, 1},          {DT_QINT16, 2},         {DT_QINT32, 4},
      {DT_QUINT8, 1},       {DT_QUINT16, 2},        {DT_RESOURCE, -1},      {DT_STRING_REF, -1},
      {DT_DUAL, 5},         {DT_BFLOAT16, 2},       {DT_UINT1, 1},          {DT_INT2, 2},
      {DT_UINT2, 2},        {DT_INT4, 4},           {DT_COMPLEX32, 4},      {DT_HIFLOAT8, 1}};
  auto it = sizes.find(dataType);
  return it == sizes.end() ? -1 : it->second;
}

enum Format {
  FORMAT_NCHW = 0,
  FORMAT_NHWC,
  FORMAT_ND,
  FORMAT_NC1HWC0,
  FORMAT_FRACTAL_Z,
  FORMAT_NC1C0HWPAD,
  FORMAT_NHWC1C0,
  FORMAT_FSR_NCHW,
  FORMAT_FRACTAL_DECONV,
  FORMAT_C1HWNC0,
  FORMAT_FRACTAL_DECONV_TRANSPOSE,
  FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS,
  FORMAT_NC1HWC0_C04,
  FORMAT_FRACTAL_Z_C04,
  FORMAT_CHWN,
  FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS,
  FORMAT_HWCN,
  FORMAT_NC1KHKWHWC0,
  FORMAT_BN_WEIGHT,
  FORMAT_FILTER_HWCK,
  FORMAT_HASHTABLE_LOOKUP_LOOKUPS = 20,
  FORMAT_HASHTABLE_LOOKUP_KEYS,
  FORMAT_HASHTABLE_LOOKUP_VALUE,
  FORMAT_HASHTABLE_LOOKUP_OUTPUT,
  FORMAT_HASHTABLE_LOOKUP_HITS = 24,
  FORMAT_C1HWNCoC0,
  FORMAT_MD,
  FORMAT_NDHWC,
  FORMAT_FRACTAL_ZZ,
  FORMAT_FRACTAL_NZ,
  FORMAT_NCDHW,
  FORMAT_DHWCN,
  FORMAT_NDC1HWC0,
  FORMAT_FRACTAL_Z_3D,
  FORMAT_CN,
  FORMAT_NC,
  FORMAT_DHWNC,
  FORMAT_FRACTAL_Z_3D_TRANSPOSE,
  FORMAT_FRACTAL_ZN_LSTM,
  FORMAT_FRACTAL_Z_G,
  FORMAT_RESERVED,
  FORMAT_ALL,
  FORMAT_NULL,
  FORMAT_ND_RNN_BIAS,
  FORMAT_FRACTAL_ZN_RNN,
  FORMAT_NYUV = 45,
  FORMAT_NYUV_A,
  FORMAT_NCL,
  FORMAT_FRACTAL_Z_WINO,
  FORMAT_C1HWC0,
  FORMAT_END,
  FORMAT_MAX = 0xff
};

enum DeviceType { HOST, DEVICE };
}  // namespace aicpu
#endif  // CPU_KERNEL_TYPES_H
