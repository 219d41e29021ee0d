// opsdk's CPU model of the Ascend C API: runtime state, errors, GM tracking, Unified Buffer.
// Part of opsdk (not CANN). A pass on this model means that a kernel's tiling, indexing and
// API use are right by the Ascend C documentation; it does not mean that an NPU ran it.
#ifndef OPSDK_ASCENDC_MODEL_CORE_H
#define OPSDK_ASCENDC_MODEL_CORE_H

#include <algorithm>
#include <array>
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

// The SoC family the model compiles for (opsdk/ascend/aicore_apis.py passes them; the
// defaults are 910B's, basic_api/impl/utils/kernel_utils_constants.h for __CCE_AICORE__ 220).
#ifndef OPSDK_AICORE_ARCH
#define OPSDK_AICORE_ARCH 220
#endif
#ifndef OPSDK_TMP_UB_OFFSET
#define OPSDK_TMP_UB_OFFSET (184 * 1024)
#endif
#ifndef OPSDK_UB_STACK_END
#define OPSDK_UB_STACK_END (192 * 1024 - 128)
#endif
// The Cube side's buffers, bytes per core (the platform data's [AICoreSpec] l1_size, l0_a_size,
// l0_b_size, l0_c_size, bt_size; opsdk/ascend/data/socs.json). The defaults are 910B's.
#ifndef OPSDK_SOC_VERSION
#define OPSDK_SOC_VERSION "Ascend910B1"
#endif
#ifndef OPSDK_L1_BYTES
#define OPSDK_L1_BYTES 524288
#endif
#ifndef OPSDK_L0A_BYTES
#define OPSDK_L0A_BYTES 65536
#endif
#ifndef OPSDK_L0B_BYTES
#define OPSDK_L0B_BYTES 65536
#endif
#ifndef OPSDK_L0C_BYTES
#define OPSDK_L0C_BYTES 131072
#endif
#ifndef OPSDK_BT_BYTES
#define OPSDK_BT_BYTES 1024
#endif

// OPSDK_HAS_<API>: whether the SoC family has the API (0 makes a call a compile error naming it).
#ifndef OPSDK_HAS_ToBfloat16
#define OPSDK_HAS_ToBfloat16 1
#endif
#ifndef OPSDK_HAS_ToFloat
#define OPSDK_HAS_ToFloat 1
#endif
#ifndef OPSDK_HAS_Erf
#define OPSDK_HAS_Erf 1
#endif
#ifndef OPSDK_HAS_Erfc
#define OPSDK_HAS_Erfc 1
#endif
#ifndef OPSDK_HAS_Tanh
#define OPSDK_HAS_Tanh 1
#endif
#ifndef OPSDK_HAS_DataCopyPad
#define OPSDK_HAS_DataCopyPad 1
#endif
#ifndef OPSDK_HAS_CompareScalar
#define OPSDK_HAS_CompareScalar 1
#endif
#ifndef OPSDK_HAS_GatherMask
#define OPSDK_HAS_GatherMask 1
#endif
#ifndef OPSDK_HAS_SetPadValue
#define OPSDK_HAS_SetPadValue 1
#endif
#ifndef OPSDK_HAS_Gather
#define OPSDK_HAS_Gather 1
#endif
#ifndef OPSDK_HAS_Gatherb
#define OPSDK_HAS_Gatherb 1
#endif
#ifndef OPSDK_HAS_INT4_Cast
#define OPSDK_HAS_INT4_Cast 1
#endif
#ifndef OPSDK_HAS_BF16_Cast
#define OPSDK_HAS_BF16_Cast 1
#endif
#ifndef OPSDK_HAS_BF16_DataCopyPad
#define OPSDK_HAS_BF16_DataCopyPad 1
#endif
// The compiler's predefined macros of the SoC family and core type, as Huawei's compiler defines
// them for --npu-arch=dav-<arch> (__NPU_ARCH__: 1001, 2002, 2201, 3002, the values asc-devkit's
// headers test; CANN 8.1.RC1's own headers test __CCE_AICORE__ and __DAV_<ARCH>[_CUBE|_VEC]__).
// A kernel compiled for the Cube core defines OPSDK_AIC; otherwise it is a vector core's.
#ifndef __CCE_AICORE__
#define __CCE_AICORE__ OPSDK_AICORE_ARCH
#endif
#ifndef __NPU_ARCH__
#if OPSDK_AICORE_ARCH == 100
#define __NPU_ARCH__ 1001
#elif OPSDK_AICORE_ARCH == 200
#define __NPU_ARCH__ 2002
#elif OPSDK_AICORE_ARCH == 220
#define __NPU_ARCH__ 2201
#elif OPSDK_AICORE_ARCH == 300
#define __NPU_ARCH__ 3002
#endif
#endif
// The family macro CPU-debug's build defines (tools/tikicpulib/lib/cmake/targets-tikicpulib.cmake).
#if OPSDK_AICORE_ARCH == 100 && !defined(__DAV_C100__)
#define __DAV_C100__
#elif OPSDK_AICORE_ARCH == 200 && !defined(__DAV_M200__)
#define __DAV_M200__
#elif OPSDK_AICORE_ARCH == 220 && !defined(__DAV_C220__)
#define __DAV_C220__
#elif OPSDK_AICORE_ARCH == 300 && !defined(__DAV_M300__)
#define __DAV_M300__
#endif
// The core-type macros (__DAV_C220_CUBE__/__DAV_C220_VEC__, ASCEND_IS_AIC/AIV, g_coreType):
// opsdk_model_core_type.h, included again per core type where a driver compiles a kernel twice.
#include "opsdk_model_core_type.h"
#define OPSDK_STR2(x) #x
#define OPSDK_STR(x) OPSDK_STR2(x)
// An API the SoC family lacks: any call is a compile error naming it.
#define OPSDK_UNAVAILABLE(NAME)                                                                    \
    template <typename... A> inline void NAME(A&&...) {                                           \
        static_assert(opsdk_ascendc::kNever<A...>, #NAME " is not in the Ascend C of this SoC family " \
                      "(__CCE_AICORE__ = " OPSDK_STR(OPSDK_AICORE_ARCH) "; see opsdk/ascend/aicore_apis.py)"); \
    }

