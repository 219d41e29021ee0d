#include "kernel_operator.h"

using namespace AscendC;

namespace {
constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t GRANULE = 64;  // elements of one 256-byte float32 repeat

template <typename T> __aicore__ inline float OpsdkRound(float v) { return static_cast<float>(static_cast<T>(v)); }
// float -> bfloat16 -> float, round to nearest even on the bits (the scalar ToBfloat16
// truncates, and exists on __CCE_AICORE__ 220 and 300 only).
template <> __aicore__ inline float OpsdkRound<bfloat16_t>(float v)
{
    union {
        float f;
        uint32_t u;
    } b;
    b.f = v;
    if ((b.u & 0x7fffffffu) <= 0x7f800000u) {
        b.u = (b.u + 0x7fffu + ((b.u >> 16) & 1u)) & 0xffff0000u;
    }
    return b.f;
}
template <> __aicore__ inline float OpsdkRound<float>(float v) { return v; }

__aicore__ inline bool OpsdkStrEq(const uint8_t* a, const char* b)
{
    uint32_t i = 0;
    for (; b[i] != 0; ++i) {
        if (a[i] != static_cast<uint8_t>(b[i])) {
            return false;
        }
    }
    return a[i] == 0;
}

// The Ascend C of __CCE_AICORE__ 200 (Ascend310P) has no DataCopyPad (basic_api/impl/dav_m200/
// kernel_operator_data_copy_impl.h): there every GM <-> UB copy moves whole 32-byte blocks.
#if __CCE_AICORE__ == 200
#define OPSDK_BLOCK_COPY_ONLY 1
#else
#define OPSDK_BLOCK_COPY_ONLY 0
#endif

#if OPSDK_BLOCK_COPY_ONLY
// GM <-> UB for n elements, n whole 32-byte blocks (Process moves an unaligned tail's window
// back so that it ends at the range's end).
template <typename T> __aicore__ inline void CopyGmToUb(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t n)
{
    DataCopy(dst, src, n);
}

template <typename T> __aicore__ inline void CopyUbToGm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t n)
{
    DataCopy(dst, src, n);
}

// Order the scalar unit and the vector pipe (a tensor shorter than one block goes through the scalar).
template <HardEvent E> __aicore__ inline void OpsdkSync()
{
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(E));
    SetFlag<E>(e);
    WaitFlag<E>(e);
}
#else
// GM <-> UB for n elements: DataCopy for whole 32-byte blocks, DataCopyPad for a tail.
template <typename T> __aicore__ inline void CopyGmToUb(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t n)
{
    if ((n * sizeof(T)) % 32 == 0) {
        DataCopy(dst, src, n);
    } else {
        DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad;
        DataCopyPad(dst, src, params, pad);
    }
}

template <typename T> __aicore__ inline void CopyUbToGm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t n)
{
    if ((n * sizeof(T)) % 32 == 0) {
        DataCopy(dst, src, n);
    } else {
        DataCopyExtParams params{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        DataCopyPad(dst, src, params);
    }
}
#endif

// float32 compute: widen on load, round once on store (RINT), round through T for a Cast.
template <typename T> __aicore__ inline void LoadFloat(const LocalTensor<float>& dst, const LocalTensor<T>& src, uint32_t n)
{
    if constexpr (IsSameType<T, float>::value) {
        DataCopy(dst, src, n);
    } else {
        Cast(dst, src, RoundMode::CAST_NONE, n);
    }
}

template <typename T> __aicore__ inline void StoreFloat(const LocalTensor<T>& dst, const LocalTensor<float>& src, uint32_t n)
{
    if constexpr (IsSameType<T, float>::value) {
        DataCopy(dst, src, n);
    } else {
        Cast(dst, src, RoundMode::CAST_RINT, n);
    }
}

template <typename T>
__aicore__ inline void RoundThrough(const LocalTensor<float>& dst, const LocalTensor<float>& src, const LocalTensor<T>& scratch, uint32_t n)
{
    if constexpr (IsSameType<T, float>::value) {
        DataCopy(dst, src, n);
    } else {
        Cast(scratch, src, RoundMode::CAST_RINT, n);
        Cast(dst, scratch, RoundMode::CAST_NONE, n);
    }
}
}  // namespace
