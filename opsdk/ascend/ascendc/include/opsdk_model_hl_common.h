// opsdk's CPU model of the Ascend C API: what the high-level library of CANN 8.1.RC1
// (highlevel_api/lib) shares in the model. A high-level API runs as the vector instructions
// its implementation issues, each recorded on pipe V at the kernel's line of the call and named
// "API/Instruction" (e.g. "SoftMax/Exp"), so the race checker sees every Unified Buffer byte it
// touches and the estimate costs it as that instruction. Part of opsdk (not CANN).
#ifndef OPSDK_ASCENDC_MODEL_HL_COMMON_H
#define OPSDK_ASCENDC_MODEL_HL_COMMON_H

#include <cmath>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "opsdk_model_memory.h"
#include "opsdk_model_vector.h"
#include "opsdk_model_misc.h"
#include "register/tilingdata_base.h"

namespace opsdk_ascendc {

// "API/Instruction", kept for the run (instructions hold the name by pointer).
inline const char* HlName(const char* api, const char* step) {
    static std::mutex m;
    static std::set<std::string> names;
    std::lock_guard<std::mutex> g(m);
    return names.insert(std::string(api) + "/" + step).first->c_str();
}

// A failure of a high-level API outside its instructions, with the kernel's line of the call.
[[noreturn]] inline void HlFail(const char* api, const std::string& what, const Loc& loc) {
    const std::string f = loc.file ? loc.file : "";
    std::string at;
    if (!f.empty() && f.find("opsdk_model_") == std::string::npos) {
        at = " [at " + f.substr(f.find_last_of('/') + 1) + ":" + std::to_string(loc.line) + "]";
    }
    Fail(api, what + at);
}

// One vector instruction of a high-level API.
class HlStep {
public:
    HlStep(const char* api, const char* step, const Loc& loc) : name_(HlName(api, step)), is_(name_, Pipe::V, loc) {}
    const char* name() const { return name_; }

private:
    const char* name_;
    Issue is_;
};

// n elements of `t` from element `at`, read as float by the current instruction (`arg` names the
// operand; a name starting "dst" would count as a write).
template <typename U>
inline std::vector<float> HlRead(const HlStep& s, const AscendC::LocalTensor<U>& t, const char* arg, uint64_t at,
                                 uint64_t n) {
    std::vector<float> v(n);
    if (n == 0) return v;
    const uint8_t* p = t.Span(s.name(), arg, at, n);
    for (uint64_t i = 0; i < n; ++i) v[i] = ToF(Load<U>(p + i * sizeof(U)));
    return v;
}

// Writes `v` (rounded to U) to `t` from element `at`; `arg` must start with "dst".
template <typename U>
inline void HlWrite(const HlStep& s, const AscendC::LocalTensor<U>& t, const char* arg, uint64_t at,
                    const std::vector<float>& v) {
    if (v.empty()) return;
    uint8_t* p = t.Span(s.name(), arg, at, v.size());
    for (uint64_t i = 0; i < v.size(); ++i) Store<U>(p + i * sizeof(U), FromF<U>(v[i]));
}

// Rounds every value through U, as a vector instruction writing U does.
template <typename U> inline void HlRound(std::vector<float>& v) {
    for (float& x : v) x = ToF(FromF<U>(x));
}

inline float HlExp(float x) { return Ftz(std::exp(x)); }
inline float HlLn(float x) { return Ftz(std::log(x)); }

// The tmp space of an API: a sharedTmpBuffer, or the tmp-buffer stack (the Unified Buffer after
// the TPipe's buffers), as float elements, with where it came from for the messages.
struct HlTmp {
    AscendC::LocalTensor<float> f;
    uint64_t bytes;
    const char* where;
};

inline HlTmp HlShared(const char* api, const AscendC::LocalTensor<uint8_t>& t) {
    t.Check(api, "sharedTmpBuffer");
    return HlTmp{t.template ReinterpretCast<float>(), t.GetSize(), "the sharedTmpBuffer"};
}

inline HlTmp HlStack() {
    const uint64_t bytes = StackBytes() / 32 * 32;
    AscendC::LocalTensor<uint8_t> u(RawSlot(Cur().ubUsed, bytes), 0, static_cast<uint32_t>(bytes));
    return HlTmp{u.template ReinterpretCast<float>(), bytes,
                 "the tmp-buffer stack: the Unified Buffer after the TPipe's buffers"};
}

inline uint32_t HlAlign(uint32_t v, uint32_t unit) { return (v + unit - 1) / unit * unit; }

}  // namespace opsdk_ascendc

#endif  // OPSDK_ASCENDC_MODEL_HL_COMMON_H