#define __aicore__
#define __global__
#define __vector__  // the kernel-type qualifier of the newer asc-devkit samples (__global__ __vector__)
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

namespace AscendC {
// int4b_t: a signed 4-bit integer, two to a byte, the even element in the low nibble
// (basic_api/impl/utils/kernel_utils_constants.h: IntegerSubType<INT4_BIT_NUM, true>; the
// nibble order is LocalTensor::GetValue/SetValue's in basic_api/impl/kernel_tensor_impl.h).
// Tensors of it count elements; their bytes are half that.
struct int4b_t {
    uint8_t storage = 0;
    int4b_t() = default;
    int4b_t(int32_t value) : storage(static_cast<uint8_t>(value & 0xF)) {}
    operator int32_t() const { return (storage & 0x8u) ? int32_t(storage) - 16 : int32_t(storage); }
};
}  // namespace AscendC

namespace opsdk_ascendc {

template <typename... A> constexpr bool kNever = false;
template <typename T> constexpr bool kInt4 = std::is_same_v<T, AscendC::int4b_t>;
// Bytes of n elements of T, and elements in n bytes (int4b_t: two elements to a byte).
template <typename T> constexpr uint64_t BytesOf(uint64_t n) { return kInt4<T> ? n / 2 : n * sizeof(T); }
template <typename T> constexpr uint64_t ElemsOf(uint64_t bytes) { return kInt4<T> ? bytes * 2 : bytes / sizeof(T); }
// Element i of the T elements at p (an int4b_t is the low nibble for even i, the high for odd).
template <typename T> inline T LoadAt(const uint8_t* p, uint64_t i) {
    T v;
    if constexpr (kInt4<T>) {
        v.storage = static_cast<uint8_t>((p[i / 2] >> (4 * (i % 2))) & 0xFu);
    } else {
        std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    }
    return v;
}
template <typename T> inline void StoreAt(uint8_t* p, uint64_t i, T v) {
    if constexpr (kInt4<T>) {
        const unsigned shift = 4 * (i % 2);
        p[i / 2] = static_cast<uint8_t>((p[i / 2] & ~(0xFu << shift)) | ((v.storage & 0xFu) << shift));
    } else {
        std::memcpy(p + i * sizeof(T), &v, sizeof(T));
    }
}
template <typename T, typename... Ok> constexpr bool OneOfT = (std::is_same_v<T, Ok> || ...);

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
    else if constexpr (std::is_same_v<T, uint64_t>) return "uint64_t";
    else if constexpr (std::is_same_v<T, AscendC::int4b_t>) return "int4b_t";
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
    std::vector<int32_t> writer;  // per byte: -1 or the block index (empty until the first write)
};

