// opsdk's CPU model of the Ascend C API: tensors, TPipe, TQue, TBuf and data movement.
#ifndef OPSDK_ASCENDC_MODEL_MEMORY_H
#define OPSDK_ASCENDC_MODEL_MEMORY_H

#include <deque>

#include "opsdk_model_core.h"
#include "opsdk_model_pipes.h"

namespace AscendC {

// basic_api/impl/kernel_event.h (the same order).
enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM,
    C2PIPE2GM, C2PIPE2LOCAL, MAX
};
using QuePosition = TPosition;

}  // namespace AscendC

namespace opsdk_ascendc {

enum class SlotState : uint8_t { Free, Allocated, Queued, Dequeued, Fixed };

// How an API touches an argument: 0 not recorded (a raw address), 1 reads, 2 writes.
inline int Direction(const char* api, const char* arg) {
    if (std::strcmp(arg, "tensor") == 0 || std::strcmp(arg, "offset") == 0) return 0;
    if (std::strcmp(arg, "index") == 0) return std::strstr(api, "SetValue") ? 2 : 1;
    if (std::strncmp(arg, "dst", 3) == 0 || std::strcmp(arg, "sharedTmpBuffer") == 0 ||
        std::strcmp(arg, "workLocal") == 0) {
        return 2;
    }
    return 1;
}

inline const char* StateName(SlotState s) {
    switch (s) {
        case SlotState::Free: return "freed (FreeTensor)";
        case SlotState::Allocated: return "allocated";
        case SlotState::Queued: return "queued (between EnQue and DeQue)";
        case SlotState::Dequeued: return "dequeued";
        default: return "a TBuf buffer";
    }
}

// One buffer of a TQue or TBuf in the Unified Buffer.
struct Slot {
    uint64_t offset = 0;
    uint64_t bytes = 0;
    uint32_t gen = 0;
    SlotState state = SlotState::Free;
    const void* owner = nullptr;
    AscendC::TPosition pos = AscendC::TPosition::VECCALC;
    Flag enqueued;  // set by EnQue on the queue's producer pipe, waited for by DeQue
    Flag freed;     // set by FreeTensor on the consumer pipe, waited for by the next AllocTensor
};

// The pipe that fills a queue's buffers and the one that drains them, by the queue's source
// and destination positions (kernel_tquebind_impl.h and kernel_event.h GetQueEvt: GM->VECIN is
// MTE2_V, VECOUT->GM is V_MTE3, VECIN->VECOUT (TQueBind) is MTE2_MTE3, VECCALC is V_V: no flag;
// the Cube's GM->A1/B1/C1 is MTE2_MTE1, A1->A2, B1->B2 and C1->C2 are MTE1_M, CO1->CO2 is M_FIX).
constexpr Pipe QueueProducer(AscendC::TPosition src, AscendC::TPosition) {
    using P = AscendC::TPosition;
    switch (src) {
        case P::VECIN: case P::A1: case P::B1: case P::C1: return Pipe::MTE2;
        case P::A2: case P::B2: case P::C2: return Pipe::MTE1;
        case P::CO1: return Pipe::M;
        case P::CO2: return Pipe::FIX;
        default: return Pipe::V;
    }
}
constexpr Pipe QueueConsumer(AscendC::TPosition src, AscendC::TPosition dst) {
    using P = AscendC::TPosition;
    switch (src) {
        case P::A1: case P::B1: case P::C1: return Pipe::MTE1;
        case P::A2: case P::B2: case P::C2: return Pipe::M;
        case P::CO1: return Pipe::FIX;
        case P::CO2: return Pipe::MTE3;
        default: return (dst == P::VECOUT && src != P::VECCALC) ? Pipe::MTE3 : Pipe::V;
    }
}

// The memory a position's buffers live in (kernel_event.h GetPhyType for __CCE_AICORE__ 220:
// A1/B1/C1 -> L1, A2 -> L0A, B2 -> L0B, C2 -> bias table, CO1 -> L0C; CO2 is GM there, and the
// Unified Buffer on 200). Mem::UB also for the positions the model has no Cube memory for.
constexpr Mem MemOfPosition(AscendC::TPosition pos) {
    using P = AscendC::TPosition;
    switch (pos) {
        case P::A1: case P::B1: case P::C1: case P::TSCM: return Mem::L1;
        case P::A2: return Mem::L0A;
        case P::B2: return Mem::L0B;
        case P::C2: return Mem::BT;
        case P::CO1: return Mem::L0C;
        default: return Mem::UB;
    }
}

inline const char* PositionName(AscendC::TPosition pos) {
    static const char* names[] = {"GM", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2", "VECIN", "VECOUT",
                                  "VECCALC", "SPM", "TSCM", "C2PIPE2GM", "C2PIPE2LOCAL", "MAX"};
    return names[static_cast<int>(pos)];
}

// The Unified Buffer range of a LocalTensor made from an address (no TPipe behind it): one
// descriptor per range and thread, kept for the thread's life so tensors may point at it.
inline Slot* RawSlot(uint64_t offset, uint64_t bytes) {
    thread_local std::deque<Slot> slots;
    for (Slot& s : slots) {
        if (s.offset == offset && s.bytes == bytes) return &s;
    }
    Slot s;
    s.offset = offset;
    s.bytes = bytes;
    s.state = SlotState::Fixed;
    slots.push_back(s);
    return &slots.back();
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T> class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;
    LocalTensor(opsdk_ascendc::Slot* slot, uint64_t byteOffset, uint32_t size)
        : slot_(slot), gen_(slot ? slot->gen : 0), byteOffset_(byteOffset), size_(size) {}
    // tileSize elements at Unified Buffer byte addr, outside any TPipe buffer. Newer than CANN
    // 8.1.RC1 (whose interface/kernel_tensor.h lacks it): asc-devkit's include/basic_api/
    // kernel_tensor.h, with CreateTensor's checks (impl/basic_api/kernel_tensor_impl.h).
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize) {
        const char* api = "LocalTensor(TPosition, addr, tileSize)";
        // the position's memory: the Unified Buffer, or one of the Cube's (A1 -> L1, A2 -> L0A, ...)
        const opsdk_ascendc::Mem mem = opsdk_ascendc::MemOfPosition(pos);
        opsdk_ascendc::Block& blk = opsdk_ascendc::Cur();
        const uint64_t bytes = opsdk_ascendc::BytesOf<T>(tileSize), ub = blk.launch->MemBytes(mem);
        if (pos == TPosition::GM || pos == TPosition::MAX) {
            opsdk_ascendc::Fail(api, "pos is GM or MAX; a LocalTensor lives in the Unified Buffer (VECIN, VECOUT, VECCALC)");
        }
        if (addr % opsdk_ascendc::kBlockBytes != 0) {
            opsdk_ascendc::Fail(api, "addr is " + opsdk_ascendc::S(addr) + "; it must be a multiple of 32 bytes");
        }
        if (tileSize == 0 || (opsdk_ascendc::kInt4<T> && tileSize % 2 != 0) || bytes % opsdk_ascendc::kBlockBytes != 0) {
            opsdk_ascendc::Fail(api, "tileSize is " + opsdk_ascendc::S(tileSize) + " " + opsdk_ascendc::TypeName<T>() +
                                         " elements = " + opsdk_ascendc::S(bytes) +
                                         " bytes; it must be above 0 and a multiple of 32 bytes");
        }
        if (addr + bytes > ub) {
            opsdk_ascendc::Fail(api, "addr " + opsdk_ascendc::S(addr) + " + " + opsdk_ascendc::S(bytes) +
                                         " bytes runs past the " + opsdk_ascendc::MemName(mem) + "'s " +
                                         opsdk_ascendc::S(ub) + " bytes");
        }
        if (mem != opsdk_ascendc::Mem::UB) opsdk_ascendc::GrowToCube(blk);
        slot_ = opsdk_ascendc::RawSlot(blk.launch->MemBase(mem) + addr, bytes);
        slot_->pos = mem == opsdk_ascendc::Mem::UB ? TPosition::VECCALC : pos;
        size_ = tileSize;
    }

