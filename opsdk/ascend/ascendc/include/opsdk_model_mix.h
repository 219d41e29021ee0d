// opsdk's CPU model of the Ascend C API: mixed kernels and cross-core synchronisation. Part of
// opsdk (not CANN); docs/ascendc_model.md, "Mixed kernels".
//
// On __CCE_AICORE__ 220 a block of a mixed kernel is one Cube core (AIC) and one or two vector
// cores (AIV), each with its own memories and pipes, running concurrently
// (KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1 / _1_2); basic_api/impl/utils/
// kernel_utils_macros.h). The model runs each core on its own thread. Cross-core
// synchronisation (dav_c220/kernel_operator_sync_impl.h): CrossCoreSetFlag<mode, pipe>(id) is
// ffts_cross_core_sync on `pipe` (sent once the pipe's earlier instructions are done),
// CrossCoreWaitFlag(id) is wait_flag_dev, which holds the whole core until the flag's counter is
// above zero (its mode and pipe do not matter on 220). Mode 0 counts a flag on every core of the
// setter's type once all of them set it; mode 1 on both vector cores of a block once both set
// it; mode 2 from the Cube core to each vector core of its block, and from the vector cores to
// the Cube core once all of them set it. The GM accesses of different cores are ordered only
// through those flags, SyncAll and IBSet/IBWait: the model tracks what each core knows of the
// others (per core and pipe, as the pipes' vector clocks) and reports two unordered accesses to
// the same GM bytes, one a write, as a race; a core waiting forever is reported as a hang.
#ifndef OPSDK_ASCENDC_MODEL_MIX_H
#define OPSDK_ASCENDC_MODEL_MIX_H

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <tuple>

#include "opsdk_model_pipes.h"
#include "opsdk_model_sync_all.h"

// The kernel types of 8.1 (basic_api/impl/utils/kernel_utils_macros.h, enum KernelMetaType).
enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2, KERNEL_TYPE_AICORE, KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE, KERNEL_TYPE_MIX_VECTOR_CORE, KERNEL_TYPE_MAX
};

namespace AscendC {
constexpr int32_t MIX = 0;  // g_coreType's values (kernel_utils_macros.h)
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;
}  // namespace AscendC