struct Timing;
struct BlockBarrier;
struct CrossCore;
// whether every block's cores run at once (opsdk_model_mix.h; CrossCore is complete there)
inline bool CrossAllBlocks(const CrossCore& x);

// The memories of one AI Core: the Unified Buffer and the Cube's L1, L0A, L0B, L0C and bias
// table (basic_api/impl/kernel_event.h: enum class Hardware). The model keeps them in one byte
// array, the Unified Buffer first, each at its own base; a tensor's offset is into that array.
enum class Mem : uint8_t { UB, L1, L0A, L0B, L0C, BT };
constexpr int kMems = 6;
inline const char* MemName(Mem m) {
    static const char* names[] = {"Unified Buffer", "L1", "L0A", "L0B", "L0C", "bias table"};
    return names[static_cast<int>(m)];
}
constexpr uint64_t kCubeBytes[kMems] = {0, OPSDK_L1_BYTES, OPSDK_L0A_BYTES, OPSDK_L0B_BYTES, OPSDK_L0C_BYTES,
                                        OPSDK_BT_BYTES};
// The platform data's name of each buffer's size, for messages.
inline const char* MemSizeKey(Mem m) {
    static const char* keys[] = {"ub_size", "l1_size", "l0_a_size", "l0_b_size", "l0_c_size", "bt_size"};
    return keys[static_cast<int>(m)];
}

struct Launch {
    std::string kernel;
    std::vector<GmArg> gm;
    uint64_t ubBytes = 0;
    std::string soc;
    int64_t blockNum = 1;
    std::mutex gmMutex;
    uint64_t sameValueBytes = 0;  // bytes two blocks both wrote, with the same value
    std::string sameValueFirst;   // where the first of them is
    const Timing* timing = nullptr;          // the estimate's costs, or none
    std::vector<std::string> traces;         // per block: its instructions with their times
    // Where each memory starts in a block's local byte array, and its bytes.
    uint64_t MemBase(Mem m) const {
        uint64_t at = 0;
        for (int k = 0; k < static_cast<int>(m); ++k) at += MemBytes(static_cast<Mem>(k));
        return at;
    }
    uint64_t MemBytes(Mem m) const { return m == Mem::UB ? ubBytes : kCubeBytes[static_cast<int>(m)]; }
    uint64_t LocalBytes() const { return MemBase(Mem::BT) + MemBytes(Mem::BT); }
    // The memory holding local byte `at`.
    Mem MemOf(uint64_t at) const {
        for (int k = kMems - 1; k > 0; --k) {
            if (at >= MemBase(static_cast<Mem>(k))) return static_cast<Mem>(k);
        }
        return Mem::UB;
    }
    BlockBarrier* barrier = nullptr;         // SyncAll's, when all blocks run at once
    // A mixed kernel (opsdk_model_mix.h): its KernelMetaType (-1: one core per block), whether
    // a block has a Cube core, its vector cores, and the cross-core state of the cores running.
    int mixType = -1;
    bool hasAic = false;
    int ratio = 0;
    CrossCore* cross = nullptr;
    // The GM workspace the launch allocates: the system part (sysWorkspace bytes), then the user part.
    uint8_t* workspace = nullptr;
    uint64_t sysWorkspace = 0;
    int PerBlock() const { return (hasAic ? 1 : 0) + ratio; }
};

// The source location of an API call: the kernel's file and line (a defaulted last argument
// of the modelled APIs, filled in at the caller's line by the compiler).
struct Loc {
    const char* file;
    int line;
    Loc(const char* f = __builtin_FILE(), int l = __builtin_LINE()) : file(f), line(l) {}
};