    LocalTensor operator[](uint32_t offset) const {
        Check("LocalTensor::operator[]", "tensor");
        if (offset > size_) {
            opsdk_ascendc::Fail("LocalTensor::operator[]",
                                "offset " + opsdk_ascendc::S(offset) + " is past the tensor's " +
                                    opsdk_ascendc::S(size_) + " elements");
        }
        if (opsdk_ascendc::kInt4<T> && offset % 2 != 0) {
            opsdk_ascendc::Fail("LocalTensor::operator[]", "offset " + opsdk_ascendc::S(offset) +
                                                               " into a LocalTensor<int4b_t> must be even (two "
                                                               "elements to a byte)");
        }
        LocalTensor t(*this);
        t.byteOffset_ += opsdk_ascendc::BytesOf<T>(offset);
        t.size_ -= offset;
        return t;
    }
    uint32_t GetSize() const { return size_; }
    TPosition GetPosition() const { return slot_ ? slot_->pos : TPosition::VECCALC; }
    // The tensor's length in elements; it may grow past its buffer up to the end of the Unified
    // Buffer (basic_api/impl/kernel_tensor_impl.h: SetSize checks only that bound).
    void SetSize(const uint32_t size) {
        Check("LocalTensor::SetSize", "tensor");
        const opsdk_ascendc::Launch& L = *opsdk_ascendc::Cur().launch;
        const opsdk_ascendc::Mem mem = opsdk_ascendc::MemOfPosition(slot_->pos);
        const uint64_t ub = L.MemBase(mem) + L.MemBytes(mem), need = opsdk_ascendc::BytesOf<T>(size);
        if (UbAddr() + need > ub) {
            opsdk_ascendc::Fail("LocalTensor::SetSize", "size " + opsdk_ascendc::S(size) + " " +
                                                            opsdk_ascendc::TypeName<T>() + " elements = " +
                                                            opsdk_ascendc::S(need) + " bytes from " +
                                                            opsdk_ascendc::MemName(mem) + " byte " +
                                                            opsdk_ascendc::S(UbAddr() - L.MemBase(mem)) +
                                                            " run past its " + opsdk_ascendc::S(L.MemBytes(mem)) +
                                                            " bytes (buffer overflow)");
        }
        size_ = size;
    }
    T* GetPhyAddr() const { return reinterpret_cast<T*>(Span("LocalTensor::GetPhyAddr", "tensor", 0, 0)); }
    T* GetPhyAddr(const uint32_t offset) const {
        return reinterpret_cast<T*>(Span("LocalTensor::GetPhyAddr", "offset", offset, 0));
    }
    T GetValue(uint32_t i, opsdk_ascendc::Loc loc = {}) const {
        opsdk_ascendc::Issue is("LocalTensor::GetValue", opsdk_ascendc::Pipe::S, loc);
        return opsdk_ascendc::LoadAt<T>(Elem("LocalTensor::GetValue", i), opsdk_ascendc::kInt4<T> ? i % 2 : 0);
    }
    void SetValue(uint32_t i, T v, opsdk_ascendc::Loc loc = {}) const {
        opsdk_ascendc::Issue is("LocalTensor::SetValue", opsdk_ascendc::Pipe::SS, loc);
        opsdk_ascendc::StoreAt<T>(Elem("LocalTensor::SetValue", i), opsdk_ascendc::kInt4<T> ? i % 2 : 0, v);
    }
    template <typename U> LocalTensor<U> ReinterpretCast() const {
        Check("LocalTensor::ReinterpretCast", "tensor");
        LocalTensor<U> t(slot_, byteOffset_,
                         static_cast<uint32_t>(opsdk_ascendc::ElemsOf<U>(opsdk_ascendc::BytesOf<T>(size_))));
        return t;
    }

    // ---- model internals (not Ascend C API) ----
    void Check(const char* api, const char* arg) const {
        using opsdk_ascendc::SlotState;
        if (slot_ == nullptr) {
            opsdk_ascendc::Fail(api, std::string("argument ") + arg +
                                         " is an empty LocalTensor (not from AllocTensor/DeQue/Get)");
        }
        if (slot_->gen != gen_ || slot_->state == SlotState::Free) {
            opsdk_ascendc::Fail(api, std::string("argument ") + arg +
                                         " is used after FreeTensor; its buffer may hold another "
                                         "tensor now");
        }
        if (slot_->state == SlotState::Queued) {
            opsdk_ascendc::Fail(api, std::string("argument ") + arg +
                                         " is used between EnQue and DeQue; DeQue it first");
        }
    }
    // Checked pointer to elements [i, i + n) (n may exceed the tensor: that is the error); for
    // int4b_t, to the byte holding element i.
    uint8_t* Span(const char* api, const char* arg, uint64_t i, uint64_t n) const {
        Check(api, arg);
        if (i + n > size_) {
            opsdk_ascendc::Fail(api, std::string("argument ") + arg + ": accesses elements [" +
                                         opsdk_ascendc::S(i) + ", " + opsdk_ascendc::S(i + n) +
                                         ") of a LocalTensor<" + opsdk_ascendc::TypeName<T>() +
                                         "> of " + opsdk_ascendc::S(size_) + " elements");
        }
        CheckReach(api, arg);
        const uint64_t first = opsdk_ascendc::BytesOf<T>(i);
        const uint64_t end = opsdk_ascendc::kInt4<T> ? (i + n + 1) / 2 : opsdk_ascendc::BytesOf<T>(i + n);
        const int dir = opsdk_ascendc::Direction(api, arg);
        if (dir != 0) {
            opsdk_ascendc::Access(slot_->offset + byteOffset_ + first, end - first, dir == 2,
                                  opsdk_ascendc::Buffer{arg, slot_->offset, slot_->bytes,
                                                        slot_->state == opsdk_ascendc::SlotState::Fixed,
                                                        slot_->owner == nullptr});
        }
        return opsdk_ascendc::Cur().ub.data() + slot_->offset + byteOffset_ + first;
    }
    uint8_t* Elem(const char* api, uint64_t i) const { return Span(api, "index", i, 1); }
    // The vector and scalar units and MTE3 reach the Unified Buffer only; the Cube's memories are
    // reached by MTE2 (GM -> L1), MTE1, M and FIX.
    void CheckReach(const char* api, const char* arg) const {
        const opsdk_ascendc::Mem m = opsdk_ascendc::MemOfPosition(slot_->pos);
        const opsdk_ascendc::Block* b = opsdk_ascendc::tBlock;
        if (m == opsdk_ascendc::Mem::UB || b == nullptr || b->pipes.current < 0) return;
        const opsdk_ascendc::Pipe p = b->pipes.instrs[static_cast<size_t>(b->pipes.current)].pipe;
        using opsdk_ascendc::Pipe;
        if (p == Pipe::V || p == Pipe::S || p == Pipe::SS || p == Pipe::MTE3) {
            opsdk_ascendc::Fail(api, std::string("argument ") + arg + " is a tensor of position " +
                                         opsdk_ascendc::PositionName(slot_->pos) + " (" + opsdk_ascendc::MemName(m) +
                                         "), which pipe " + opsdk_ascendc::PipeName(p) +
                                         " cannot reach: the vector and scalar units work on the Unified Buffer "
                                         "(VECIN, VECOUT, VECCALC) only");
        }
    }
    uint64_t UbAddr() const { return slot_ ? slot_->offset + byteOffset_ : 0; }
    void CheckAligned(const char* api, const char* arg) const {
        Check(api, arg);
        if (UbAddr() % opsdk_ascendc::kBlockBytes != 0) {
            opsdk_ascendc::Fail(api, std::string("argument ") + arg + " starts at Unified Buffer byte " +
                                         opsdk_ascendc::S(UbAddr()) +
                                         ", which is not 32-byte aligned (offsets into a "
                                         "LocalTensor must be multiples of 32 bytes)");
        }
    }
    opsdk_ascendc::Slot* slot_ = nullptr;
    uint32_t gen_ = 0;
    uint64_t byteOffset_ = 0;
    uint32_t size_ = 0;
};