namespace opsdk_ascendc {

inline const char* KernelTypeName(int t) {
    static const char* names[] = {"KERNEL_TYPE_AIV_ONLY", "KERNEL_TYPE_AIC_ONLY", "KERNEL_TYPE_MIX_AIV_1_0",
                                  "KERNEL_TYPE_MIX_AIC_1_0", "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIC_1_2",
                                  "KERNEL_TYPE_AICORE", "KERNEL_TYPE_VECTORCORE", "KERNEL_TYPE_MIX_AICORE",
                                  "KERNEL_TYPE_MIX_VECTOR_CORE"};
    return t >= 0 && t < KERNEL_TYPE_MAX ? names[t] : "an unknown kernel type";
}

// Thrown where a kernel needs its cores run as a mixed launch: the launch runs it so.
struct NeedsCores : ModelError {
    int type;
    explicit NeedsCores(int t) : ModelError("the kernel runs on the cores of a mixed kernel type"), type(t) {}
};

// A core's knowledge of the other cores: per core, the instructions of each pipe ordered before.
struct Know {
    std::vector<std::pair<int32_t, Clock>> seen;
    std::string by;  // the instruction that set the flag, for messages
};

inline void JoinSeen(std::vector<std::pair<int32_t, Clock>>& into, const std::vector<std::pair<int32_t, Clock>>& from) {
    for (const auto& [core, clock] : from) {
        auto it = std::find_if(into.begin(), into.end(), [&](const auto& e) { return e.first == core; });
        if (it == into.end()) into.emplace_back(core, clock);
        else Join(it->second, clock);
    }
}

// A GM access of a core of a mixed launch: its range, core, pipe and number within the pipe.
struct GmAccess {
    const GmArg* arg;
    uint64_t lo, hi;
    int32_t core;
    Pipe pipe;
    uint32_t tick;
    bool write;
    std::string what;  // "Fixpipe (mix.cpp:61) on pipe FIX of block 0's AIC"
};

// The cross-core state of the cores running at once (one block's, or every block's).
struct CrossCore {
    std::mutex m;
    std::condition_variable cv;
    int64_t live = 0, blocked = 0;
    bool allBlocks = false;
    std::string abort;                                          // why waiting cores stop
    std::map<std::pair<int32_t, int>, std::deque<Know>> ready;  // (core, flag id): its counter's rounds
    std::map<std::tuple<int32_t, int, int>, std::map<int32_t, std::deque<Know>>> pending;  // (core, id, mode)
    std::map<int32_t, std::string> waits;                       // core -> what it waits for
    std::map<int32_t, std::function<bool()>> until;             // core -> whether it can go on
    // Every core still running waits, and none of them can go on: a hang.
    bool Stuck() const {
        if (live == 0 || blocked != live) return false;
        return std::none_of(until.begin(), until.end(), [](const auto& e) { return e.second(); });
    }
    struct Bar {
        int64_t arrived = 0, gen = 0;
        Know acc;
        std::map<int64_t, Know> done;
    } bars[3];                                                  // AIV cores, AIC cores, all cores
    std::map<const void*, Know> ib;                             // IBSet's slots
    std::vector<GmAccess> gm;                                   // guarded by Launch::gmMutex
};

// "block 1's AIV 0" for core id `core` of a mixed launch.
inline bool CrossAllBlocks(const CrossCore& x) { return x.allBlocks; }

inline std::string CoreLabel(const Launch& L, int32_t core) {
    const int per = L.PerBlock();
    const int32_t blk = core / per, r = core % per;
    if (L.hasAic && r == 0) return "block " + std::to_string(blk) + "'s AIC";
    return "block " + std::to_string(blk) + "'s AIV " + std::to_string(r - (L.hasAic ? 1 : 0));
}
inline int32_t CoreId(const Launch& L, int64_t blk, bool aic, int sub) {
    return static_cast<int32_t>(blk * L.PerBlock() + (aic ? 0 : (L.hasAic ? 1 : 0) + sub));
}

// Every core still running waits: what each waits for, and the flags set that nobody took.
inline std::string Hang(const Launch& L, const CrossCore& X) {
    std::string s = "every core still running waits and none is left to release it (on the chip the kernel hangs):";
    for (const auto& [core, what] : X.waits) s += " " + CoreLabel(L, core) + " " + what + ";";
    for (const auto& [key, rounds] : X.ready) {
        if (!rounds.empty()) {
            s += " flag " + std::to_string(key.second) + " of " + CoreLabel(L, key.first) + " was set by " +
                 rounds.front().by + " and is not waited for;";
        }
    }
    for (const auto& [key, senders] : X.pending) {
        for (const auto& [core, sets] : senders) {
            if (!sets.empty()) {
                s += " " + sets.front().by + " set flag " + std::to_string(std::get<1>(key)) + " in mode " +
                     std::to_string(std::get<2>(key)) + ", which counts for " + CoreLabel(L, std::get<0>(key)) +
                     " only once every core of the mode has set it;";
            }
        }
    }
    return s;
}

// Wait (X.m held by `lock`) until `ready`; a hang or another core's failure fails this core.
template <typename Pred>
inline void BlockUntil(CrossCore& X, std::unique_lock<std::mutex>& lock, const char* api, const std::string& what,
                       Pred ready) {
    if (ready()) return;
    Block& b = Cur();
    const Launch& L = *b.launch;
    X.waits[b.core] = what;
    X.until[b.core] = ready;
    ++X.blocked;
    if (X.Stuck() && X.abort.empty()) {
        X.abort = Hang(L, X);
        X.cv.notify_all();
    }
    bool timedOut = false;
    while (!ready() && X.abort.empty() && !timedOut) {
        timedOut = X.cv.wait_for(lock, std::chrono::seconds(600)) == std::cv_status::timeout;
    }
    --X.blocked;
    X.waits.erase(b.core);
    X.until.erase(b.core);
    if (ready()) return;
    Fail(api, timedOut ? std::string("waited 600 s for the other cores") : X.abort);
}

// A core of the running set ended (`why`: its failure, or empty).
inline void CoreEnded(CrossCore& X, const Launch& L, const std::string& why) {
    std::lock_guard<std::mutex> lock(X.m);
    --X.live;
    if (!why.empty() && X.abort.empty()) X.abort = "another core failed: " + why;
    if (X.Stuck() && X.abort.empty()) X.abort = Hang(L, X);
    X.cv.notify_all();
}

// The cross-core flags left set or half-set when every core ended, or "".
inline std::string FlagsLeft(const Launch& L, const CrossCore& X) {
    for (const auto& [key, rounds] : X.ready) {
        if (!rounds.empty()) {
            return "CrossCoreSetFlag: flag " + std::to_string(key.second) + " of " + CoreLabel(L, key.first) +
                   ", set by " + rounds.front().by + ", is never waited for (CrossCoreWaitFlag) before the kernel "
                   "ends: the next kernel on that core starts with it set; wait for every flag you set";
        }
    }
    for (const auto& [key, senders] : X.pending) {
        for (const auto& [core, sets] : senders) {
            if (!sets.empty()) {
                return "CrossCoreSetFlag: " + sets.front().by + " set flag " + std::to_string(std::get<1>(key)) +
                       " in mode " + std::to_string(std::get<2>(key)) + ", but not every core the mode counts "
                       "for " + CoreLabel(L, std::get<0>(key)) + " set it: the flag is never raised";
            }
        }
    }
    return "";
}

inline Pipe PipeOf(const char* api, pipe_t p) {
    switch (p) {
        case PIPE_S: return Pipe::S;
        case PIPE_V: return Pipe::V;
        case PIPE_M: return Pipe::M;
        case PIPE_MTE1: return Pipe::MTE1;
        case PIPE_MTE2: return Pipe::MTE2;
        case PIPE_MTE3: return Pipe::MTE3;
        case PIPE_FIX: return Pipe::FIX;
        default: Fail(api, "pipe " + std::to_string(int(p)) + " is not a pipe of the model (S, V, M, MTE1, MTE2, MTE3, FIX)");
    }
}
inline const char* PipeTName(Pipe p) {
    static const char* names[] = {"PIPE_S", "PIPE_V", "PIPE_MTE2", "PIPE_MTE3", "PIPE_S", "PIPE_MTE1", "PIPE_M", "PIPE_FIX"};
    return names[static_cast<int>(p)];
}

// What the current instruction of `b` is ordered after: its knowledge plus its pipe's clock.
inline Know Knowledge(const Block& b, Pipe pipe, bool allPipes) {
    Know k;
    k.seen = b.seen;
    Clock mine = b.pipes.clock[static_cast<int>(pipe)];
    if (allPipes) {
        for (const Clock& c : b.pipes.clock) Join(mine, c);
    }
    JoinSeen(k.seen, {{b.core, mine}});
    const int32_t cur = b.pipes.current;
    if (cur > 0) k.by = Describe(b.pipes.instrs[static_cast<size_t>(cur)]) + " of " + CoreLabel(*b.launch, b.core);
    return k;
}

constexpr int kMaxCrossFlag = 10;     // flag ids 0-10 on Atlas A2 (CrossCoreSetFlag's documentation)
constexpr size_t kMaxFlagCount = 16;  // "the counter of a flagId is set at most 16 times"

inline CrossCore& Cross(const char* api, uint16_t flagId) {
    Block& b = Cur();
    if (OPSDK_AICORE_ARCH != 220) {
        Fail(api, std::string("is not in the Ascend C of this SoC family (__CCE_AICORE__ = ") +
                      std::to_string(OPSDK_AICORE_ARCH) + "; 8.1 has it on 220, the separated Cube and vector cores)");
    }
    if (flagId > kMaxCrossFlag) {
        Fail(api, "flagId is " + std::to_string(flagId) + "; the Atlas A2 cores take 0 to " +
                      std::to_string(kMaxCrossFlag) + " (11 to 14 are SyncAll's own, dav_c220/"
                      "kernel_operator_sync_impl.h, and the message keeps 4 bits): use an id from 0 to 10");
    }
    if (b.launch->cross == nullptr) throw NeedsCores(KERNEL_TYPE_AIV_ONLY);
    return *b.launch->cross;
}

// The cores a flag set in `mode` by `b` counts for, and the cores each of them waits to set it.
inline void FlagCores(const char* api, const Block& b, int mode, std::vector<int32_t>& to, std::vector<int32_t>& from) {
    const Launch& L = *b.launch;
    auto aivs = [&](int64_t blk) {
        std::vector<int32_t> v;
        for (int s = 0; s < L.ratio; ++s) v.push_back(CoreId(L, blk, false, s));
        return v;
    };
    if (mode == 0) {
        for (int64_t blk = 0; blk < L.blockNum; ++blk) {
            if (b.aic) to.push_back(CoreId(L, blk, true, 0));
            else for (int32_t c : aivs(blk)) to.push_back(c);
        }
        from = to;
    } else if (mode == 1) {
        if (b.aic) Fail(api, "mode 1 synchronises the vector cores of a block; the Cube core takes mode 0 or 2");
        to = from = aivs(b.idx);
    } else if (b.aic) {
        if (L.ratio == 0) Fail(api, std::string("mode 2 signals the block's vector cores, and a ") +
                                        KernelTypeName(L.mixType) + " kernel has none");
        to = aivs(b.idx);
        from = {b.core};
    } else {
        if (!L.hasAic) Fail(api, std::string("mode 2 signals the block's Cube core, and a ") +
                                     KernelTypeName(L.mixType) + " kernel has none: declare KERNEL_TYPE_MIX_AIC_1_1 or _1_2");
        to = {CoreId(L, b.idx, true, 0)};
        from = aivs(b.idx);
    }
}

inline void SetCrossFlag(int mode, pipe_t pipe, uint16_t flagId, const Loc& loc) {
    const char* api = "CrossCoreSetFlag";
    CrossCore& X = Cross(api, flagId);
    Issue is(api, PipeOf(api, pipe), loc);
    Block& b = Cur();
    if (mode == 0 && !X.allBlocks) throw NeedsAllBlocks();
    std::vector<int32_t> to, from;
    FlagCores(api, b, mode, to, from);
    const Know k = Knowledge(b, PipeOf(api, pipe), false);
    std::lock_guard<std::mutex> lock(X.m);
    for (int32_t r : to) {
        auto& acc = X.pending[{r, flagId, mode}];
        acc[b.core].push_back(k);
        if (!std::all_of(from.begin(), from.end(), [&](int32_t s) { return !acc[s].empty(); })) continue;
        Know round;
        for (int32_t s : from) {
            JoinSeen(round.seen, acc[s].front().seen);
            if (round.by.empty()) round.by = acc[s].front().by;
            acc[s].pop_front();
        }
        auto& counter = X.ready[{r, flagId}];
        counter.push_back(std::move(round));
        if (counter.size() > kMaxFlagCount) {
            Fail(api, "flag " + std::to_string(flagId) + " of " + CoreLabel(*b.launch, r) + " is set " +
                          std::to_string(counter.size()) + " times with no CrossCoreWaitFlag between: its counter "
                          "takes at most 16 (CrossCoreSetFlag's constraint); wait for the flag before setting it again");
        }
    }
    X.cv.notify_all();
}

inline void WaitCrossFlag(uint16_t flagId, const Loc& loc) {
    const char* api = "CrossCoreWaitFlag";
    CrossCore& X = Cross(api, flagId);
    Issue is(api, Pipe::S, loc);  // wait_flag_dev holds the core: what it issues later waits
    Block& b = Cur();
    std::unique_lock<std::mutex> lock(X.m);
    auto& counter = X.ready[{b.core, flagId}];
    BlockUntil(X, lock, api, "waits in CrossCoreWaitFlag(" + std::to_string(flagId) + ")" + Where(loc),
               [&] { return !counter.empty(); });
    JoinSeen(b.seen, counter.front().seen);
    counter.pop_front();
}

// A barrier of the cores of `kind` (0: the vector cores, 1: the Cube cores, 2: all) of every block.
inline void CrossBarrier(int kind, const char* api, const Loc& loc) {
    Block& b = Cur();
    const Launch& L = *b.launch;
    CrossCore& X = *L.cross;
    if (!X.allBlocks) throw NeedsAllBlocks();
    Issue is(api, Pipe::S, loc);
    const int64_t cores = L.blockNum * (kind == 0 ? L.ratio : kind == 1 ? (L.hasAic ? 1 : 0) : L.PerBlock());
    const Know mine = Knowledge(b, Pipe::S, true);
    std::unique_lock<std::mutex> lock(X.m);
    CrossCore::Bar& B = X.bars[kind];
    const int64_t gen = B.gen;
    JoinSeen(B.acc.seen, mine.seen);
    if (++B.arrived == cores) {
        B.done[gen] = std::move(B.acc);
        B.acc = Know{};
        B.arrived = 0;
        ++B.gen;
        X.cv.notify_all();
    } else {
        BlockUntil(X, lock, api, std::string("waits in ") + api + Where(loc), [&] { return B.gen != gen; });
    }
    JoinSeen(b.seen, B.done[gen].seen);
}

inline void MixSyncAll(bool aivOnly, const char* api, const Loc& loc) {
    const Block& b = Cur();
    CrossBarrier(aivOnly ? (b.aic ? 1 : 0) : 2, api, loc);
}

// Whether GM access `w` of another core is ordered before what core `b` does now.
inline bool Seen(const Block& b, const GmAccess& w) {
    for (const auto& [core, clock] : b.seen) {
        if (core == w.core) return clock[static_cast<int>(w.pipe)] >= w.tick;
    }
    return false;
}

[[noreturn]] inline void CrossRace(const Block& b, const GmAccess& me, const GmAccess& w) {
    const Launch& L = *b.launch;
    const int32_t per = L.PerBlock();
    const bool sameBlock = w.core / per == me.core / per;
    const bool wAic = L.hasAic && w.core % per == 0, meAic = L.hasAic && me.core % per == 0;
    std::string fix = std::string("CrossCoreSetFlag<") + (sameBlock ? (wAic != meAic ? "0x2" : "0x1") : "0x0") +
                      ", " + PipeTName(w.pipe) + ">(id) on " + CoreLabel(L, w.core) + " after the first and "
                      "CrossCoreWaitFlag(id) on " + CoreLabel(L, me.core) + " before the second";
    if (!sameBlock || wAic == meAic) fix += ", or SyncAll<false>() between them";
    const char* verb = me.write ? "overwrites what" : "reads what";
    throw ModelError(Who(b) + ": race on GM bytes [" + S(std::max(w.lo, me.lo)) + ", " + S(std::min(w.hi, me.hi)) +
                     ") of argument '" + w.arg->name + "': " + me.what + " " + verb + " " + w.what + " " +
                     (w.write ? "wrote" : "read") + ", with no cross-core synchronisation between the two cores (they "
                     "run concurrently: " + (w.write ? "the write may not have reached GM when the other access runs"
                                                     : "the write may reach GM before the read runs") + "). Fix: " + fix);
}

}  // namespace opsdk_ascendc