// The pipes of an AI Core: the vector side's S, V, MTE2 (GM -> UB/L1), MTE3 (UB -> GM) and the
// Cube side's MTE1 (L1 -> L0A/L0B/bias table), M (Mmad) and FIX (L0C -> GM/L1). SS stands for
// the scalar unit's stores into the Unified Buffer (SetValue): they are issued in order but drain
// later, so another pipe reads them safely only after an S_<pipe> flag.
enum class Pipe : uint8_t { S, V, MTE2, MTE3, SS, MTE1, M, FIX };
constexpr int kPipes = 8;
inline const char* PipeName(Pipe p) {
    static const char* names[] = {"S", "V", "MTE2", "MTE3", "S", "MTE1", "M", "FIX"};
    return names[static_cast<int>(p)];
}
using Clock = std::array<uint32_t, kPipes>;  // a vector clock: instructions seen per pipe
inline void Join(Clock& a, const Clock& b) {
    for (int i = 0; i < kPipes; ++i) a[i] = std::max(a[i], b[i]);
}

// One issued instruction: its API, pipe, number within its pipe and where it was called; for
// the cycle estimate (docs/ascendc_model.md, "The estimate") the bytes it moved and its times.
struct Instr {
    const char* api;
    Pipe pipe;
    uint32_t tick;
    Loc loc;
    uint64_t gm = 0;                     // GM bytes read or written
    uint32_t bursts = 0;                 // contiguous GM runs (one per GmRead/GmWrite)
    uint64_t ub[4] = {};                 // Unified Buffer bytes touched, per operand
    const char* ubArg[4] = {};           // ... and the operand's name
    double dep = 0;                      // a flag's time this instruction waits for
    int32_t depInstr = -1;               // ... and the instruction that set it
    double work = -1;                    // cycles an instruction worked out itself (the Cube's), or -1
    double start = 0, end = 0;           // cycles from the block's start
    int32_t pred = -1;                   // the instruction its start waited for (-1: none)
};

// What one instruction costs, per SoC (opsdk/ascend/ascendc/_estimate.py fills it from the
// platform data and data/aicore_costs.json, each constant with its source).
struct Timing {
    double issue = 1;                    // scalar cycles to issue one instruction to a pipe
    double mte2Latency = 0, mte3Latency = 0;  // cycles before the first byte arrives
    double mte2Bpc = 32, mte3Bpc = 32;   // GM bytes per cycle of this core
    double burst = 0;                    // extra cycles per further contiguous GM run
    double vecStartup = 0;               // cycles before a vector instruction's first repeat
    double repeatBytes = 256;            // bytes one repeat of a vector instruction covers
    double scalarLoad = 1, scalarStore = 1, scalarGm = 1;  // S: UB load, UB store, GM access
    double vecDefault = 1;               // cycles per repeat of an API not in `vec`
    double mmadFractal = 1;              // cycles per m16 x n16 x k0 step of Mmad
    double mte1Latency = 0;              // cycles before a LoadData's first byte
    double mte1aBpc = 512, mte1bBpc = 256;  // L1 -> L0A and L1 -> L0B bytes per cycle
    double fixLatency = 0, fixBpc = 32;  // Fixpipe: cycles before the first byte, GM bytes per cycle
    std::vector<std::pair<std::string, double>> vec;  // cycles per repeat, by API
    double CyclesPerRepeat(const char* api) const {
        const char* step = std::strrchr(api, '/');  // a high-level API's step, "SoftMax/Exp": Exp's
        if (step != nullptr) api = step + 1;
        for (const auto& [name, c] : vec) {
            if (name == api) return c;
        }
        return vecDefault;
    }
};

// A flag set by SetFlag (or implicitly by a queue) and not yet waited for.
struct Flag {
    bool set = false;
    Clock clock{};
    uint32_t instr = 0;
};

// Happens-before across the pipes of one block (see docs/ascendc_model.md, "Pipes").
struct Pipes {
    Clock clock[kPipes] = {};            // what each pipe's next instruction is ordered after
    std::vector<Instr> instrs;           // instrs[0] is "nothing"
    std::vector<uint32_t> lastWrite;     // per Unified Buffer byte: the instruction that wrote it
    std::vector<Clock> lastRead;         // per byte and pipe: the last instruction that read it
    int32_t current = -1;                // the instruction being executed, or -1
    std::vector<Flag> userFlags;         // per HardEvent x event id
    uint32_t smallMmad = 0;              // a small Mmad no PipeBarrier<PIPE_M> has followed yet
    const Timing* timing = nullptr;      // the cycle estimate's costs, or none
    double issueAt = 0;                  // when the scalar unit issues its next instruction
    int32_t lastIssued = -1;             // the instruction it issued last
    double pipeFree[kPipes] = {};        // when each pipe is free again
    int32_t lastOn[kPipes] = {-1, -1, -1, -1, -1, -1, -1, -1};  // each pipe's last instruction
    void Reset(uint64_t ubBytes) {
        issueAt = 0;
        lastIssued = -1;
        for (int p = 0; p < kPipes; ++p) {
            pipeFree[p] = 0;
            lastOn[p] = -1;
        }
        for (auto& c : clock) c.fill(0);
        instrs.assign(1, Instr{"", Pipe::S, 0, Loc("", 0)});
        lastWrite.assign(ubBytes, 0);
        lastRead.assign(ubBytes, Clock{});
        smallMmad = 0;
        current = -1;
        userFlags.assign(64 * 8, Flag{});
    }
};