// The L2 cache policy of a GlobalTensor's accesses (basic_api/impl/utils/kernel_utils_macros.h).
enum class CacheMode { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1, CACHE_MODE_LAST = 2, CACHE_MODE_PERSISTENT = 4 };
enum class CacheRwMode { READ = 1, WRITE = 2, RW = 3 };

template <typename T> class GlobalTensor {
public:
    using PrimType = T;
    // A hint for the L2 cache; the model has no L2, so it only checks the mode and keeps it.
    template <CacheRwMode rwMode = CacheRwMode::RW> void SetL2CacheHint(CacheMode mode) {
        const int m = static_cast<int>(mode);
        if (m != 0 && m != 1 && m != 2 && m != 4) {
            opsdk_ascendc::Fail("GlobalTensor::SetL2CacheHint", "mode is " + std::to_string(m) +
                                                                    "; expected a CacheMode: CACHE_MODE_DISABLE (0), "
                                                                    "CACHE_MODE_NORMAL (1), CACHE_MODE_LAST (2) or "
                                                                    "CACHE_MODE_PERSISTENT (4)");
        }
        cacheMode_ = mode;
    }
    CacheMode cacheMode_ = CacheMode::CACHE_MODE_NORMAL;
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) {
        ptr_ = buffer;
        size_ = bufferSize;
    }
    void SetGlobalBuffer(__gm__ T* buffer) {
        ptr_ = buffer;
        size_ = UINT64_MAX / sizeof(T);
    }
    GlobalTensor operator[](uint64_t offset) const {
        if (opsdk_ascendc::kInt4<T> && offset % 2 != 0) {
            opsdk_ascendc::Fail("GlobalTensor::operator[]", "offset " + opsdk_ascendc::S(offset) +
                                                                " into a GlobalTensor<int4b_t> must be even (two "
                                                                "elements to a byte)");
        }
        GlobalTensor t(*this);
        t.ptr_ = ptr_ + (opsdk_ascendc::kInt4<T> ? offset / 2 : offset);
        t.size_ = size_ >= offset ? size_ - offset : 0;
        return t;
    }
    uint64_t GetSize() const { return size_; }
    __gm__ T* GetPhyAddr() const { return ptr_; }
    T GetValue(uint64_t i, opsdk_ascendc::Loc loc = {}) const {
        opsdk_ascendc::Issue is("GlobalTensor::GetValue", opsdk_ascendc::Pipe::S, loc);
        static_assert(!opsdk_ascendc::kInt4<T>, "GlobalTensor<int4b_t>::GetValue is not modelled by opsdk");
        opsdk_ascendc::GmRead("GlobalTensor::GetValue", ptr_ + i, sizeof(T));
        return ptr_[i];
    }
    void SetValue(uint64_t i, T v, opsdk_ascendc::Loc loc = {}) const {
        opsdk_ascendc::Issue is("GlobalTensor::SetValue", opsdk_ascendc::Pipe::S, loc);
        static_assert(!opsdk_ascendc::kInt4<T>, "GlobalTensor<int4b_t>::SetValue is not modelled by opsdk");
        opsdk_ascendc::GmWrite("GlobalTensor::SetValue", ptr_ + i, sizeof(T), &v);
        ptr_[i] = v;
    }
    T* ptr_ = nullptr;
    uint64_t size_ = 0;
};

class TPipe;
// basic_api/impl/kernel_event.h (the same order; SRC_DST).
enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1, MTE1_MTE3,
    MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S,
    MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, FIX_FIX, MAX
};
}  // namespace AscendC

// Event ids and pipes are global names, as the compiler's builtins and CPU-debug's
// tools/tikicpulib/lib/include/stub_fun.h declare them (EVENT_ID4..7 for __CCE_AICORE__ >= 200).
enum event_t : int32_t {
    EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3,
#if OPSDK_AICORE_ARCH >= 200
    EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7,
#endif
};
enum pipe_t : uint8_t {
    PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4 = 7, PIPE_MTE5 = 8,
    PIPE_V2 = 9, PIPE_FIX = 10
};

