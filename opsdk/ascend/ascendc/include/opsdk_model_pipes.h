// opsdk's CPU model of the Ascend C API: the pipes of an AI Core and the happens-before
// between them, the race and synchronisation checker (docs/ascendc_model.md, "Pipes").
//
// The scalar unit issues instructions in program order to in-order queues, one per pipe
// (S, V, MTE2, MTE3 and the Cube's MTE1, M, FIX), which run concurrently. An instruction is ordered after every earlier
// instruction of its own pipe and, because the scalar unit issues in order, after every earlier
// scalar instruction; anything else needs a flag: SetFlag<SRC_DST>(id) runs on SRC after SRC's
// earlier instructions, WaitFlag<SRC_DST>(id) holds DST until then (basic_api/impl/
// kernel_tquesync_impl.h: set_flag(src, dst, id) / wait_flag(src, dst, id)). TQue's EnQue/DeQue
// and FreeTensor/AllocTensor set and wait such flags for the queue's position
// (basic_api/impl/kernel_tquebind_impl.h: enQueEvt, freeBufEvt), PipeBarrier<PIPE_ALL> orders
// everything. Two accesses to one Unified Buffer byte from different pipes with no order
// between them, at least one a write, are a race: the run fails naming both.
#ifndef OPSDK_ASCENDC_MODEL_PIPES_H
#define OPSDK_ASCENDC_MODEL_PIPES_H

#include "opsdk_model_core.h"