// What the Cube's data movers left in a 32-byte block of L1, L0A, L0B or L0C: its element type
// and form, and the instruction that wrote it (opsdk_model_cube.h checks them where it reads).
enum class Form : uint8_t { None, ND, NZ, Acc };
struct CubeTag {
    const char* type = nullptr;
    Form form = Form::None;
    uint32_t instr = 0;
};

// A GM write of the current block: its argument, byte range and instruction (for the order of
// a later read by another pipe of the same block).
struct GmWriteRec {
    const GmArg* arg;
    uint64_t lo, hi;
    uint32_t instr;
};

// Per block (per thread) state.
struct Block {
    Launch* launch = nullptr;
    int64_t idx = 0;
    std::vector<uint8_t> ub;
    uint64_t ubUsed = 0;
    uint64_t cubeUsed[kMems] = {};  // bytes the TPipe gave out in each Cube memory
    uint32_t buffers = 0;
    bool pipeAlive = false;
    void* pipe = nullptr;  // the live AscendC::TPipe
    Pipes pipes;
    int atomic = 0;        // SetAtomicAdd (1), SetAtomicMax (2), SetAtomicMin (3) or none (0)
    uint8_t cmpMask[16] = {};  // the vector's CMPMASK register (128 bits): Compare without dstLocal
    bool padSet = false;   // the MTE2 pad register (set_mov_pad_val): SetPadValue, or a padding
    uint64_t padBits = 0;  // DataCopyPad; its bit code, low bytes first
    uint32_t accInstr = 0; // the ACC_VAL register (get_acc_val): the instruction that set it, or 0
    uint64_t accBits = 0;  // ... and its bits, the value in the low bytes
    std::vector<CubeTag> tags;  // per 32 bytes of the Cube's memories, from L1's base on
    // The Cube's load-3D registers: the feature map SetFmatrix (or a LoadData 3Dv2) described,
    // and the padding value SetLoadDataPaddingValue (or a LoadData 3Dv2) set; its bit code.
    bool fmatrixSet = false;
    uint16_t fmatrixH = 0, fmatrixW = 0;
    uint8_t fmatrixPad[4] = {};
    bool load3dPadSet = false;
    uint64_t load3dPadBits = 0;
    std::vector<uint8_t> unitFlagOf;  // per instruction: the unitFlag of a Mmad (0 otherwise)
    std::vector<GmWriteRec> gmWrites;
    int32_t syncAlls = 0;  // software SyncAll barriers passed
    // In a mixed launch: the core's id (unique in the launch), whether it is the block's Cube
    // core, its vector core index, GetBlockIdx's value, and the other cores' instructions (per
    // core, per pipe) ordered before what it issues next (cross-core flags, barriers).
    int32_t core = 0;
    bool aic = false;
    int32_t sub = 0;
    int64_t logical = -1;
    std::vector<std::pair<int32_t, Clock>> seen;
};

// Order of GM accesses within a block, across pipes (opsdk_model_pipes.h).
inline void GmOrder(const GmArg& a, uint64_t off, uint64_t n, bool write);
// ... and across the cores of a mixed launch (opsdk_model_mix.h); called with gmMutex held.
inline void CrossCoreGm(const std::string& api, GmArg& a, uint64_t off, uint64_t n, const void* src);

inline thread_local Block* tBlock = nullptr;


inline Block& Cur() {
    if (tBlock == nullptr) throw ModelError("Ascend C API called outside a kernel launch");
    return *tBlock;
}