namespace AscendC {

template <TPosition POS, int32_t DEPTH = 1, TPosition DST = POS> class TQue {
public:
    static_assert(DEPTH >= 1, "TQue depth must be at least 1");
    static constexpr opsdk_ascendc::Pipe kProducer = opsdk_ascendc::QueueProducer(POS, DST);
    static constexpr opsdk_ascendc::Pipe kConsumer = opsdk_ascendc::QueueConsumer(POS, DST);
    static constexpr bool kSynced = kProducer != kConsumer;
    template <typename T> LocalTensor<T> AllocTensor(opsdk_ascendc::Loc loc = {}) {
        Ready("TQue::AllocTensor");
        // the buffers in turn, from the one after the last allocated (TQueBind::AllocBuffer's
        // bufCursor, basic_api/impl/kernel_tquebind_impl.h)
        for (uint32_t k = 0; k < num_; ++k) {
            const uint32_t i = (cursor_ + k) % num_;
            opsdk_ascendc::Slot& s = slots_[i];
            if (s.state == opsdk_ascendc::SlotState::Free) {
                cursor_ = (i + 1) % num_;
                s.state = opsdk_ascendc::SlotState::Allocated;
                opsdk_ascendc::TagWrite(s.offset, s.bytes, nullptr, opsdk_ascendc::Form::None);
                if (kSynced && s.freed.set) {
                    opsdk_ascendc::WaitFlagOn(s.freed, kProducer, "TQue::AllocTensor", loc, "the buffer's free");
                }
                return LocalTensor<T>(&s, 0, static_cast<uint32_t>(opsdk_ascendc::ElemsOf<T>(s.bytes)));
            }
        }
        opsdk_ascendc::Fail("TQue::AllocTensor",
                            "all " + opsdk_ascendc::S(num_) +
                                " buffers of the queue are in use (InitBuffer gave it num=" +
                                opsdk_ascendc::S(num_) + "); FreeTensor one first");
    }
    template <typename T> bool EnQue(const LocalTensor<T>& t, opsdk_ascendc::Loc loc = {}) {
        Ready("TQue::EnQue");
        t.Check("TQue::EnQue", "tensor");
        Own("TQue::EnQue", t.slot_);
        if (t.slot_->state != opsdk_ascendc::SlotState::Allocated) {
            opsdk_ascendc::Fail("TQue::EnQue", std::string("the tensor is ") +
                                                   opsdk_ascendc::StateName(t.slot_->state) +
                                                   "; only a tensor from AllocTensor can be queued");
        }
        if (count_ >= static_cast<uint32_t>(DEPTH)) {
            opsdk_ascendc::Fail("TQue::EnQue", "the queue already holds " + opsdk_ascendc::S(count_) +
                                                   " tensors, its depth (template argument) is " +
                                                   opsdk_ascendc::S(DEPTH) + "; DeQue first");
        }
        if (kSynced) opsdk_ascendc::SetFlagOn(t.slot_->enqueued, kProducer, "TQue::EnQue", loc, "the queue's EnQue flag");
        t.slot_->state = opsdk_ascendc::SlotState::Queued;
        fifo_[(head_ + count_) % kMax] = t.slot_;
        ++count_;
        return true;
    }
    template <typename T> LocalTensor<T> DeQue(opsdk_ascendc::Loc loc = {}) {
        Ready("TQue::DeQue");
        if (count_ == 0) {
            opsdk_ascendc::Fail("TQue::DeQue", "the queue is empty: DeQue without a matching EnQue");
        }
        opsdk_ascendc::Slot* s = fifo_[head_];
        head_ = (head_ + 1) % kMax;
        --count_;
        s->state = opsdk_ascendc::SlotState::Dequeued;
        if (kSynced) opsdk_ascendc::WaitFlagOn(s->enqueued, kConsumer, "TQue::DeQue", loc, "the queue's EnQue flag");
        return LocalTensor<T>(s, 0, static_cast<uint32_t>(opsdk_ascendc::ElemsOf<T>(s->bytes)));
    }
    template <typename T> void FreeTensor(const LocalTensor<T>& t, opsdk_ascendc::Loc loc = {}) {
        Ready("TQue::FreeTensor");
        t.Check("TQue::FreeTensor", "tensor");
        Own("TQue::FreeTensor", t.slot_);
        if (kSynced && t.slot_->state != opsdk_ascendc::SlotState::Allocated) {
            opsdk_ascendc::SetFlagOn(t.slot_->freed, kConsumer, "TQue::FreeTensor", loc, "the buffer's free");
        } else if (kSynced) {
            // freed without a trip through the queue: the producer pipe was its last user
            opsdk_ascendc::SetFlagOn(t.slot_->freed, kProducer, "TQue::FreeTensor", loc, "the buffer's free");
        }
        t.slot_->state = opsdk_ascendc::SlotState::Free;
        ++t.slot_->gen;
    }
    bool VacantInQue() const { return count_ < static_cast<uint32_t>(DEPTH); }
    bool HasTensorInQue() const { return count_ > 0; }

    // ---- model internals ----
    static constexpr uint32_t kMax = 16;
    void Ready(const char* api) const {
        if (num_ == 0) opsdk_ascendc::Fail(api, "the queue has no buffers: call TPipe::InitBuffer first");
    }
    void Own(const char* api, const opsdk_ascendc::Slot* s) const {
        if (s->owner != this) opsdk_ascendc::Fail(api, "the tensor belongs to another queue or TBuf");
    }
    opsdk_ascendc::Slot slots_[kMax];
    opsdk_ascendc::Slot* fifo_[kMax] = {};
    uint32_t num_ = 0, head_ = 0, count_ = 0, cursor_ = 0;
};

// TQueBind<src, dst, depth>: a queue from one position to another (TQue<pos> is one of these
// in the real headers); its flags are those of src -> dst (VECIN -> VECOUT: MTE2_MTE3).
template <TPosition SRC, TPosition DST, int32_t DEPTH, auto MASK = 0> class TQueBind : public TQue<SRC, DEPTH, DST> {};

template <TPosition POS = TPosition::VECCALC> class TBuf {
public:
    template <typename T> LocalTensor<T> Get() {
        Ready("TBuf::Get");
        return LocalTensor<T>(&slot_, 0, static_cast<uint32_t>(opsdk_ascendc::ElemsOf<T>(slot_.bytes)));
    }
    template <typename T> LocalTensor<T> Get(uint32_t len) {
        Ready("TBuf::Get");
        if (opsdk_ascendc::BytesOf<T>(len) > slot_.bytes) {
            opsdk_ascendc::Fail("TBuf::Get", "len " + opsdk_ascendc::S(len) + " " +
                                                 opsdk_ascendc::TypeName<T>() + " elements need " +
                                                 opsdk_ascendc::S(opsdk_ascendc::BytesOf<T>(len)) +
                                                 " bytes; InitBuffer gave this TBuf " +
                                                 opsdk_ascendc::S(slot_.bytes));
        }
        return LocalTensor<T>(&slot_, 0, len);
    }
    template <typename T> LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) {
        Ready("TBuf::GetWithOffset");
        if (bufOffset % opsdk_ascendc::kBlockBytes != 0 ||
            bufOffset + opsdk_ascendc::BytesOf<T>(size) > slot_.bytes) {
            opsdk_ascendc::Fail("TBuf::GetWithOffset",
                                "bufOffset " + opsdk_ascendc::S(bufOffset) + " + " +
                                    opsdk_ascendc::S(opsdk_ascendc::BytesOf<T>(size)) +
                                    " bytes must be 32-byte aligned and within the TBuf's " +
                                    opsdk_ascendc::S(slot_.bytes) + " bytes");
        }
        return LocalTensor<T>(&slot_, bufOffset, size);
    }
    void Ready(const char* api) const {
        if (slot_.bytes == 0) opsdk_ascendc::Fail(api, "the TBuf has no memory: call TPipe::InitBuffer first");
    }
    opsdk_ascendc::Slot slot_;
};