namespace opsdk_ascendc {

inline std::string Where(const Loc& l) {
    std::string f = l.file ? l.file : "";
    if (f.empty() || f.find("opsdk_model_") != std::string::npos) return "";
    auto slash = f.find_last_of('/');
    return " (" + (slash == std::string::npos ? f : f.substr(slash + 1)) + ":" + std::to_string(l.line) + ")";
}

inline std::string Describe(const Instr& i) { return std::string(i.api) + Where(i.loc) + " on pipe " + PipeName(i.pipe); }

inline void Schedule(Pipes& P, const Timing& T);

// Issue one instruction on `pipe` (RAII: the instruction lasts while the guard lives; a guard
// inside another one is part of the outer instruction).
class Issue {
public:
    Issue(const char* api, Pipe pipe, const Loc& loc = Loc()) {
        Block* b = tBlock;
        if (b == nullptr || b->pipes.current >= 0) return;
        Pipes& P = b->pipes;
        Clock& c = P.clock[static_cast<int>(pipe)];
        // issued in program order, after the scalar's earlier instructions (not after its stores
        // drained: the S clock counts SS only through flags)
        if (pipe != Pipe::S) Join(c, P.clock[static_cast<int>(Pipe::S)]);
        ++c[static_cast<int>(pipe)];
        P.instrs.push_back(Instr{api, pipe, c[static_cast<int>(pipe)], loc});
        P.current = static_cast<int32_t>(P.instrs.size() - 1);
        owner_ = true;
    }
    ~Issue() {
        if (owner_ && tBlock) {
            Pipes& P = tBlock->pipes;
            if (P.timing != nullptr) Schedule(P, *P.timing);
            P.current = -1;
        }
    }
    Issue(const Issue&) = delete;
    Issue& operator=(const Issue&) = delete;

private:
    bool owner_ = false;
};

// ---- the cycle estimate (docs/ascendc_model.md, "The estimate") ----

// The bytes of an instruction's widest data operand (a high-level API's sharedTmpBuffer is
// scratch it may use whole, not data it computes on).
inline uint64_t WidestOperand(const Instr& i) {
    uint64_t widest = 0;
    for (int k = 0; k < 4; ++k) {
        if (i.ubArg[k] != nullptr && std::strcmp(i.ubArg[k], "sharedTmpBuffer") == 0) continue;
        widest = std::max(widest, i.ub[k]);
    }
    return widest;
}

// Cycles the current instruction takes on its pipe, from the bytes it moved.
inline double Cost(const Instr& i, const Timing& T) {
    switch (i.pipe) {
        case Pipe::MTE2:
            return i.gm == 0 ? 0 : T.mte2Latency + double(i.gm) / T.mte2Bpc + T.burst * (i.bursts - 1);
        case Pipe::MTE3:
            return i.gm == 0 ? 0 : T.mte3Latency + double(i.gm) / T.mte3Bpc + T.burst * (i.bursts - 1);
        case Pipe::V: {
            const uint64_t widest = WidestOperand(i);
            if (widest == 0) return 0;
            return T.vecStartup + std::ceil(double(widest) / T.repeatBytes) * T.CyclesPerRepeat(i.api);
        }
        case Pipe::SS:
            return T.scalarStore;
        case Pipe::MTE1:
        case Pipe::M:
            return i.work < 0 ? 0 : i.work;  // LoadData and Mmad work out their cycles
        case Pipe::FIX:
            return i.gm == 0 ? 0 : T.fixLatency + double(i.gm) / T.fixBpc;
        case Pipe::S:
            if (i.gm != 0) return T.scalarGm;
            for (uint64_t b : i.ub) {
                if (b != 0) return T.scalarLoad;
            }
            return 0;  // a flag, a barrier: only its wait
    }
    return 0;
}

// Times of the current instruction: it starts when the scalar unit issued it, its pipe is
// free and the flag it waits for is set; the scalar unit waits for its own instructions.
inline void Schedule(Pipes& P, const Timing& T) {
    const int32_t me = P.current;
    Instr& i = P.instrs[static_cast<size_t>(me)];
    const int p = i.pipe == Pipe::SS ? static_cast<int>(Pipe::S) : static_cast<int>(i.pipe);
    double start = P.issueAt;
    int32_t pred = P.lastIssued;
    if (P.pipeFree[p] > start) {
        start = P.pipeFree[p];
        pred = P.lastOn[p];
    }
    if (i.depInstr >= 0 && i.dep > start) {
        start = i.dep;
        pred = i.depInstr;
    }
    i.start = start;
    i.end = start + Cost(i, T);
    i.pred = pred;
    P.pipeFree[p] = i.end;
    P.lastOn[p] = me;
    P.issueAt = p == static_cast<int>(Pipe::S) ? i.end : P.issueAt + T.issue;
    P.lastIssued = me;
}

// Whether instruction `id` is ordered before what pipe `q` executes now.
inline bool Before(const Pipes& P, uint32_t id, Pipe q) {
    const Instr& a = P.instrs[id];
    if (a.pipe == Pipe::SS && q == Pipe::S) return true;  // the scalar sees its own stores
    return a.pipe == q || a.tick <= P.clock[static_cast<int>(q)][static_cast<int>(a.pipe)];
}

// "Unified Buffer bytes [a, b)", "L0C bytes [a, b)": a range of a block's local byte array.
inline std::string LocalRange(uint64_t at, uint64_t n) {
    const Launch& L = *Cur().launch;
    const Mem m = L.MemOf(at);
    const uint64_t base = L.MemBase(m);
    return std::string(MemName(m)) + " bytes [" + S(at - base) + ", " + S(at - base + n) + ")";
}

inline std::string HardEventName(Pipe src, Pipe dst) { return std::string(PipeName(src)) + "_" + PipeName(dst); }

[[noreturn]] inline void Race(const Pipes& P, uint32_t earlier, bool earlierWrites, bool laterWrites,
                              uint64_t byte, uint64_t run, const std::string& what) {
    const Instr& a = P.instrs[earlier];
    const Instr& b = P.instrs[P.current];
    const std::string ev = HardEventName(a.pipe, b.pipe);
    std::string fix = "SetFlag<HardEvent::" + ev + ">(id) after the first and WaitFlag<HardEvent::" + ev +
                      ">(id) before the second";
    if (a.pipe == Pipe::MTE2 && b.pipe == Pipe::V && what.rfind("a TQue", 0) == 0) {
        fix = "EnQue the tensor after the copy and DeQue it before computing on it, or " + fix;
    } else if (a.pipe == Pipe::V && b.pipe == Pipe::MTE3 && what.rfind("a TQue", 0) == 0) {
        fix = "EnQue the result and DeQue it before the copy out, or " + fix;
    } else if (what.rfind("a TQue", 0) == 0 && (b.pipe == Pipe::MTE2 || a.pipe == Pipe::MTE3 || !earlierWrites)) {
        fix = "FreeTensor the tensor when its last reader is done and AllocTensor it again (the queue waits "
              "for the free), or " + fix;
    } else if (what.rfind("a TQue", 0) == 0) {
        fix = "EnQue the tensor after the first and DeQue it before the second, or " + fix;
    }
    const char* kind = earlierWrites ? (laterWrites ? "overwrites what" : "reads what") : "overwrites what";
    const char* verb = earlierWrites ? "wrote" : "read";
    throw ModelError(
        Who(*tBlock) +
        ": race on " + LocalRange(byte, run) + " of " + what + ": " + Describe(b) +
        " " + kind + " " + Describe(a) + " " + verb +
        ", with no synchronisation between the two pipes (on the chip they run concurrently, so the result "
        "depends on timing). Fix: " + fix);
}

// A GM read by the current instruction of bytes [off, off + n) of `a` that an earlier
// instruction of the same block on another pipe wrote, with no order between them, is a race
// (a copy out may not have reached GM when the copy in reads it: FIX or MTE3, then MTE2 or S).
inline void GmOrder(const GmArg& a, uint64_t off, uint64_t n, bool write) {
    Block* b = tBlock;
    if (b == nullptr || b->pipes.current < 0) return;
    Pipes& P = b->pipes;
    const uint32_t me = static_cast<uint32_t>(P.current);
    if (write) {
        b->gmWrites.push_back(GmWriteRec{&a, off, off + n, me});
        return;
    }
    const Pipe q = P.instrs[me].pipe;
    for (const GmWriteRec& w : b->gmWrites) {
        if (w.arg != &a || w.hi <= off || w.lo >= off + n || w.instr == me || Before(P, w.instr, q)) continue;
        const Instr& wi = P.instrs[w.instr];
        const std::string ev = HardEventName(wi.pipe, q);
        throw ModelError(Who(*b) + ": race on GM bytes [" + S(std::max(w.lo, off)) +
                         ", " + S(std::min(w.hi, off + n)) + ") of argument '" + a.name + "': " +
                         Describe(P.instrs[me]) + " reads what " + Describe(wi) +
                         " wrote, with no synchronisation between the two pipes (the write may not have reached GM "
                         "when the read runs). Fix: SetFlag<HardEvent::" + ev + ">(id) after the first and "
                         "WaitFlag<HardEvent::" + ev + ">(id) before the second");
    }
}

// What a race is on: the argument and its buffer.
struct Buffer {
    const char* arg;
    uint64_t offset, bytes;
    bool tbuf;
    bool raw = false;  // a LocalTensor(TPosition, addr, tileSize): no TPipe buffer behind it
    // `api`: the instruction whose argument this is (the second of a race's two: the first
    // instruction's own name for the tensor may differ)
    std::string Name(const char* api) const {
        const char* kind = raw ? "a LocalTensor made from an address" : tbuf ? "a TBuf" : "a TQue buffer";
        return std::string(kind) + " at " + LocalRange(offset, bytes) + " (" + api + "'s argument " + arg + ")";
    }
};

// Record an access by the current instruction to Unified Buffer bytes [at, at + n).
inline void Access(uint64_t at, uint64_t n, bool write, const Buffer& buf) {
    Block* b = tBlock;
    if (b == nullptr || b->pipes.current < 0 || n == 0) return;
    Pipes& P = b->pipes;
    const uint32_t me = static_cast<uint32_t>(P.current);
    const Pipe q = P.instrs[me].pipe;
    const int qi = static_cast<int>(q);
    const uint64_t end = std::min<uint64_t>(at + n, P.lastWrite.size());
    if (P.timing != nullptr) {  // bytes per operand, for the estimate
        Instr& ins = P.instrs[me];
        for (int k = 0; k < 4; ++k) {
            if (ins.ubArg[k] == nullptr || std::strcmp(ins.ubArg[k], buf.arg) == 0) {
                ins.ubArg[k] = buf.arg;
                ins.ub[k] += n;
                break;
            }
        }
    }
    for (uint64_t i = at; i < end; ++i) {
        const uint32_t w = P.lastWrite[i];
        if (w != 0 && w != me && !Before(P, w, q)) {
            uint64_t j = i;
            while (j < end && P.lastWrite[j] == w) ++j;
            Race(P, w, true, write, i, j - i, buf.Name(P.instrs[me].api));
        }
        if (write) {
            for (int p = 0; p < kPipes; ++p) {
                const uint32_t r = P.lastRead[i][p];
                if (p != qi && r != 0 && r != me && !Before(P, r, q)) {
                    uint64_t j = i;
                    while (j < end && P.lastRead[j][p] == r) ++j;
                    Race(P, r, false, true, i, j - i, buf.Name(P.instrs[me].api));
                }
            }
            P.lastWrite[i] = me;
            P.lastRead[i].fill(0);
        } else {
            P.lastRead[i][qi] = me;
        }
    }
}

// A flag between two pipes: SetFlag runs on `src`, WaitFlag holds `dst` until it is set.
inline void SetFlagOn(Flag& f, Pipe src, const char* api, const Loc& loc, const std::string& name) {
    Issue i(api, src, loc);
    Pipes& P = Cur().pipes;
    if (f.set) {
        Fail(api, name + " is set again before a WaitFlag consumed it (set by " + Describe(P.instrs[f.instr]) +
                      "): the second set is lost on the chip; wait for it first or use another event id "
                      "(GetTPipePtr()->FetchEventID / AllocEventID)");
    }
    f.set = true;
    f.clock = P.clock[static_cast<int>(src)];
    if (src == Pipe::S) {  // a flag set by the scalar unit drains its stores first
        f.clock[static_cast<int>(Pipe::SS)] = P.clock[static_cast<int>(Pipe::SS)][static_cast<int>(Pipe::SS)];
    }
    f.instr = static_cast<uint32_t>(P.current);
}

inline void WaitFlagOn(Flag& f, Pipe dst, const char* api, const Loc& loc, const std::string& name) {
    Issue i(api, dst, loc);
    Pipes& P = Cur().pipes;
    if (!f.set) {
        Fail(api, "waits for " + name + Where(loc) + ", which no SetFlag set: on the chip pipe " + PipeName(dst) +
                      " would wait forever (a hang); SetFlag it on the source pipe first");
    }
    Join(P.clock[static_cast<int>(dst)], f.clock);
    f.set = false;
    Instr& me = P.instrs[static_cast<size_t>(P.current)];
    me.dep = P.instrs[f.instr].end;
    me.depInstr = static_cast<int32_t>(f.instr);
}

// PipeBarrier<PIPE_ALL>: every later instruction is ordered after every earlier one.
inline void BarrierAll(const Loc& loc) {
    Issue i("PipeBarrier<PIPE_ALL>", Pipe::S, loc);
    Pipes& P = Cur().pipes;
    Clock all{};
    for (const Clock& c : P.clock) Join(all, c);
    for (Clock& c : P.clock) c = all;
    Instr& me = P.instrs[static_cast<size_t>(P.current)];
    for (int p = 0; p < kPipes; ++p) {  // the scalar unit waits until every pipe is idle
        if (P.lastOn[p] >= 0 && P.pipeFree[p] >= me.dep) {
            me.dep = P.pipeFree[p];
            me.depInstr = P.lastOn[p];
        }
    }
}

// Flags the kernel set and never waited for: an error at the end of the block.
inline void CheckFlagsAtEnd() {
    Block& b = Cur();
    for (const Flag& f : b.pipes.userFlags) {
        if (f.set) {
            Fail("SetFlag", "the flag set by " + Describe(b.pipes.instrs[f.instr]) +
                                " is never waited for (WaitFlag) before the kernel ends: the next kernel on this "
                                "core starts with it set; wait for every flag you set");
        }
    }
}

}  // namespace opsdk_ascendc

#endif  // OPSDK_ASCENDC_MODEL_PIPES_H
