// opsdk's CPU model of the Ascend C API: the software SyncAll(gmWorkspace, ubWorkspace,
// usedCores), a barrier of all blocks through a GM workspace. Part of opsdk (not CANN).
// Semantics of CANN 8.1.RC1's basic_api/impl/dav_c220/kernel_operator_sync_impl.h
// (SoftSyncAllImpl): block i keeps its count of barriers passed in gmWorkspace[8 i] (32 bytes a
// block), reads the others' through ubWorkspace (8 int32_t a block), and waits until every block
// has counted as far. The model runs such a kernel with one thread per block (opsdk_model_launch.h
// starts them all when the first SyncAll asks for it) and checks the workspace: its size, that
// it started at zero, and that every block reaches each barrier. The hardware SyncAll() (220)
// is the same barrier without the workspace.
#ifndef OPSDK_ASCENDC_MODEL_SYNC_ALL_H
#define OPSDK_ASCENDC_MODEL_SYNC_ALL_H

#include <chrono>
#include <condition_variable>

#include "opsdk_model_memory.h"

namespace opsdk_ascendc {

// Thrown by SyncAll when the blocks do not all run at once: the launch reruns them so.
struct NeedsAllBlocks : ModelError {
    NeedsAllBlocks() : ModelError("SyncAll needs all blocks running at once") {}
};

constexpr int64_t kMaxSyncBlocks = 256;  // blocks the model runs at once for a barrier

// The barrier of the cores of a mixed launch (opsdk_model_mix.h): of the cores of the caller's
// type (aivOnly), or of every core.
inline void MixSyncAll(bool aivOnly, const char* api, const Loc& loc);

struct BlockBarrier {
    std::mutex m;
    std::condition_variable cv;
    int64_t arrived = 0, generation = 0, ended = 0;
    std::string abort;  // why waiting blocks stop: a block failed or ended without the barrier

    // Block `idx` ended (failed: `why` is its error); blocks waiting at a barrier cannot pass.
    void End(int64_t idx, const std::string& why) {
        std::lock_guard<std::mutex> lock(m);
        ++ended;
        if (abort.empty()) {
            abort = why.empty() ? "block " + std::to_string(idx) +
                                      " ended without reaching this SyncAll: every block must call SyncAll as "
                                      "often as the others (on the chip the kernel hangs)"
                                : "another block failed: " + why;
        }
        cv.notify_all();
    }
};

inline void PassBarrier(Launch& L, const char* api) {
    BlockBarrier& B = *L.barrier;
    std::unique_lock<std::mutex> lock(B.m);
    if (B.ended > 0) Fail(api, B.abort);
    const int64_t gen = B.generation;
    if (++B.arrived == L.blockNum) {
        B.arrived = 0;
        ++B.generation;
        std::lock_guard<std::mutex> gm(L.gmMutex);  // what blocks wrote before it is ordered before what follows
        for (GmArg& a : L.gm) std::fill(a.writer.begin(), a.writer.end(), -1);
        B.cv.notify_all();
        return;
    }
    const bool passed = B.cv.wait_for(lock, std::chrono::seconds(600),
                                      [&] { return B.generation != gen || B.ended > 0; });
    if (B.generation != gen) return;
    Fail(api, passed ? B.abort : std::string("waited 600 s for the other blocks at the barrier"));
}

}  // namespace opsdk_ascendc