namespace opsdk_ascendc {

// GM bytes [off, off + n) of `a`, read or written (src: the bytes written, or null) by the current
// core of a mixed launch: two accesses of different cores to the same bytes, one a write, with no
// cross-core order between them, are a race (Launch::gmMutex is held).
inline void CrossCoreGm(const std::string& api, GmArg& a, uint64_t off, uint64_t n, const void* src) {
    (void)api;
    Block& b = Cur();
    Launch& L = *b.launch;
    CrossCore& X = *L.cross;
    const int32_t cur = b.pipes.current;
    const Instr* ins = cur > 0 ? &b.pipes.instrs[static_cast<size_t>(cur)] : nullptr;
    const bool write = src != nullptr;
    GmAccess me{&a, off, off + n, b.core, ins ? ins->pipe : Pipe::S, ins ? ins->tick : 0, write,
                (ins ? Describe(*ins) : std::string(api)) + " of " + CoreLabel(L, b.core)};
    for (const GmAccess& w : X.gm) {
        if (w.arg != &a || w.core == b.core || w.hi <= off || w.lo >= off + n || (!w.write && !write)) continue;
        if (Seen(b, w)) continue;
        if (write && w.write) {  // the same value written twice: benign, counted as a warning
            const uint64_t lo = std::max(w.lo, off), hi = std::min(w.hi, off + n);
            const uint8_t* from = static_cast<const uint8_t*>(src) + (lo - off);
            if (std::memcmp(from, a.base + lo, hi - lo) == 0) {
                if (L.sameValueBytes == 0) L.sameValueFirst = "byte " + S(lo) + " of GM argument '" + a.name + "'";
                L.sameValueBytes += hi - lo;
                continue;
            }
        }
        CrossRace(b, me, w);
    }
    X.gm.push_back(std::move(me));
}

}  // namespace opsdk_ascendc