class TPipe {
public:
    TPipe() {
        opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
        if (b.pipeAlive) opsdk_ascendc::Fail("TPipe", "a second TPipe while one is alive; use one TPipe per kernel");
        b.pipeAlive = true;
        b.pipe = this;
        b.ubUsed = 0;
        b.buffers = 0;
    }
    ~TPipe() {
        if (opsdk_ascendc::tBlock && opsdk_ascendc::tBlock->pipe == this) {
            opsdk_ascendc::tBlock->pipeAlive = false;
            opsdk_ascendc::tBlock->pipe = nullptr;
        }
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <TPosition POS, int32_t DEPTH, TPosition DST>
    bool InitBuffer(TQue<POS, DEPTH, DST>& que, uint8_t num, uint32_t len) {
        if (num == 0 || num > TQue<POS, DEPTH, DST>::kMax) {
            opsdk_ascendc::Fail("TPipe::InitBuffer", "num is " + opsdk_ascendc::S(num) +
                                                         "; a queue takes 1 (single) or 2 (double "
                                                         "buffering) buffers, at most 16");
        }
        if (que.num_ != 0) opsdk_ascendc::Fail("TPipe::InitBuffer", "the queue was already initialised");
        Fits(POS, num, len);
        for (uint32_t i = 0; i < num; ++i) {
            que.slots_[i] = Take("TPipe::InitBuffer", len, &que, POS);
        }
        que.num_ = num;
        return true;
    }
    template <TPosition POS> bool InitBuffer(TBuf<POS>& buf, uint32_t len) {
        if (buf.slot_.bytes != 0) opsdk_ascendc::Fail("TPipe::InitBuffer", "the TBuf was already initialised");
        Fits(POS, 1, len);
        buf.slot_ = Take("TPipe::InitBuffer", len, &buf, POS);
        buf.slot_.state = opsdk_ascendc::SlotState::Fixed;
        return true;
    }
    // The lowest event id of `evt` no SetFlag holds (kernel_tpipe_impl.h FetchEventID).
    int32_t FetchEventID(HardEvent evt);
    template <HardEvent evt> int32_t FetchEventID() { return FetchEventID(evt); }
    template <HardEvent evt> int32_t AllocEventID() { return FetchEventID(evt); }
    template <HardEvent evt> void ReleaseEventID(int32_t) {}
    void Reset() {
        opsdk_ascendc::Cur().ubUsed = 0;
        opsdk_ascendc::Cur().buffers = 0;
        for (uint64_t& u : opsdk_ascendc::Cur().cubeUsed) u = 0;
    }
    // Releases every buffer and ends the pipe (kernel_tpipe_impl.h: isDestroy): it hands out no
    // buffers after it, and a second TPipe may then be made.
    void Destroy() {
        if (destroyed_) return;
        Reset();
        destroyed_ = true;
        opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
        if (b.pipe == this) {
            b.pipeAlive = false;
            b.pipe = nullptr;
        }
    }

private:
    bool destroyed_ = false;
    // A position's `num` buffers of `len` bytes must fit what is left of its Cube memory (the
    // Unified Buffer's own check is per buffer, in Take).
    static void Fits(TPosition pos, uint32_t num, uint32_t len) {
        using opsdk_ascendc::S;
        opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
        const opsdk_ascendc::Mem m = opsdk_ascendc::MemOfPosition(pos);
        const bool unified = pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::VECCALC;
        if (m == opsdk_ascendc::Mem::UB && !unified) {
            opsdk_ascendc::Fail("TPipe::InitBuffer", std::string("position ") + opsdk_ascendc::PositionName(pos) +
                                " has no buffer memory in opsdk's model of __CCE_AICORE__ " + S(OPSDK_AICORE_ARCH) +
                                " (CO2 is GM there, kernel_event.h GetPhyType; the model has VECIN, VECOUT, "
                                "VECCALC, A1, B1, C1 (L1), A2 (L0A), B2 (L0B), C2 (bias table) and CO1 (L0C))");
        }
        opsdk_ascendc::CoreHasMemory(b, m, opsdk_ascendc::PositionName(pos));
        if (m == opsdk_ascendc::Mem::UB) return;
        const uint64_t asked = uint64_t(num) * ((uint64_t(len) + 31) / 32 * 32);
        const uint64_t cap = b.launch->MemBytes(m), used = b.cubeUsed[static_cast<int>(m)];
        if (used + asked > cap) {
            opsdk_ascendc::Fail(
                "TPipe::InitBuffer",
                std::string("position ") + opsdk_ascendc::PositionName(pos) + " asks for " + S(num) + " x " + S(len) +
                    " = " + S(asked) + " bytes of " + opsdk_ascendc::MemName(m) + ", but " + OPSDK_SOC_VERSION +
                    "'s " + opsdk_ascendc::MemName(m) + " holds " + S(cap) + " bytes (" + opsdk_ascendc::MemSizeKey(m) +
                    " in its platform_config .ini) and " + S(used) + " are taken: " + S(cap - used) +
                    " bytes available. Make the tiles smaller" + (num > 1 ? " or give up double buffering" : ""));
        }
    }
    opsdk_ascendc::Slot Take(const char* api, uint32_t len, const void* owner, TPosition pos) {
        opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
        if (destroyed_) opsdk_ascendc::Fail(api, "the TPipe was destroyed (TPipe::Destroy); it hands out no buffers");
        if (len == 0) opsdk_ascendc::Fail(api, "len is 0 bytes; a buffer needs at least 32 bytes");
        uint64_t bytes = (static_cast<uint64_t>(len) + 31) / 32 * 32;
        if (b.buffers + 1 > opsdk_ascendc::kMaxBuffers) {
            opsdk_ascendc::Fail(api, "more than " + opsdk_ascendc::S(opsdk_ascendc::kMaxBuffers) +
                                         " buffers in one TPipe");
        }
        const opsdk_ascendc::Mem mem = opsdk_ascendc::MemOfPosition(pos);
        if (mem != opsdk_ascendc::Mem::UB) {
            opsdk_ascendc::Slot s;
            opsdk_ascendc::GrowToCube(b);
            s.offset = b.launch->MemBase(mem) + b.cubeUsed[static_cast<int>(mem)];
            s.bytes = bytes;
            s.owner = owner;
            s.pos = pos;
            b.cubeUsed[static_cast<int>(mem)] += bytes;
            ++b.buffers;
            return s;
        }
        if (b.ubUsed + bytes > b.launch->ubBytes) {
            opsdk_ascendc::Fail(api, "a buffer of " + opsdk_ascendc::S(bytes) + " bytes does not fit: " +
                                         opsdk_ascendc::S(b.ubUsed) + " of the Unified Buffer's " +
                                         opsdk_ascendc::S(b.launch->ubBytes) + " bytes (" +
                                         b.launch->soc + ") are taken; make the tiles smaller");
        }
        opsdk_ascendc::Slot s;
        s.offset = b.ubUsed;
        s.bytes = bytes;
        s.owner = owner;
        s.pos = pos;
        b.ubUsed += bytes;
        ++b.buffers;
        return s;
    }
};

inline TPipe* GetTPipePtr() {
    void* p = opsdk_ascendc::Cur().pipe;
    if (p == nullptr) opsdk_ascendc::Fail("GetTPipePtr", "no TPipe is alive in this kernel");
    return static_cast<TPipe*>(p);
}

}  // namespace AscendC

