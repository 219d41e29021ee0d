// Launching a mixed kernel on opsdk's CPU model of the Ascend C API: each block's Cube core and
// vector cores on threads of their own, a block at a time, or every block's at once when the
// kernel synchronises across blocks (docs/ascendc_model.md, "Mixed kernels"). Part of opsdk.
#ifndef OPSDK_ASCENDC_MODEL_MIX_LAUNCH_H
#define OPSDK_ASCENDC_MODEL_MIX_LAUNCH_H

#include <thread>

#include "opsdk_model_mix.h"

namespace opsdk_ascendc {

using KernelFn = void (*)(uint8_t** gm, uint8_t* workspace, uint8_t* tiling);

// GM as the launch was given it (the workspace, not saved, zeroed again), for a rerun.
inline void RestoreGm(Launch& L, const std::vector<std::vector<uint8_t>>& saved) {
    for (size_t i = 0; i < L.gm.size(); ++i) {
        GmArg& a = L.gm[i];
        if (i < saved.size() && !saved[i].empty()) std::copy(saved[i].begin(), saved[i].end(), a.base);
        else if (a.base != nullptr) std::memset(a.base, 0, a.bytes);
        a.writer.clear();
    }
    L.sameValueBytes = 0;
}

// What the cores of a run report back.
struct CoreErrors {
    std::mutex m;
    std::string error;
    bool needsAll = false;
};

inline void RunCore(Launch& L, KernelFn fn, uint8_t** gm, uint8_t* tiling, int64_t blk, bool aic, int sub,
                    CoreErrors& out) {
    Block b;
    b.launch = &L;
    b.idx = blk;
    b.aic = aic;
    b.sub = sub;
    b.core = CoreId(L, blk, aic, sub);
    b.logical = aic || L.ratio == 0 ? blk : blk * L.ratio + sub;
    b.ub.reserve(L.LocalBytes());
    b.ub.assign(L.ubBytes, 0xff);
    b.pipes.Reset(L.ubBytes);
    tBlock = &b;
    std::string why;
    try {
        fn(gm, L.workspace, tiling);
        CheckFlagsAtEnd();
    } catch (const NeedsAllBlocks& e) {
        std::lock_guard<std::mutex> lock(out.m);
        out.needsAll = true;
        why = e.what();
    } catch (const std::exception& e) {
        why = e.what();
        std::lock_guard<std::mutex> lock(out.m);
        if (out.error.empty() && !out.needsAll) out.error = why;
    }
    tBlock = nullptr;
    CoreEnded(*L.cross, L, why);
}

// Run blocks `blocks` (all of them, or one) with every core on its own thread.
inline void RunCoresOf(Launch& L, KernelFn aiv, KernelFn aic, uint8_t** gm, uint8_t* tiling,
                       const std::vector<int64_t>& blocks, CoreErrors& out) {
    CrossCore X;
    X.allBlocks = static_cast<int64_t>(blocks.size()) == L.blockNum;
    X.live = static_cast<int64_t>(blocks.size()) * L.PerBlock();
    L.cross = &X;
    std::vector<std::thread> pool;
    for (int64_t blk : blocks) {
        if (L.hasAic) pool.emplace_back([&, blk] { RunCore(L, aic, gm, tiling, blk, true, 0, out); });
        for (int s = 0; s < L.ratio; ++s) {
            pool.emplace_back([&, blk, s] { RunCore(L, aiv, gm, tiling, blk, false, s, out); });
        }
    }
    for (auto& t : pool) t.join();
    L.cross = nullptr;
    if (out.error.empty() && !out.needsAll) out.error = FlagsLeft(L, X).empty() ? "" : L.kernel + ": " + FlagsLeft(L, X);
}

// Run a kernel of mixed type `type`: returns the error, or "".
inline std::string RunMix(Launch& L, int type, KernelFn aiv, KernelFn aic, uint8_t** gm, uint8_t* tiling,
                          const std::vector<int64_t>& order, const std::vector<std::vector<uint8_t>>& saved) {
    const std::string k = L.kernel;
    if (L.timing != nullptr) {
        return k + ": the estimate does not cover mixed kernels (" + KernelTypeName(type) + ") yet; run it "
               "without the estimate to check it";
    }
    L.mixType = type;
    L.hasAic = type != KERNEL_TYPE_AIV_ONLY && type != KERNEL_TYPE_MIX_AIV_1_0;
    L.ratio = type == KERNEL_TYPE_MIX_AIC_1_2 ? 2 : (type == KERNEL_TYPE_MIX_AIC_1_1 || !L.hasAic) ? 1 : 0;
    if (L.hasAic && aic == nullptr) {
        return k + ": declares " + KernelTypeName(type) + ", so each block runs a Cube core, but the kernel was "
               "compiled for the vector core only; compile it once per core type (opsdk ascendc run does so when "
               "the file declares KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_...) or KERNEL_TYPE_AIC_ONLY)";
    }
    RestoreGm(L, saved);
    CoreErrors out;
    for (int64_t blk : order) {
        RunCoresOf(L, aiv, aic, gm, tiling, {blk}, out);
        if (!out.error.empty() || out.needsAll) break;
    }
    if (out.needsAll) {
        if (L.blockNum > kMaxSyncBlocks) {
            return k + ": the model runs a kernel that synchronises all blocks on at most " +
                   std::to_string(kMaxSyncBlocks) + " blocks at once; this launch has " + std::to_string(L.blockNum);
        }
        RestoreGm(L, saved);
        out.needsAll = false;
        out.error.clear();
        RunCoresOf(L, aiv, aic, gm, tiling, order, out);
    }
    return out.error;
}

}  // namespace opsdk_ascendc

#endif  // OPSDK_ASCENDC_MODEL_MIX_LAUNCH_H