// KERNEL_TASK_TYPE_DEFAULT(type) / KERNEL_TASK_TYPE(key, type): the kernel's core types (8.1:
// ENABLE_FEATURE_FOR_COMPILE, read by the compiler). In the model the statement tells the launch
// which cores to run: a mixed type makes it run the block's Cube and vector cores.
namespace opsdk_ascendc {
inline bool DeclareTaskType(int type, bool compiledAic) {
    Block* b = tBlock;
    if (b == nullptr) return true;
    Launch& L = *b->launch;
    if (L.mixType >= 0) {
        if (type != L.mixType && L.mixType != KERNEL_TYPE_AIV_ONLY) {
            Fail("KERNEL_TASK_TYPE_DEFAULT", std::string("declares ") + KernelTypeName(type) + ", but this core runs "
                                                 "as " + KernelTypeName(L.mixType) + ": declare one type per kernel");
        }
        return true;
    }
    const bool cube = type == KERNEL_TYPE_AIC_ONLY || type == KERNEL_TYPE_MIX_AIC_1_0 ||
                      type == KERNEL_TYPE_MIX_AIC_1_1 || type == KERNEL_TYPE_MIX_AIC_1_2;
    if (!cube || ((type == KERNEL_TYPE_AIC_ONLY || type == KERNEL_TYPE_MIX_AIC_1_0) && compiledAic)) return true;
    if (OPSDK_AICORE_ARCH != 220) {
        Fail("KERNEL_TASK_TYPE_DEFAULT", std::string(KernelTypeName(type)) + " is for the separated Cube and vector "
                                         "cores of __CCE_AICORE__ 220; this SoC family is " +
                                         std::to_string(OPSDK_AICORE_ARCH));
    }
    throw NeedsCores(type);
}
}  // namespace opsdk_ascendc