using AscendC::GetTPipePtr;  // CANN's kernels call it unqualified, outside AscendC too

namespace AscendC {

// In a mixed kernel a vector core counts as GetBlockIdx() = block * GetTaskRation() + GetSubBlockIdx()
// (dav_c220/kernel_operator_common_impl.h GetBlockIdxImpl).
inline int64_t GetBlockIdx() {
    const opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    return b.logical >= 0 ? b.logical : b.idx;
}
inline int64_t GetBlockNum() { return opsdk_ascendc::Cur().launch->blockNum; }

}  // namespace AscendC

// The block's index and the launch's block count as kernels read them outside AscendC: the
// compiler's builtins (ccec_compiler's __clang_cce_aicore_builtin_vars.h: #define block_idx
// get_block_idx(), #define block_num get_block_num()) and CPU-debug's (tools/tikicpulib/lib/
// include/stub_fun.h: int64_t get_block_idx(), get_block_num()).
inline int64_t get_block_idx() { return opsdk_ascendc::Cur().idx; }
inline int64_t get_block_num() { return opsdk_ascendc::Cur().launch->blockNum; }
#define block_idx get_block_idx()
#define block_num get_block_num()

namespace AscendC {

// Synchronisation between pipes (opsdk_model_pipes.h): SetFlag/WaitFlag per HardEvent and
// event id, PipeBarrier<PIPE_ALL>. A pipe runs its own instructions in order, so
// PipeBarrier of one pipe orders nothing the model does not already order, except
// PipeBarrier<PIPE_M>: the Cube needs it after a small Mmad (opsdk_model_cube.h).
using TEventID = int32_t;
template <pipe_t P> inline void PipeBarrier(opsdk_ascendc::Loc loc = {}) {
    if constexpr (P == PIPE_ALL) opsdk_ascendc::BarrierAll(loc);
    if constexpr (P == PIPE_ALL || P == PIPE_M) opsdk_ascendc::Cur().pipes.smallMmad = 0;
}

}  // namespace AscendC

namespace opsdk_ascendc {

constexpr int kEventIds = 8;
inline std::pair<Pipe, Pipe> EventPipes(AscendC::HardEvent e) {
    using AscendC::HardEvent;
    static const std::pair<Pipe, Pipe> pipes[] = {
        {Pipe::MTE2, Pipe::MTE1}, {Pipe::MTE1, Pipe::MTE2}, {Pipe::MTE1, Pipe::M}, {Pipe::M, Pipe::MTE1},
        {Pipe::MTE2, Pipe::V}, {Pipe::V, Pipe::MTE2}, {Pipe::MTE3, Pipe::V}, {Pipe::V, Pipe::MTE3},
        {Pipe::M, Pipe::V}, {Pipe::V, Pipe::M}, {Pipe::V, Pipe::V}, {Pipe::MTE3, Pipe::MTE1},
        {Pipe::MTE1, Pipe::MTE3}, {Pipe::MTE1, Pipe::V}, {Pipe::MTE2, Pipe::M}, {Pipe::M, Pipe::MTE2},
        {Pipe::V, Pipe::MTE1}, {Pipe::M, Pipe::FIX}, {Pipe::FIX, Pipe::M}, {Pipe::MTE3, Pipe::MTE2},
        {Pipe::MTE2, Pipe::MTE3}, {Pipe::S, Pipe::V}, {Pipe::V, Pipe::S}, {Pipe::S, Pipe::MTE2},
        {Pipe::MTE2, Pipe::S}, {Pipe::S, Pipe::MTE3}, {Pipe::MTE3, Pipe::S}, {Pipe::MTE2, Pipe::FIX},
        {Pipe::FIX, Pipe::MTE2}, {Pipe::FIX, Pipe::S}, {Pipe::M, Pipe::S}, {Pipe::FIX, Pipe::MTE3},
        {Pipe::MTE1, Pipe::FIX}, {Pipe::FIX, Pipe::MTE1}, {Pipe::FIX, Pipe::FIX},
    };
    static_assert(sizeof(pipes) / sizeof(pipes[0]) == static_cast<size_t>(HardEvent::MAX));
    if (e >= HardEvent::MAX) Fail("SetFlag/WaitFlag", "HardEvent::MAX is not an event");
    return pipes[static_cast<int>(e)];
}

inline Flag& UserFlag(const char* api, AscendC::HardEvent e, int32_t id) {
    if (id < 0 || id >= kEventIds) {
        Fail(api, "event id " + std::to_string(id) + " is out of range; the chip has ids 0 to " +
                      std::to_string(kEventIds - 1) + " per HardEvent (QUE_MAX_EVENT)");
    }
    return Cur().pipes.userFlags[static_cast<int>(e) * kEventIds + id];
}

inline std::string EventName(AscendC::HardEvent e, int32_t id) {
    auto pp = EventPipes(e);
    return "HardEvent::" + HardEventName(pp.first, pp.second) + " event id " + std::to_string(id);
}

}  // namespace opsdk_ascendc

