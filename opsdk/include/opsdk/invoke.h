// opsdk invocation core: call a registered kernel by operator name, without Python.
//
// The same core serves every caller of a kernel outside the Python module: the AI CPU
// adapter of the CANN project (the NPU's AArch64 cores), the aarch64 verification harness
// and any C++ host program. It is defined in opsdk/csrc/runtime.cpp, which is linked next
// to the operator's kernel.cpp:
//
//   #include <opsdk/invoke.h>
//
//   std::vector<float> x = {0.5f, 2.f}, y(2);
//   opsdk::RawTensor in{x.data(), opsdk::DType::Float32, {2}};
//   opsdk::RawTensor out{y.data(), opsdk::DType::Float32, {2}};
//   opsdk::invoke("ThresholdedRelu", {in}, {out}, {{"alpha", 1.0}});   // y == {0, 2}
//
// Errors (unknown operator, wrong arity, a dtype no registration has, a missing required
// attribute, an exception from the kernel) are thrown as opsdk::OpError naming the
// operator, the argument, what was expected and what was given.
#pragma once

#include <opsdk/custom_op.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace opsdk {

// One input or output as the caller holds it.
struct RawTensor {
  void* data = nullptr;
  DType dtype = DType::Invalid;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements; empty means contiguous
  bool present = true;           // false for an optional input that was not given
};

using NamedAttr = std::pair<std::string, AttrValue>;

// Finds the registration of `op` whose input/output dtypes match, checks arity, builds the
// CustomOpKernelContext (attributes by name; absent ones take the registered default) and
// runs the kernel. Inputs may be fewer than declared when the missing trailing ones are
// optional. A strided tensor given to a kernel that does not declare AcceptsStrided() is
// gathered into (and, for an output, scattered back from) a contiguous buffer.
// Throws OpError naming the op, the argument, expected vs actual.
void invoke(const std::string& op, const std::vector<RawTensor>& inputs,
            const std::vector<RawTensor>& outputs, const std::vector<NamedAttr>& attrs);

// The thread pool behind ctx.parallel_for. After a job its idle workers poll for the next
// one for spin_microseconds() before they sleep, so back-to-back calls skip the cost of
// waking a sleeping thread (tens of microseconds). The default is 300 us, or
// $OPSDK_SPIN_US; 0 makes workers sleep at once. Polling is bounded: an idle process uses
// no CPU once the time is up. park_workers() ends the polling now, e.g. before handing the
// cores to another thread pool.
//
//   opsdk::set_spin_microseconds(0);   // a host running many processes per core
int spin_microseconds();
void set_spin_microseconds(int us);  // clamped to [0, 1000000]
void park_workers();

// What the pool's workers do now and how their polling ended, for tests and diagnostics
// (the counters only grow; compare two readings). A worker that finds a new job while it
// polls counts in neither counter; one that sleeps at once (spin time 0) in neither too.
// A worker a job woke counts as sleeping no more, even before it runs. The pool starts its
// workers on the first parallel call; before that all are 0.
//
//   opsdk::ThreadPoolState s = opsdk::thread_pool_state();
//   bool idle = s.sleeping == s.workers;   // no worker polls or runs a range, none woken
struct ThreadPoolState {
  int workers = 0;             // worker threads started (the calling thread not counted)
  int sleeping = 0;            // of them, asleep now: they use no CPU until the next job
  int polling = 0;             // of them, polling for the next job now (spin time > 0)
  uint64_t spins_expired = 0;  // times a worker polled for the whole spin time, then slept
  uint64_t spins_parked = 0;   // times park_workers() ended a worker's polling
};
ThreadPoolState thread_pool_state();

namespace detail {
// One pool for all the operator modules of a process: the first module publishes its pool
// under thread_pool_key() (the Python entry point keeps it in pybind11's shared data) and
// the others adopt it, so their idle workers never poll side by side. The key names the
// pool's layout: only modules built from the same runtime share.
std::string thread_pool_key();
void* thread_pool_handle();
void adopt_thread_pool(void* handle);

// Runs the kernel of `r` on `ctx`. Returns "" on success, else the message of the exception
// the kernel threw (never throws). The pybind11 entry point and invoke() share it.
std::string run_kernel(const OpRegistration& r, const CustomOpKernelContext& ctx) noexcept;
}  // namespace detail

}  // namespace opsdk