#define KERNEL_TASK_TYPE_DEFAULT(type) \
    [[maybe_unused]] const bool opsdkTaskTypeDefault = ::opsdk_ascendc::DeclareTaskType(type, ASCEND_IS_AIC)
#define KERNEL_TASK_TYPE(key, type) \
    [[maybe_unused]] const bool opsdkTaskType##key = ::opsdk_ascendc::DeclareTaskType(type, ASCEND_IS_AIC)

namespace AscendC {

// The vector core's index in its block and the vector cores a block has (1 on the Cube core and
// in a kernel that is not mixed; dav_c220/kernel_operator_common_impl.h, _sys_var_impl.h).
inline int64_t GetSubBlockIdx() {
    const opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    return b.launch->mixType >= 0 && !b.aic ? b.sub : 0;
}
inline int64_t GetTaskRation() {
    const opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    return b.launch->mixType >= 0 && !b.aic && b.launch->ratio > 0 ? b.launch->ratio : 1;
}
inline int64_t GetSubBlockNum() { return GetTaskRation(); }

template <uint8_t modeId, pipe_t pipe> inline void CrossCoreSetFlag(uint16_t flagId, opsdk_ascendc::Loc loc = {}) {
    static_assert(modeId <= 2, "CrossCoreSetFlag: modeId is 0 (all cores of the type), 1 (the vector cores of a "
                               "block) or 2 (a block's Cube and vector cores) on __CCE_AICORE__ 220");
    static_assert(pipe != PIPE_S && pipe != PIPE_ALL, "CrossCoreSetFlag: the pipe cannot be PIPE_S or PIPE_ALL on "
                                                      "Atlas A2 (CrossCoreSetFlag's documentation): name the pipe "
                                                      "whose writes the flag publishes (PIPE_FIX, PIPE_MTE3, ...)");
    opsdk_ascendc::SetCrossFlag(modeId, pipe, flagId, loc);
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId, opsdk_ascendc::Loc loc = {}) {
    static_assert(modeId <= 2, "CrossCoreWaitFlag: modeId is 0, 1 or 2 on __CCE_AICORE__ 220");
    opsdk_ascendc::WaitCrossFlag(flagId, loc);
}

// The workspace: CANN reserves its system part first (RESERVED_WORKSPACE, 16 MiB on 220 and
// 300, 2 MiB on 100 and 200; basic_api/impl/utils/kernel_utils_constants.h); the user part
// follows (GetUserWorkspace: g_sysWorkspaceReserved + RESERVED_WORKSPACE).
inline GM_ADDR GetSysWorkSpacePtr() { return opsdk_ascendc::Cur().launch->workspace; }
inline void SetSysWorkspace(GM_ADDR workspace) {
    const opsdk_ascendc::Launch& L = *opsdk_ascendc::Cur().launch;
    if (workspace == nullptr) opsdk_ascendc::Fail("SetSysWorkspace", "workspace can not be nullptr");
    if (workspace != L.workspace) {
        opsdk_ascendc::Fail("SetSysWorkspace", "is given a pointer that is not the kernel's workspace parameter");
    }
}
inline void SetSysWorkspaceForce(GM_ADDR workspace) { SetSysWorkspace(workspace); }
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    const opsdk_ascendc::Launch& L = *opsdk_ascendc::Cur().launch;
    if (workspace == nullptr) opsdk_ascendc::Fail("GetUserWorkspace", "workspace can not be nullptr");
    return L.workspace + L.sysWorkspace;
}

