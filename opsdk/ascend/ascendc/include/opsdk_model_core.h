// opsdk's CPU model of the Ascend C API: runtime state, errors, GM tracking, Unified Buffer.
// Part of opsdk (not CANN). A pass on this model means that a kernel's tiling, indexing and
// API use are right by the Ascend C documentation; it does not mean that an NPU ran it.
#ifndef OPSDK_ASCENDC_MODEL_CORE_H
#define OPSDK_ASCENDC_MODEL_CORE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#define __aicore__
#define __global__
#define __gm__
#define GM_ADDR uint8_t*

using half = _Float16;

// bfloat16_t: storage type with round-to-nearest-even conversion from float.
struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    explicit bfloat16_t(float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            bits = static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
        } else {
            bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        }
    }
    explicit operator float() const {
        uint32_t u = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
};

namespace opsdk_ascendc {

class ModelError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

template <typename T> constexpr const char* TypeName() {
    if constexpr (std::is_same_v<T, half>) return "half";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16_t";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
    else return "an unmodelled type";
}

template <typename T> inline float ToF(T v) { return static_cast<float>(v); }
template <typename T> inline T FromF(float v) {
    if constexpr (std::is_same_v<T, bfloat16_t>) return bfloat16_t(v);
    else return static_cast<T>(v);
}

// One GM argument of the kernel, with the block that last wrote each byte.
struct GmArg {
    std::string name;
    uint8_t* base = nullptr;
    uint64_t bytes = 0;
    std::vector<int32_t> writer;  // per byte: -1 or the block index
};

struct Launch {
    std::string kernel;
    std::vector<GmArg> gm;
    uint64_t ubBytes = 0;
    std::string soc;
    int64_t blockNum = 1;
    std::mutex gmMutex;
};

// Per block (per thread) state.
struct Block {
    Launch* launch = nullptr;
    int64_t idx = 0;
    std::vector<uint8_t> ub;
    uint64_t ubUsed = 0;
    uint32_t buffers = 0;
    bool pipeAlive = false;
    void* pipe = nullptr;  // the live AscendC::TPipe
};

inline thread_local Block* tBlock = nullptr;

inline Block& Cur() {
    if (tBlock == nullptr) throw ModelError("Ascend C API called outside a kernel launch");
    return *tBlock;
}

[[noreturn]] inline void Fail(const std::string& api, const std::string& what) {
    Block* b = tBlock;
    std::string head = b ? b->launch->kernel + " (block " + std::to_string(b->idx) + " of " +
                               std::to_string(b->launch->blockNum) + ")"
                         : std::string("kernel");
    throw ModelError(head + ": " + api + ": " + what);
}

inline std::string S(uint64_t v) { return std::to_string(v); }

constexpr uint64_t kBlockBytes = 32;     // one data block
constexpr uint64_t kRepeatBytes = 256;   // one repeat of a vector instruction
constexpr uint32_t kMaxBuffers = 64;     // buffers a TPipe can hand out

// The GM argument holding [p, p + n), or a failure naming the overrun.
inline GmArg& FindGm(const std::string& api, const void* p, uint64_t n, const char* dir) {
    Launch& L = *Cur().launch;
    auto* q = static_cast<const uint8_t*>(p);
    for (GmArg& a : L.gm) {
        if (a.base == nullptr) continue;
        if (q >= a.base && q <= a.base + a.bytes) {
            uint64_t off = static_cast<uint64_t>(q - a.base);
            if (off + n > a.bytes) {
                Fail(api, std::string(dir) + " " + S(n) + " bytes at byte " + S(off) +
                              " of GM argument '" + a.name + "', which holds " + S(a.bytes) +
                              " bytes: out of bounds by " + S(off + n - a.bytes) +
                              " bytes (copy the tail with DataCopyPad and its exact length)");
            }
            return a;
        }
    }
    Fail(api, std::string(dir) + " " + S(n) + " bytes at an address outside every GM argument");
}

// Record a GM read: reading what another block wrote makes the result depend on block order.
inline void GmRead(const std::string& api, const void* p, uint64_t n) {
    if (n == 0) return;
    GmArg& a = FindGm(api, p, n, "reads");
    Block& b = Cur();
    std::lock_guard<std::mutex> lock(b.launch->gmMutex);
    uint64_t off = static_cast<uint64_t>(static_cast<const uint8_t*>(p) - a.base);
    for (uint64_t i = off; i < off + n; ++i) {
        int32_t w = a.writer[i];
        if (w >= 0 && w != b.idx) {
            Fail(api, "reads byte " + S(i) + " of GM argument '" + a.name +
                          "' that block " + std::to_string(w) +
                          " wrote: the result depends on the order of blocks, which run "
                          "concurrently on the NPU");
        }
    }
}

inline void GmWrite(const std::string& api, const void* p, uint64_t n) {
    if (n == 0) return;
    GmArg& a = FindGm(api, p, n, "writes");
    Block& b = Cur();
    std::lock_guard<std::mutex> lock(b.launch->gmMutex);
    uint64_t off = static_cast<uint64_t>(static_cast<const uint8_t*>(p) - a.base);
    for (uint64_t i = off; i < off + n; ++i) {
        int32_t w = a.writer[i];
        if (w >= 0 && w != b.idx) {
            Fail(api, "writes byte " + S(i) + " of GM argument '" + a.name +
                          "' that block " + std::to_string(w) +
                          " also writes: blocks must write disjoint ranges");
        }
        a.writer[i] = static_cast<int32_t>(b.idx);
    }
}

}  // namespace opsdk_ascendc

namespace AscendC {
template <typename T, typename U> struct IsSameType {
    static constexpr bool value = std::is_same_v<T, U>;
};
}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_CORE_H