// A block's local byte array covers the Unified Buffer until the kernel takes its first Cube
// buffer; then it grows to hold the Cube's memories too (kept small for vector kernels).
inline void GrowToCube(Block& b) {
    const uint64_t all = b.launch->LocalBytes();
    if (b.ub.size() >= all) return;
    b.ub.resize(all, 0xff);  // uninitialised: NaN
    b.pipes.lastWrite.resize(all, 0);
    b.pipes.lastRead.resize(all, Clock{});
    b.tags.assign((all - b.launch->ubBytes) / 32, CubeTag{});
}

// A core of a mixed launch has only its own memories (220's separated cores: the Cube core L1,
// L0A/L0B/L0C and the bias table, a vector core the Unified Buffer).
[[noreturn]] inline void Fail(const std::string& api, const std::string& what);
inline void CoreHasMemory(const Block& b, Mem m, const char* position) {
    if (b.launch->mixType < 0 || b.aic == (m != Mem::UB)) return;
    Fail("TPipe::InitBuffer", std::string("position ") + position + " is in the " + MemName(m) + ", which the " +
                                  (b.aic ? "Cube core (AIC)" : "vector core (AIV)") + " of a mixed kernel does not "
                                  "have (on __CCE_AICORE__ 220 the Cube core has L1, L0A, L0B, L0C and the bias "
                                  "table, a vector core the Unified Buffer): run this part under " +
                                  (b.aic ? "if ASCEND_IS_AIV" : "if ASCEND_IS_AIC"));
}

// Record that the current instruction wrote local bytes [at, at + n) of the Cube's memories as
// `type` data in `form` (nothing for the Unified Buffer).
inline void TagWrite(uint64_t at, uint64_t n, const char* type, Form form) {
    Block& b = Cur();
    if (at < b.launch->ubBytes || n == 0 || b.tags.empty()) return;
    const uint64_t first = (at - b.launch->ubBytes) / 32, last = (at + n - 1 - b.launch->ubBytes) / 32;
    const uint32_t me = b.pipes.current < 0 ? 0 : static_cast<uint32_t>(b.pipes.current);
    for (uint64_t k = first; k <= last && k < b.tags.size(); ++k) b.tags[k] = CubeTag{type, form, me};
}

// "kernel (block i of n)", in a mixed launch "kernel (block i of n, AIV s)".
inline std::string Who(const Block& b) {
    std::string core;
    if (b.launch->mixType >= 0) core = b.aic ? ", AIC" : ", AIV " + std::to_string(b.sub);
    return b.launch->kernel + " (block " + std::to_string(b.idx) + " of " + std::to_string(b.launch->blockNum) +
           core + ")";
}

[[noreturn]] inline void Fail(const std::string& api, const std::string& what) {
    Block* b = tBlock;
    std::string head = b ? Who(*b) : std::string("kernel");
    std::string at;  // the kernel's source line of the failing call, when the call records one
    if (b != nullptr && b->pipes.current > 0) {
        const Loc& l = b->pipes.instrs[static_cast<size_t>(b->pipes.current)].loc;
        const std::string f = l.file ? l.file : "";
        if (!f.empty() && f.find("opsdk_model_") == std::string::npos) {
            at = " [at " + f.substr(f.find_last_of('/') + 1) + ":" + std::to_string(l.line) + "]";
        }
    }
    throw ModelError(head + ": " + api + ": " + what + at);
}

inline std::string S(uint64_t v) { return std::to_string(v); }

// Select (and the chip's other users of TMP_UB_OFFSET) writes `bytes` of scratch at the fixed
// Unified Buffer offset TMP_UB_OFFSET, whatever the kernel keeps there: a TPipe whose buffers
// reach it is an error; otherwise the scratch is clobbered, as on the chip.
inline void ClobberScratch(const std::string& api, uint64_t bytes) {
    Block& b = Cur();
    const uint64_t at = OPSDK_TMP_UB_OFFSET;
    if (b.ubUsed > at) {
        Fail(api, "writes its " + S(bytes) + "-byte scratch at the fixed Unified Buffer offset TMP_UB_OFFSET = " +
                      S(at) + " (__CCE_AICORE__ = " + S(OPSDK_AICORE_ARCH) + "), inside the " + S(b.ubUsed) +
                      " bytes this TPipe's buffers take: that data would be overwritten. Keep every buffer below " +
                      S(at) + " bytes (reserve ubBytes - TMP_UB_OFFSET in the tiling)");
    }
    for (uint64_t i = at; i < at + bytes && i < b.ub.size(); ++i) b.ub[i] = 0xA5;
}