namespace AscendC {

inline int32_t TPipe::FetchEventID(HardEvent evt) {
    for (int32_t id = 0; id < opsdk_ascendc::kEventIds; ++id) {
        if (!opsdk_ascendc::UserFlag("TPipe::FetchEventID", evt, id).set) return id;
    }
    opsdk_ascendc::Fail("TPipe::FetchEventID", "all " + std::to_string(opsdk_ascendc::kEventIds) + " event ids of " +
                                                   opsdk_ascendc::EventName(evt, 0) + ".." +
                                                   std::to_string(opsdk_ascendc::kEventIds - 1) +
                                                   " are set and not yet waited for");
}

template <HardEvent E> inline void SetFlag(int32_t id, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::SetFlagOn(opsdk_ascendc::UserFlag("SetFlag", E, id), opsdk_ascendc::EventPipes(E).first,
                             "SetFlag", loc, opsdk_ascendc::EventName(E, id));
}
template <HardEvent E> inline void WaitFlag(int32_t id, opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::WaitFlagOn(opsdk_ascendc::UserFlag("WaitFlag", E, id), opsdk_ascendc::EventPipes(E).second,
                              "WaitFlag", loc, opsdk_ascendc::EventName(E, id));
}

// ---------------------------------------------------------------- data movement
struct DataCopyParams {
    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
};

struct DataCopyExtParams {
    DataCopyExtParams() = default;
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn, uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

template <typename T> struct DataCopyPadExtParams {
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T();
};

}  // namespace AscendC

namespace opsdk_ascendc {

// A copy UB -> GM of n elements: a plain store, or with SetAtomicAdd/Max/Min an atomic
// read-modify-write (several blocks may then write the same bytes: that is what atomics are for).
template <typename T> inline void StoreGm(const char* api, T* g, const uint8_t* s, uint64_t n) {
    Block& b = Cur();
    if (b.atomic == 0) {
        GmWrite(api, g, n * sizeof(T), s);
        std::memcpy(g, s, n * sizeof(T));
        return;
    }
    if constexpr (OneOfT<T, half, float, int32_t, int16_t, int8_t, bfloat16_t>) {
        FindGm(api, g, n * sizeof(T), "writes");
        std::lock_guard<std::mutex> lock(b.launch->gmMutex);
        for (uint64_t i = 0; i < n; ++i) {
            T v;
            std::memcpy(&v, s + i * sizeof(T), sizeof(T));
            const double a = double(ToF(g[i])), c = double(ToF(v));
            const double r = b.atomic == 1 ? a + c : b.atomic == 2 ? std::max(a, c) : std::min(a, c);
            g[i] = FromF<T>(static_cast<float>(r));
        }
    } else {
        Fail(api, std::string("an atomic copy of ") + TypeName<T>() + " (SetAtomicAdd/Max/Min take half, float, "
                                                                      "bfloat16_t, int32_t, int16_t, int8_t)");
    }
}

template <typename T> inline void CheckCopyCount(const char* api, uint64_t count) {
    if (BytesOf<T>(count) % kBlockBytes != 0 || (kInt4<T> && count % 2 != 0)) {
        Fail(api, "calCount is " + S(count) + " " + TypeName<T>() + " elements = " +
                      S(BytesOf<T>(count)) +
                      " bytes; it must be a multiple of 32 bytes (use DataCopyPad for a tail)");
    }
}

// The bias table (C2) is filled from L1 only (the platform's intrinsics list data_move_l12bt).
inline void RefuseGmToBiasTable(AscendC::TPosition pos) {
    if (pos == AscendC::TPosition::C2) {
        Fail("DataCopy", "dstLocal is in C2 (the bias table), which is filled from L1 only (data_move_l12bt): copy "
                         "the bias GM -> C1 first, then DataCopy C1 -> C2");
    }
}

inline void CheckBlocks(const char* api, uint64_t count, uint64_t len, uint64_t lenMax) {
    if (count == 0 || count > 4095) Fail(api, "blockCount is " + S(count) + "; expected 1 to 4095");
    if (len == 0 || len > lenMax) Fail(api, "blockLen is " + S(len) + "; expected 1 to " + S(lenMax));
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t calCount,
                     opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("DataCopy", opsdk_ascendc::Pipe::MTE2, loc);
    opsdk_ascendc::RefuseGmToBiasTable(dst.GetPosition());
    opsdk_ascendc::CheckCopyCount<T>("DataCopy", calCount);
    dst.CheckAligned("DataCopy", "dstLocal");
    uint8_t* d = dst.Span("DataCopy", "dstLocal", 0, calCount);
    opsdk_ascendc::TagWrite(dst.UbAddr(), opsdk_ascendc::BytesOf<T>(calCount), opsdk_ascendc::TypeName<T>(),
                            opsdk_ascendc::Form::ND);
    opsdk_ascendc::GmRead("DataCopy", src.ptr_, opsdk_ascendc::BytesOf<T>(calCount));
    std::memcpy(d, src.ptr_, opsdk_ascendc::BytesOf<T>(calCount));
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount,
                     opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("DataCopy", opsdk_ascendc::Pipe::MTE3, loc);
    opsdk_ascendc::CheckCopyCount<T>("DataCopy", calCount);
    src.CheckAligned("DataCopy", "srcLocal");
    uint8_t* s = src.Span("DataCopy", "srcLocal", 0, calCount);
    opsdk_ascendc::StoreGm<T>("DataCopy", dst.ptr_, s, opsdk_ascendc::kInt4<T> ? calCount / 2 : calCount);
}

}  // namespace AscendC

namespace opsdk_ascendc {
// L1 -> the bias table (C2), on MTE1 (opsdk_model_cube_more.h).
template <typename D, typename S>
void CopyToBiasTable(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src,
                     const AscendC::DataCopyParams& p, Loc loc);
template <typename D, typename S>
void CopyToBiasTable(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src, uint32_t count, Loc loc);
}  // namespace opsdk_ascendc

namespace AscendC {

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount,
                     opsdk_ascendc::Loc loc = {}) {
    if (dst.GetPosition() == TPosition::C2) return opsdk_ascendc::CopyToBiasTable(dst, src, calCount, loc);
    opsdk_ascendc::Issue is("DataCopy", opsdk_ascendc::Pipe::V, loc);
    opsdk_ascendc::CheckCopyCount<T>("DataCopy", calCount);
    dst.CheckAligned("DataCopy", "dstLocal");
    src.CheckAligned("DataCopy", "srcLocal");
    std::memmove(dst.Span("DataCopy", "dstLocal", 0, calCount),
                 src.Span("DataCopy", "srcLocal", 0, calCount), opsdk_ascendc::BytesOf<T>(calCount));
}

// DataCopyParams form: blockLen and strides in 32-byte blocks on both sides.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                     opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("DataCopy", opsdk_ascendc::Pipe::MTE2, loc);
    opsdk_ascendc::RefuseGmToBiasTable(dst.GetPosition());
    static_assert(!opsdk_ascendc::kInt4<T>, "DataCopy of int4b_t is modelled in the count form only");
    opsdk_ascendc::CheckBlocks("DataCopy", p.blockCount, p.blockLen, 65535);
    dst.CheckAligned("DataCopy", "dstLocal");
    const uint64_t e = 32 / sizeof(T), len = p.blockLen * e;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        const T* g = src.ptr_ + i * (p.blockLen + p.srcStride) * e;
        uint8_t* d = dst.Span("DataCopy", "dstLocal", i * (p.blockLen + p.dstStride) * e, len);
        opsdk_ascendc::TagWrite(dst.UbAddr() + i * (p.blockLen + p.dstStride) * 32, len * sizeof(T),
                                opsdk_ascendc::TypeName<T>(), opsdk_ascendc::Form::ND);
        opsdk_ascendc::GmRead("DataCopy", g, len * sizeof(T));
        std::memcpy(d, g, len * sizeof(T));
    }
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                     opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("DataCopy", opsdk_ascendc::Pipe::MTE3, loc);
    static_assert(!opsdk_ascendc::kInt4<T>, "DataCopy of int4b_t is modelled in the count form only");
    opsdk_ascendc::CheckBlocks("DataCopy", p.blockCount, p.blockLen, 65535);
    src.CheckAligned("DataCopy", "srcLocal");
    const uint64_t e = 32 / sizeof(T), len = p.blockLen * e;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        T* g = dst.ptr_ + i * (p.blockLen + p.dstStride) * e;
        uint8_t* s = src.Span("DataCopy", "srcLocal", i * (p.blockLen + p.srcStride) * e, len);
        opsdk_ascendc::StoreGm<T>("DataCopy", g, s, len);
    }
}