namespace AscendC {

template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0, opsdk_ascendc::Loc loc = {}) {
    const char* api = "SyncAll";
    opsdk_ascendc::Block& b = opsdk_ascendc::Cur();
    opsdk_ascendc::Launch& L = *b.launch;
    const bool mix = L.mixType >= 0;
    if (mix && b.aic) return;  // SoftSyncAllImpl: the Cube core returns at once
    // a mixed kernel's vector cores: isAIVOnly counts blocks (both vector cores of a block share
    // a slot), otherwise GetTaskRation() * GetBlockNum() vector cores at GetBlockIdx()
    const int64_t all = mix && !isAIVOnly ? L.blockNum * L.ratio : L.blockNum;
    const int64_t blocks = usedCores != 0 ? usedCores : all;
    if (blocks != all) {
        opsdk_ascendc::Fail(api, "usedCores is " + std::to_string(usedCores) + " but the kernel runs on " +
                                     std::to_string(all) + (mix && !isAIVOnly ? " vector cores" : " blocks") +
                                     ": the barrier waits for usedCores of them, so it must be 0 or " +
                                     std::to_string(all));
    }
    if (mix && isAIVOnly && L.ratio > 1) {
        opsdk_ascendc::Fail(api, "SyncAll<true> in a kernel with " + std::to_string(L.ratio) + " vector cores a "
                                 "block: both take the block's slot of gmWorkspace (get_block_idx()); use "
                                 "SyncAll<false>, which counts every vector core");
    }
    const uint64_t need = uint64_t(blocks) * 8;
    if (gmWorkspace.GetSize() < need || ubWorkspace.GetSize() < need) {
        opsdk_ascendc::Fail(api, "gmWorkspace holds " + opsdk_ascendc::S(gmWorkspace.GetSize()) +
                                     " and ubWorkspace " + opsdk_ascendc::S(ubWorkspace.GetSize()) +
                                     " int32_t; each needs 8 per block = " + opsdk_ascendc::S(need));
    }
    if (L.barrier == nullptr && !mix) throw opsdk_ascendc::NeedsAllBlocks();
    if (mix && !opsdk_ascendc::CrossAllBlocks(*L.cross)) throw opsdk_ascendc::NeedsAllBlocks();
    AscendC::PipeBarrier<PIPE_ALL>(loc);
    const int64_t slot = mix && !isAIVOnly ? AscendC::GetBlockIdx() : b.idx;
    {
        opsdk_ascendc::Issue is(api, opsdk_ascendc::Pipe::MTE3, loc);
        ubWorkspace.Span(api, "ubWorkspace", 0, need);
        int32_t* mine = gmWorkspace.ptr_ + slot * 8;
        opsdk_ascendc::FindGm(api, mine, 32, "writes");
        ++b.syncAlls;
        if (*mine != b.syncAlls - 1) {
            opsdk_ascendc::Fail(api, "gmWorkspace[" + std::to_string(slot * 8) + "] (this block's count) is " +
                                         std::to_string(*mine) + " at barrier " + std::to_string(b.syncAlls) +
                                         "; it must start at 0: zero the workspace before the launch");
        }
        *mine = b.syncAlls;
    }
    if (mix) {
        opsdk_ascendc::MixSyncAll(true, api, loc);
    } else {
        opsdk_ascendc::PassBarrier(L, api);
    }
    AscendC::PipeBarrier<PIPE_ALL>(loc);
}

// The hardware SyncAll (dav_c220/kernel_operator_sync_impl.h SyncAllImpl: PipeBarrier<PIPE_ALL>,
// then the cross-core flag every block waits for); 8.1 has it on __CCE_AICORE__ 220 only.
template <bool isAIVOnly = true> inline void SyncAll(opsdk_ascendc::Loc loc = {}) {
#if OPSDK_AICORE_ARCH == 220
    opsdk_ascendc::Launch& L = *opsdk_ascendc::Cur().launch;
    AscendC::PipeBarrier<PIPE_ALL>(loc);
    if (L.mixType >= 0) {  // the cores of the caller's type, or (isAIVOnly false) every core
        opsdk_ascendc::MixSyncAll(isAIVOnly, "SyncAll", loc);
        return;
    }
    if (L.blockNum == 1) return;
    if (L.barrier == nullptr) throw opsdk_ascendc::NeedsAllBlocks();
    opsdk_ascendc::PassBarrier(L, "SyncAll");
#else
    (void)loc;
    opsdk_ascendc::Fail("SyncAll", "the hardware SyncAll() is not in the Ascend C of this SoC family (__CCE_AICORE__ = " +
                                       std::to_string(OPSDK_AICORE_ARCH) + "; CANN 8.1 has it on 220 only); use the "
                                       "software SyncAll(gmWorkspace, ubWorkspace)");
#endif
}

}  // namespace AscendC

#endif  // OPSDK_ASCENDC_MODEL_SYNC_ALL_H