// Bytes of the tmp-buffer stack a high-level API without sharedTmpBuffer uses: the Unified
// Buffer from the end of the TPipe's buffers to GetEndAddress() (kernel_pop_stack_buffer.h).
inline uint64_t StackBytes() {
    Block& b = Cur();
    const uint64_t end = std::min<uint64_t>(OPSDK_UB_STACK_END, b.ub.size());
    return b.ubUsed < end ? end - b.ubUsed : 0;
}

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

// Set the MTE2 pad register to `value`'s bit code (SetPadValue, DataCopyPad with isPad).
template <typename T> inline void SetPadRegister(Block& b, T value) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "a pad value is at most 8 bytes");
    b.padBits = 0;
    std::memcpy(&b.padBits, &value, sizeof(T));
    b.padSet = true;
}

// GM bytes the current instruction moves, for the estimate.
inline void CountGm(Block& b, uint64_t n) {
    if (b.pipes.current < 0) return;
    Instr& i = b.pipes.instrs[static_cast<size_t>(b.pipes.current)];
    i.gm += n;
    ++i.bursts;
}

// Record a GM read: reading what another block wrote makes the result depend on block order.
inline void GmRead(const std::string& api, const void* p, uint64_t n) {
    if (n == 0) return;
    GmArg& a = FindGm(api, p, n, "reads");
    Block& b = Cur();
    CountGm(b, n);
    std::lock_guard<std::mutex> lock(b.launch->gmMutex);
    uint64_t off = static_cast<uint64_t>(static_cast<const uint8_t*>(p) - a.base);
    if (b.launch->mixType >= 0) CrossCoreGm(api, a, off, n, nullptr);
    for (uint64_t i = off; i < off + n && !a.writer.empty(); ++i) {
        int32_t w = a.writer[i];
        if (w >= 0 && w != b.idx) {
            Fail(api, "reads byte " + S(i) + " of GM argument '" + a.name +
                          "' that block " + std::to_string(w) +
                          " wrote: the result depends on the order of blocks, which run "
                          "concurrently on the NPU");
        }
    }
    GmOrder(a, off, n, false);
}

// Record a GM write of n bytes from src. Writing a byte another block wrote is a conflict,
// unless both wrote the same value (a tail tile that runs into the next block's range with
// the same data: benign on the chip, counted and reported as a warning with the bytes).
inline void GmWrite(const std::string& api, const void* p, uint64_t n, const void* src = nullptr) {
    if (n == 0) return;
    GmArg& a = FindGm(api, p, n, "writes");
    Block& b = Cur();
    CountGm(b, n);
    std::lock_guard<std::mutex> lock(b.launch->gmMutex);
    uint64_t off = static_cast<uint64_t>(static_cast<const uint8_t*>(p) - a.base);
    if (b.launch->mixType >= 0) {  // the cores' order is checked per write (opsdk_model_mix.h)
        CrossCoreGm(api, a, off, n, src);
        GmOrder(a, off, n, true);
        return;
    }
    if (a.writer.empty()) a.writer.assign(a.bytes, -1);
    for (uint64_t i = off; i < off + n; ++i) {
        int32_t w = a.writer[i];
        if (w >= 0 && w != b.idx) {
            const uint8_t* from = static_cast<const uint8_t*>(src);
            if (from != nullptr && from[i - off] == a.base[i]) {
                if (b.launch->sameValueBytes++ == 0) {
                    b.launch->sameValueFirst = "byte " + S(i) + " of GM argument '" + a.name + "' (blocks " +
                                               std::to_string(w) + " and " + std::to_string(b.idx) + ", by " + api + ")";
                }
                continue;
            }
            Fail(api, "writes byte " + S(i) + " of GM argument '" + a.name +
                          "' that block " + std::to_string(w) +
                          " also writes, with a different value: blocks must write disjoint ranges (the result "
                          "depends on which block runs last)");
        }
        a.writer[i] = static_cast<int32_t>(b.idx);
    }
    GmOrder(a, off, n, true);
}

}  // namespace opsdk_ascendc

namespace AscendC {
template <typename T, typename U> struct IsSameType {
    static constexpr bool value = std::is_same_v<T, U>;
};
}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_CORE_H