// IBSet/IBWait (inner_kernel_operator_common_intf.cppm): core blockIdx's slot for eventID,
// gmWorkspace[(blockNum * 8 * eventID + blockIdx * 8)], goes 0 -> 1 in IBSet and 1 -> 0 in IBWait
// (blockNum doubled for the vector cores of a mixed kernel); each waits until it can.
template <bool isAIVOnly = true>
inline void IBSync(bool set, const GlobalTensor<int32_t>& gm, const LocalTensor<int32_t>& ub, int32_t blockIdx,
                   int32_t eventID, const opsdk_ascendc::Loc& loc) {
    const char* api = set ? "IBSet" : "IBWait";
    opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    opsdk_ascendc::Launch& L = *b.launch;
    if (L.cross == nullptr) throw opsdk_ascendc::NeedsCores(KERNEL_TYPE_AIV_ONLY);
    if (b.aic) return;  // the Cube core returns at once (8.1)
    const int64_t blocks = isAIVOnly ? L.blockNum : L.blockNum * 2;
    const uint64_t at = uint64_t(blocks) * 8 * uint64_t(eventID) + uint64_t(blockIdx) * 8;
    if (blockIdx < 0 || blockIdx >= blocks || eventID < 0 || gm.GetSize() < at + 8 || ub.GetSize() < 8) {
        opsdk_ascendc::Fail(api, "blockIdx " + std::to_string(blockIdx) + ", eventID " + std::to_string(eventID) +
                                     ": the slot gmWorkspace[" + opsdk_ascendc::S(at) + "..+8) must lie in gmWorkspace (" +
                                     opsdk_ascendc::S(gm.GetSize()) + " int32_t; blockIdx below " + std::to_string(blocks) +
                                     ") and ubWorkspace must hold 8 int32_t (it holds " + opsdk_ascendc::S(ub.GetSize()) + ")");
    }
    if (!L.cross->allBlocks) throw opsdk_ascendc::NeedsAllBlocks();
    AscendC::PipeBarrier<PIPE_ALL>(loc);
    {
    opsdk_ascendc::Issue is(api, opsdk_ascendc::Pipe::MTE3, loc);
    int32_t* slot = gm.ptr_ + at;
    opsdk_ascendc::FindGm(api, slot, 32, "writes");
    opsdk_ascendc::CrossCore& C = *L.cross;
    const opsdk_ascendc::Know mine = opsdk_ascendc::Knowledge(b, opsdk_ascendc::Pipe::S, true);
    std::unique_lock<std::mutex> lock(C.m);
    opsdk_ascendc::BlockUntil(C, lock, api, std::string("waits in ") + api + "(blockIdx " + std::to_string(blockIdx) +
                                                ", eventID " + std::to_string(eventID) + ")" + opsdk_ascendc::Where(loc),
                              [&] { return *slot == (set ? 0 : 1); });
    *slot = set ? 1 : 0;
    if (set) {
        C.ib[slot] = mine;
    } else {
        opsdk_ascendc::JoinSeen(b.seen, C.ib[slot].seen);
    }
    C.cv.notify_all();
    }
    AscendC::PipeBarrier<PIPE_ALL>(loc);
}

template <bool isAIVOnly = true>
inline void IBSet(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                  int32_t eventID, opsdk_ascendc::Loc loc = {}) {
    IBSync<isAIVOnly>(true, gmWorkspace, ubWorkspace, blockIdx, eventID, loc);
}
template <bool isAIVOnly = true>
inline void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                   int32_t eventID, opsdk_ascendc::Loc loc = {}) {
    IBSync<isAIVOnly>(false, gmWorkspace, ubWorkspace, blockIdx, eventID, loc);
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_MIX_H
