// Launching a kernel on opsdk's CPU model of the Ascend C API: blocks in a shuffled order,
// optionally on several threads, each with its own Unified Buffer of the SoC's capacity.
#ifndef OPSDK_ASCENDC_MODEL_LAUNCH_H
#define OPSDK_ASCENDC_MODEL_LAUNCH_H

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

#include "opsdk_model_core.h"
#include "opsdk_model_pipes.h"
#include "opsdk_model_sync_all.h"
#include "opsdk_model_mix_launch.h"

namespace opsdk_ascendc {

// The most blocks a kernel launch takes (CANN's runtime: blockDim is at most 65535).
constexpr uint32_t kMaxBlockDim = 65535;

// The system part of the GM workspace: RESERVED_WORKSPACE (basic_api/impl/utils/
// kernel_utils_constants.h: 16 MiB on __CCE_AICORE__ 220 and 300, 2 MiB on 100 and 200; what
// platform_ascendc's GetLibApiWorkSpaceSize reports for the tiling to add to its own part).
constexpr uint64_t kSysWorkspaceBytes = (OPSDK_AICORE_ARCH == 100 || OPSDK_AICORE_ARCH == 200 ? 2 : 16) << 20;

// The costs of the cycle estimate, from "name=value;...;vec.API=cycles;..." (written by
// opsdk/ascend/ascendc/_estimate.py).
inline Timing ParseTiming(const std::string& text) {
    static const std::pair<const char*, double Timing::*> kCosts[] = {
        {"issue", &Timing::issue},           {"mte2Latency", &Timing::mte2Latency},
        {"mte3Latency", &Timing::mte3Latency}, {"mte2Bpc", &Timing::mte2Bpc},
        {"mte3Bpc", &Timing::mte3Bpc},       {"burst", &Timing::burst},
        {"vecStartup", &Timing::vecStartup}, {"repeatBytes", &Timing::repeatBytes},
        {"scalarLoad", &Timing::scalarLoad}, {"scalarStore", &Timing::scalarStore},
        {"scalarGm", &Timing::scalarGm},     {"vecDefault", &Timing::vecDefault},
        {"mmadFractal", &Timing::mmadFractal}, {"mte1Latency", &Timing::mte1Latency},
        {"mte1aBpc", &Timing::mte1aBpc},     {"mte1bBpc", &Timing::mte1bBpc},
        {"fixLatency", &Timing::fixLatency}, {"fixBpc", &Timing::fixBpc},
    };
    Timing t;
    size_t at = 0;
    while (at < text.size()) {
        size_t end = text.find(';', at);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(at, end - at);
        at = end + 1;
        const size_t eq = item.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = item.substr(0, eq);
        const double v = std::stod(item.substr(eq + 1));
        if (key.rfind("vec.", 0) == 0) {
            t.vec.emplace_back(key.substr(4), v);
            continue;
        }
        bool known = false;
        for (const auto& [name, member] : kCosts) {
            if (key == name) {
                t.*member = v;
                known = true;
            }
        }
        if (!known) throw ModelError("unknown cost '" + key + "' for the estimate");
    }
    return t;
}

// One block's instructions with their times: "pipe,start,end,gmBytes,ubBytes,pred,api,where".
inline std::string BlockTrace(const Block& b) {
    std::string out;
    char line[160];
    for (size_t k = 1; k < b.pipes.instrs.size(); ++k) {
        const Instr& i = b.pipes.instrs[k];
        const uint64_t widest = WidestOperand(i);
        std::snprintf(line, sizeof line, "%s,%.3f,%.3f,%llu,%llu,%d,", PipeName(i.pipe), i.start, i.end,
                      static_cast<unsigned long long>(i.gm), static_cast<unsigned long long>(widest),
                      i.pred <= 0 ? -1 : i.pred - 1);
        out += line;
        out += i.api;
        out += ",";
        out += Where(i.loc);
        out += "\n";
    }
    return out;
}

constexpr const char* kNeedsCores = "needs the cores of kernel type ";

inline void RunBlocks(Launch& L, KernelFn fn, uint8_t** gm, uint8_t* tiling, const std::vector<int64_t>& order,
                      std::string& error, std::mutex& errMutex) {
    for (int64_t idx : order) {
        Block b;
        b.launch = &L;
        b.idx = idx;
        b.core = static_cast<int32_t>(idx);
        b.ub.reserve(L.LocalBytes());  // a Cube kernel's buffers grow it in place (GrowToCube)
        b.ub.assign(L.ubBytes, 0xff);  // uninitialised Unified Buffer reads as NaN
        b.pipes.Reset(L.ubBytes);
        b.pipes.timing = L.timing;
        tBlock = &b;
        try {
            fn(gm, L.workspace, tiling);
            CheckFlagsAtEnd();
            if (L.timing != nullptr) L.traces[static_cast<size_t>(idx)] = BlockTrace(b);
        } catch (const std::exception& e) {
            tBlock = nullptr;
            if (L.barrier != nullptr) L.barrier->End(idx, e.what());
            std::lock_guard<std::mutex> lock(errMutex);
            if (const auto* nc = dynamic_cast<const NeedsCores*>(&e)) {
                error = kNeedsCores + std::to_string(nc->type);
            } else if (error.rfind(kNeedsCores, 0) != 0 &&
                       (error.empty() || dynamic_cast<const NeedsAllBlocks*>(&e) != nullptr)) {
                error = e.what();
            }
            return;
        }
        if (L.barrier != nullptr) L.barrier->End(idx, "");
        tBlock = nullptr;
    }
}

inline void RunThreads(Launch& L, KernelFn fn, uint8_t** gm, uint8_t* tiling, const std::vector<int64_t>& order,
                       size_t threads, std::string& error, std::mutex& errMutex) {
    std::vector<std::vector<int64_t>> parts(threads);
    for (size_t i = 0; i < order.size(); ++i) parts[i % threads].push_back(order[i]);
    std::vector<std::thread> pool;
    for (auto& part : parts) {
        pool.emplace_back([&, part] { RunBlocks(L, fn, gm, tiling, part, error, errMutex); });
    }
    for (auto& t : pool) t.join();
}

// A kernel with the software SyncAll: GM as given again, then every block on its own thread.
inline void RerunTogether(Launch& L, KernelFn fn, uint8_t** gm, uint8_t* tiling, const std::vector<int64_t>& order,
                          const std::vector<std::vector<uint8_t>>& saved, std::string& error, std::mutex& errMutex) {
    if (L.blockNum > kMaxSyncBlocks) {
        error = L.kernel + ": SyncAll: the model runs a kernel with a barrier of all blocks on at most " +
                std::to_string(kMaxSyncBlocks) + " blocks at once; this launch has " + std::to_string(L.blockNum);
        return;
    }
    RestoreGm(L, saved);
    BlockBarrier barrier;
    L.barrier = &barrier;
    RunThreads(L, fn, gm, tiling, order, order.size(), error, errMutex);
    L.barrier = nullptr;
}

// Returns 0, or 1 with the failure in err.
inline int Run(const char* kernel, KernelFn fn, uint8_t** gm, const uint64_t* bytes, const char** names, int n,
               uint8_t* tiling, uint32_t blockDim, uint64_t ubBytes, const char* soc, uint64_t seed, int threads,
               char* err, uint64_t errLen, const char* costs = nullptr, const char* traceFile = nullptr,
               uint64_t userWorkspace = 0, KernelFn aic = nullptr) {
    Launch L;
    Timing timing;
    if (costs != nullptr && blockDim <= kMaxBlockDim) {
        try {
            timing = ParseTiming(costs);
        } catch (const std::exception& e) {
            std::snprintf(err, errLen, "%s: %s", kernel, e.what());
            return 1;
        }
        L.timing = &timing;
        L.traces.assign(blockDim, std::string());
    }
    L.kernel = kernel;
    L.ubBytes = ubBytes;
    L.soc = soc;
    L.blockNum = blockDim;
    for (int i = 0; i < n; ++i) {
        GmArg a;
        a.name = names[i];
        a.base = gm[i];
        a.bytes = bytes[i];
        L.gm.push_back(std::move(a));
    }
    // the GM workspace, zeroed: the user part the tiling asks for (first, so that a pointer to its
    // start is into it), then the system part before it
    std::unique_ptr<uint8_t, void (*)(void*)> workspace(
        static_cast<uint8_t*>(std::calloc(kSysWorkspaceBytes + userWorkspace, 1)), std::free);
    if (workspace == nullptr) {
        std::snprintf(err, errLen, "%s: cannot allocate the %llu-byte workspace", kernel,
                      static_cast<unsigned long long>(kSysWorkspaceBytes + userWorkspace));
        return 1;
    }
    L.workspace = workspace.get();
    L.sysWorkspace = kSysWorkspaceBytes;
    L.gm.push_back(GmArg{"workspace (user part, " + std::to_string(userWorkspace) + " bytes the tiling asks for)",
                         workspace.get() + kSysWorkspaceBytes, userWorkspace, {}});
    L.gm.push_back(GmArg{"workspace (system part: take the user part with GetUserWorkspace(workspace))",
                         workspace.get(), kSysWorkspaceBytes, {}});
    std::vector<int64_t> order(blockDim);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    std::string error;
    std::mutex errMutex;
    std::vector<std::vector<uint8_t>> saved;  // the GM arguments as given, for a rerun (SyncAll)
    for (int i = 0; i < n; ++i) saved.emplace_back(L.gm[i].base, L.gm[i].base + L.gm[i].bytes);
    if (blockDim == 0) {
        error = std::string(kernel) + ": launched with blockDim 0; the tiling must set at least 1";
    } else if (blockDim > kMaxBlockDim) {
        error = std::string(kernel) + ": launched with blockDim " + std::to_string(blockDim) +
                "; the launch takes at most " + std::to_string(kMaxBlockDim) +
                " blocks (aclrtLaunchKernel's blockDim); give each block more of the work";
    } else if (threads <= 1) {
        RunBlocks(L, fn, gm, tiling, order, error, errMutex);
    } else {
        RunThreads(L, fn, gm, tiling, order, threads, error, errMutex);
    }
    if (error == NeedsAllBlocks().what()) {
        error.clear();
        RerunTogether(L, fn, gm, tiling, order, saved, error, errMutex);
    }
    if (error.rfind(kNeedsCores, 0) == 0) {  // a mixed kernel: run its blocks' Cube and vector cores
        error = RunMix(L, std::stoi(error.substr(std::strlen(kNeedsCores))), fn, aic, gm, tiling, order, saved);
    }
    if (error.empty() && L.timing != nullptr && traceFile != nullptr) {
        std::FILE* f = std::fopen(traceFile, "w");
        if (f == nullptr) {
            std::snprintf(err, errLen, "%s: cannot write the estimate's trace to %s", kernel, traceFile);
            return 1;
        }
        for (size_t k = 0; k < L.traces.size(); ++k) {
            std::fprintf(f, "#block %zu\n%s", k, L.traces[k].c_str());
        }
        std::fclose(f);
    }
    if (error.empty()) {
        if (L.sameValueBytes > 0) {  // rc 0 with a message: a warning
            std::snprintf(err, errLen, "%s: %llu GM bytes are written by two blocks with the same value, first %s: "
                          "benign on the chip, but the blocks' ranges overlap (the tiling's tail runs into the next "
                          "block's range)", kernel, static_cast<unsigned long long>(L.sameValueBytes),
                          L.sameValueFirst.c_str());
        }
        return 0;
    }
    std::snprintf(err, errLen, "%s", error.c_str());
    return 1;
}

}  // namespace opsdk_ascendc

#endif  // OPSDK_ASCENDC_MODEL_LAUNCH_H