#if OPSDK_HAS_DataCopyPad
// DataCopyParams form UB -> UB: blockLen and strides in 32-byte blocks.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                     opsdk_ascendc::Loc loc = {}) {
    if (dst.GetPosition() == TPosition::C2) return opsdk_ascendc::CopyToBiasTable(dst, src, p, loc);
    opsdk_ascendc::Issue is("DataCopy", opsdk_ascendc::Pipe::V, loc);
    static_assert(!opsdk_ascendc::kInt4<T>, "DataCopy of int4b_t is modelled in the count form only");
    opsdk_ascendc::CheckBlocks("DataCopy", p.blockCount, p.blockLen, 65535);
    dst.CheckAligned("DataCopy", "dstLocal");
    src.CheckAligned("DataCopy", "srcLocal");
    const uint64_t e = 32 / sizeof(T), len = p.blockLen * e;
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint8_t* s = src.Span("DataCopy", "srcLocal", i * (p.blockLen + p.srcStride) * e, len);
        uint8_t* d = dst.Span("DataCopy", "dstLocal", i * (p.blockLen + p.dstStride) * e, len);
        std::memmove(d, s, len * sizeof(T));
    }
}

// DataCopyPad GM -> UB: blockLen and srcStride in bytes (GM), dstStride in 32-byte blocks
// (UB); each block lands 32-byte aligned, the gap up to it is padding.
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                        const DataCopyExtParams& p, const DataCopyPadExtParams<T>& pad,
                        opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("DataCopyPad", opsdk_ascendc::Pipe::MTE2, loc);
    static_assert(OPSDK_HAS_BF16_DataCopyPad || !std::is_same_v<T, bfloat16_t>,
                  "DataCopyPad of bfloat16_t is not in the Ascend C of this SoC family (see opsdk/ascend/aicore_apis.py)");
    static_assert(!opsdk_ascendc::kInt4<T>, "DataCopyPad of int4b_t is modelled in the count form only");
    opsdk_ascendc::CheckBlocks("DataCopyPad", p.blockCount, p.blockLen, 2097151);
    dst.CheckAligned("DataCopyPad", "dstLocal");
    if (p.blockLen % sizeof(T) != 0) {
        opsdk_ascendc::Fail("DataCopyPad", "blockLen " + opsdk_ascendc::S(p.blockLen) +
                                               " bytes is not a whole number of " +
                                               opsdk_ascendc::TypeName<T>() + " elements");
    }
    const uint64_t n = p.blockLen / sizeof(T);
    const uint64_t padded = (p.blockLen + 31) / 32 * 32 / sizeof(T);
    if (pad.isPad && (pad.leftPadding + n + pad.rightPadding > padded || pad.leftPadding * sizeof(T) > 32 ||
                      pad.rightPadding * sizeof(T) > 32)) {
        opsdk_ascendc::Fail("DataCopyPad", "leftPadding + blockLen + rightPadding must fit the block's "
                                           "32-byte-aligned length, each padding at most 32 bytes");
    }
    // isPad sets the pad register first (set_mov_pad_val, dav_c220/kernel_operator_data_copy_impl.h);
    // without it the register keeps what SetPadValue or an earlier DataCopyPad left there
    opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    if (pad.isPad) opsdk_ascendc::SetPadRegister(b, pad.paddingValue);
    const uint8_t* g = reinterpret_cast<const uint8_t*>(src.ptr_);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint64_t base = i * (padded + p.dstStride * 32 / sizeof(T));
        T* d = reinterpret_cast<T*>(dst.Span("DataCopyPad", "dstLocal", base, padded));
        const uint8_t* s = g + i * (uint64_t(p.blockLen) + p.srcStride);
        opsdk_ascendc::GmRead("DataCopyPad", s, p.blockLen);
        uint64_t lead = pad.isPad ? pad.leftPadding : 0;
        std::memcpy(d + lead, s, p.blockLen);
        for (uint64_t k = 0; k < padded; ++k) {
            if (k >= lead && k < lead + n) continue;
            if (b.padSet) {  // the pad register: this call's paddingValue, or SetPadValue's
                std::memcpy(d + k, &b.padBits, sizeof(T));
            } else {
                std::memset(d + k, 0xff, sizeof(T));  // undefined on the NPU: poison it
            }
        }
    }
}

// DataCopyPad UB -> GM: srcStride in 32-byte blocks (UB), blockLen and dstStride in bytes (GM).
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p,
                        opsdk_ascendc::Loc loc = {}) {
    opsdk_ascendc::Issue is("DataCopyPad", opsdk_ascendc::Pipe::MTE3, loc);
    static_assert(OPSDK_HAS_BF16_DataCopyPad || !std::is_same_v<T, bfloat16_t>,
                  "DataCopyPad of bfloat16_t is not in the Ascend C of this SoC family (see opsdk/ascend/aicore_apis.py)");
    static_assert(!opsdk_ascendc::kInt4<T>, "DataCopyPad of int4b_t is modelled in the count form only");
    opsdk_ascendc::CheckBlocks("DataCopyPad", p.blockCount, p.blockLen, 2097151);
    src.CheckAligned("DataCopyPad", "srcLocal");
    if (p.blockLen % sizeof(T) != 0) {
        opsdk_ascendc::Fail("DataCopyPad", "blockLen " + opsdk_ascendc::S(p.blockLen) +
                                               " bytes is not a whole number of " +
                                               opsdk_ascendc::TypeName<T>() + " elements");
    }
    const uint64_t n = p.blockLen / sizeof(T);
    const uint64_t padded = (p.blockLen + 31) / 32 * 32 / sizeof(T);
    uint8_t* g = reinterpret_cast<uint8_t*>(dst.ptr_);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint64_t base = i * (padded + p.srcStride * 32 / sizeof(T));
        uint8_t* s = src.Span("DataCopyPad", "srcLocal", base, n);
        uint8_t* d = g + i * (uint64_t(p.blockLen) + p.dstStride);
        opsdk_ascendc::StoreGm<T>("DataCopyPad", reinterpret_cast<T*>(d), s, n);
    }
}

#else
OPSDK_UNAVAILABLE(DataCopyPad)
#endif

#if OPSDK_HAS_SetPadValue
// The value DataCopyPad GM -> UB pads with when its own isPad is false (the pad register,
// set_mov_pad_val: basic_api/inner_interface/inner_kernel_operator_data_copy_intf.cppm).
template <typename T, TPosition pos = TPosition::MAX>
inline void SetPadValue(T paddingValue) {
    static_assert(pos == TPosition::MAX || pos == TPosition::VECIN || pos == TPosition::VECOUT ||
                      pos == TPosition::VECCALC,
                  "SetPadValue: opsdk's model has the Unified Buffer's pad register only");
    opsdk_ascendc::SetPadRegister(opsdk_ascendc::Cur(), paddingValue);
}
#else
OPSDK_UNAVAILABLE(SetPadValue)
#endif

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_MEMORY_H
