// The Python-free part of opsdk's C++ runtime, linked next to every operator's kernel:
// the thread pool behind ctx.parallel_for, the thread-count setting, and the invocation
// core (opsdk/invoke.h) that finds a registration by name and dtypes and runs its kernel.
// The pybind11 entry point (entry.cpp), the AI CPU adapter and the cross-build harness all
// use this one file.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif
#if defined(__linux__)
#include <sched.h>
#endif

#include "opsdk/invoke.h"

namespace opsdk {

int& num_threads_setting() {
  static int n = [] {
    if (const char* env = std::getenv("OPSDK_NUM_THREADS")) {
      const int v = std::atoi(env);
      if (v > 0) return v;
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw ? static_cast<int>(hw) : 1;
  }();
  return n;
}

// ---------------------------------------------------------------------- thread pool
namespace detail {
namespace {

thread_local bool in_parallel_region = false;

constexpr int kDefaultSpinMicroseconds = 300;
constexpr int kMaxSpinMicroseconds = 1000000;

// How long an idle worker keeps polling for the next job before it sleeps.
std::atomic<int>& spin_us() {
  static std::atomic<int> us{[] {
    if (const char* env = std::getenv("OPSDK_SPIN_US")) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && v >= 0)
        return static_cast<int>(std::min<long>(v, kMaxSpinMicroseconds));
    }
    return kDefaultSpinMicroseconds;
  }()};
  return us;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield" ::: "memory");
#endif
}

using Clock = std::chrono::steady_clock;

// A test-only hook (tests/cpp/test_pool.cpp builds the runtime with OPSDK_POOL_TEST_HOOKS):
// called by the caller of a job after it published the job's epoch and before it wakes the
// sleeping workers, the one window in which a worker may see the job and go to sleep again
// before the wake-up. Production builds have no hook.
#if defined(OPSDK_POOL_TEST_HOOKS)
}  // namespace
void (*pool_hook_after_publish)() = nullptr;
namespace {
inline void hook_after_publish() {
  if (pool_hook_after_publish != nullptr) pool_hook_after_publish();
}
#else
inline void hook_after_publish() {}
#endif

// Keeping a worker off the caller's CPU. Linux places a woken thread by heuristics, and a
// worker the caller wakes may be queued on the caller's own CPU while another CPU idles,
// for milliseconds, until the next load balancing: measured, a two-thread Softmax, Gelu
// or convolution then ran at its one-thread speed for whole phases, in about half of the
// phases that followed an idle spell. So a worker that joins a job and finds itself on the
// CPU the caller started the job on moves off it: it narrows its own affinity to the
// process's CPUs less that one, which migrates it at once. It keeps that affinity until it
// again finds itself on a caller's CPU; it is never bound to a CPU the process may not
// use. Linux only, with two CPUs or more; OPSDK_PIN_THREADS=0 turns it off.
class Placement {
 public:
  Placement() {
#if defined(__linux__)
    const char* env = std::getenv("OPSDK_PIN_THREADS");
    if (env != nullptr && env[0] == '0' && env[1] == '\0') return;
    CPU_ZERO(&allowed_);
    if (sched_getaffinity(0, sizeof allowed_, &allowed_) == 0 && CPU_COUNT(&allowed_) >= 2)
      enabled_ = true;
#endif
  }
  // The CPU the calling thread is on, or -1 when placement is off.
  int current() const {
#if defined(__linux__)
    if (enabled_) return sched_getcpu();
#endif
    return -1;
  }
  // Called by a worker that joins a job the caller started on `caller_cpu`.
  void keep_off(int caller_cpu) const {
#if defined(__linux__)
    if (!enabled_ || caller_cpu < 0 || caller_cpu >= CPU_SETSIZE) return;
    if (sched_getcpu() != caller_cpu || !CPU_ISSET(caller_cpu, &allowed_)) return;
    cpu_set_t others = allowed_;
    CPU_CLR(caller_cpu, &others);
    pthread_setaffinity_np(pthread_self(), sizeof others, &others);
#else
    (void)caller_cpu;
#endif
  }

 private:
  bool enabled_ = false;
#if defined(__linux__)
  cpu_set_t allowed_;
#endif
};

// Polls `ready` with pause instructions for up to `us` microseconds; true as soon as it
// holds, false when the time is up. Every 64 polls (about 2 us) it reads the clock and
// yields the core, so a thread of another pool woken onto this core (ONNX Runtime's, in
// the graph executor) runs at once instead of waiting for the polling to end.
template <class Ready> bool spin_until(Ready ready, int us) {
  if (us <= 0) return ready();
  const auto deadline = Clock::now() + std::chrono::microseconds(us);
  for (unsigned i = 1;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if (i % 64 == 0) {
      if (Clock::now() >= deadline) return ready();
      std::this_thread::yield();
    }
  }
}

// A small persistent pool, one job at a time. The calling thread runs ranges too; ranges
// are handed out by an atomic counter. A job offers `slots_` seats to the workers; a
// worker claims one with a compare-and-swap, so exactly as many workers join as there are
// spare ranges, and a worker that wakes late (descheduled on a busy machine) finds no seat
// left and never holds up the caller, who takes back the unclaimed seats when it runs out
// of ranges and waits only for the workers that joined.
//
// Waking a sleeping thread costs tens of microseconds (a futex call and an inter-processor
// interrupt, more in a VM), paid on every parallel_for if workers sleep at once. So after
// a job a worker polls for the next one for spin_us() microseconds (OPSDK_SPIN_US,
// set_spin_microseconds; 0 = sleep at once) before it sleeps on a condition variable; the
// hand-off to a polling worker takes no lock and no system call. park() ends the polling
// early, e.g. before other code (ONNX Runtime's own pool) needs the cores. state() tells
// how many workers sleep and how their polling ended (opsdk::thread_pool_state()).
class ThreadPool {
 public:
  // The pool of this process: this module's own, or the one another operator module
  // made, once adopt() installed it. A forked child has the memory but not the threads
  // (and perhaps a mutex a worker held): it starts a new pool. Leaked on purpose: no join
  // at exit.
  static ThreadPool& get() {
    std::atomic<ThreadPool*>& p = instance();
    if (forked().load(std::memory_order_relaxed) && forked().exchange(false))
      p.store(new ThreadPool());
    ThreadPool* pool = p.load(std::memory_order_acquire);
    if (pool == nullptr) {
      auto* fresh = new ThreadPool();
      if (p.compare_exchange_strong(pool, fresh)) return *fresh;
      delete fresh;  // another thread installed one first
    }
    return *pool;
  }
  static void adopt(ThreadPool* other) { instance().store(other, std::memory_order_release); }

  // The caller holds no lock a concurrent caller could wait on: a second thread calling
  // while a job runs runs its ranges inline instead of queueing behind it.
  bool try_run(int64_t n, int64_t chunk, int threads, RangeFn fn, void* ctx) {
    std::unique_lock<std::mutex> job(run_mu_, std::try_to_lock);
    if (!job.owns_lock()) return false;
    ensure_workers(threads - 1);
    caller_cpu_.store(placement_.current(), std::memory_order_relaxed);
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    chunk_ = chunk;
    error_ = nullptr;
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const int seats = std::min(threads - 1, workers_);
    slots_.store(seats, std::memory_order_release);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    hook_after_publish();
    wake(seats);
    work();
    const int joined = seats - slots_.exchange(0, std::memory_order_acq_rel);
    wait_done(joined);
    if (error_) std::rethrow_exception(error_);
    return true;
  }

  void park() { park_epoch_.fetch_add(1, std::memory_order_release); }

  // A worker updates its counters before it counts itself among the sleepers, so a reader
  // that sees `sleeping` reach `workers` also sees why each of them went to sleep.
  ThreadPoolState state() const {
    ThreadPoolState s;
    s.sleeping = sleepers_.load(std::memory_order_seq_cst);
    s.polling = polling_.load(std::memory_order_seq_cst);
    s.workers = started_.load(std::memory_order_acquire);
    s.spins_expired = spins_expired_.load(std::memory_order_acquire);
    s.spins_parked = spins_parked_.load(std::memory_order_acquire);
    return s;
  }

 private:
  static std::atomic<ThreadPool*>& instance() {
    static std::atomic<ThreadPool*> pool{[] {
#if defined(__unix__) || defined(__APPLE__)
      pthread_atfork(nullptr, nullptr, [] { forked().store(true); });
#endif
      return static_cast<ThreadPool*>(nullptr);
    }()};
    return pool;
  }
  static std::atomic<bool>& forked() {
    static std::atomic<bool> f{false};
    return f;
  }

  // A new worker starts from the epoch before the job that needs it, so it joins that job.
  void ensure_workers(int want) {
    const uint64_t start = epoch_.load(std::memory_order_relaxed);
    while (workers_ < want) {
      std::thread([this, start] { loop(start); }).detach();
      ++workers_;
      started_.store(workers_, std::memory_order_release);
    }
  }
  // Wakes up to `seats` sleeping workers; polling ones see the new epoch by themselves.
  // sleepers_ counts the workers asleep and not yet woken: a woken one leaves it at once,
  // though it runs only when the scheduler gets to it (woken_: wake-ups not yet taken).
  //
  // Only a worker that slept before this job's epoch wakes for it. One that saw the epoch
  // and went to sleep again before this call took mu_ (the caller descheduled in between,
  // on a loaded machine) waits for the next job: a notify_one reaching it would be lost (it
  // waits on, and the wake-up it took off sleepers_ stayed owed for ever, so the pool was
  // never seen idle again, and the worker the wake-up was meant for slept through the job).
  // Such late sleepers are counted apart (late_epoch_, late_sleepers_); when there are any,
  // notify_all wakes every earlier sleeper, and the late ones wait on.
  void wake(int seats) {
    if (seats <= 0 || sleepers_.load(std::memory_order_seq_cst) == 0) return;
    std::lock_guard<std::mutex> g(mu_);
    const uint64_t now = epoch_.load(std::memory_order_relaxed);
    const int late = late_epoch_ == now ? late_sleepers_ : 0;
    const int ready = sleepers_.load(std::memory_order_relaxed) - late;
    const int n = late > 0 ? ready : std::min(seats, ready);
    if (n <= 0) return;
    sleepers_.fetch_sub(n, std::memory_order_seq_cst);
    woken_ += n;
    if (late > 0)
      cv_.notify_all();
    else
      for (int i = 0; i < n; ++i) cv_.notify_one();
  }
  // Under mu_: a worker about to sleep at epoch `seen` (the newest epoch, or it would not
  // sleep), and one leaving that sleep.
  void count_late(uint64_t seen, int delta) {
    if (delta > 0 && late_epoch_ != seen) {
      late_epoch_ = seen;
      late_sleepers_ = 0;
    }
    if (late_epoch_ == seen) late_sleepers_ += delta;
  }
  void work() {
    in_parallel_region = true;
    for (;;) {
      const int64_t b = next_.fetch_add(chunk_, std::memory_order_relaxed);
      if (b >= n_) break;
      try {
        fn_(ctx_, b, std::min(n_, b + chunk_));
      } catch (...) {
        std::lock_guard<std::mutex> g(error_mu_);
        if (!error_) error_ = std::current_exception();
        next_.store(n_, std::memory_order_relaxed);
      }
    }
    in_parallel_region = false;
  }
  bool claim_seat() {
    int s = slots_.load(std::memory_order_acquire);
    while (s > 0)
      if (slots_.compare_exchange_weak(s, s - 1, std::memory_order_acq_rel)) return true;
    return false;
  }
  void loop(uint64_t seen) {
    for (;;) {
      const uint64_t parked = park_epoch_.load(std::memory_order_acquire);
      const int us = spin_us().load(std::memory_order_relaxed);
      if (us > 0) polling_.fetch_add(1, std::memory_order_seq_cst);
      spin_until([&] { return epoch_.load(std::memory_order_acquire) != seen ||
                              park_epoch_.load(std::memory_order_relaxed) != parked; },
                 us);
      const bool idle = epoch_.load(std::memory_order_acquire) == seen;
      if (idle && park_epoch_.load(std::memory_order_relaxed) != parked)
        spins_parked_.fetch_add(1, std::memory_order_release);
      else if (idle && us > 0)
        spins_expired_.fetch_add(1, std::memory_order_release);
      if (us > 0) polling_.fetch_sub(1, std::memory_order_seq_cst);
      if (idle) {
        std::unique_lock<std::mutex> g(mu_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);  // before the check: see wake()
        if (epoch_.load(std::memory_order_seq_cst) != seen) {
          sleepers_.fetch_sub(1, std::memory_order_seq_cst);  // a job came: no sleep
        } else {
          count_late(seen, +1);
          cv_.wait(g, [&] { return epoch_.load(std::memory_order_seq_cst) != seen; });
          count_late(seen, -1);
          if (woken_ > 0)
            --woken_;  // wake() took this worker (or one still on its way) off sleepers_
          else
            sleepers_.fetch_sub(1, std::memory_order_seq_cst);  // woke without a notify
        }
      }
      seen = epoch_.load(std::memory_order_acquire);
      if (!claim_seat()) continue;
      placement_.keep_off(caller_cpu_.load(std::memory_order_relaxed));
      work();
      done_.fetch_add(1, std::memory_order_seq_cst);
      if (caller_waiting_.load(std::memory_order_seq_cst)) {
        std::lock_guard<std::mutex> g(done_mu_);
        done_cv_.notify_one();
      }
    }
  }
  // The caller polls for the joined workers (they are finishing their last range), and
  // sleeps if that takes long: a worker may have been descheduled.
  void wait_done(int joined) {
    auto finished = [&] { return done_.load(std::memory_order_seq_cst) >= joined; };
    if (spin_until(finished, 50)) return;
    std::unique_lock<std::mutex> g(done_mu_);
    caller_waiting_.store(true, std::memory_order_seq_cst);
    done_cv_.wait(g, finished);
    caller_waiting_.store(false, std::memory_order_relaxed);
  }

  std::mutex run_mu_, mu_, done_mu_, error_mu_;
  std::condition_variable cv_, done_cv_;
  RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
  std::atomic<uint64_t> epoch_{0}, park_epoch_{0};
  std::atomic<int> slots_{0}, done_{0}, sleepers_{0};
  std::atomic<bool> caller_waiting_{false};
  std::atomic<int> caller_cpu_{-1};
  std::atomic<int> started_{0}, polling_{0};  // started_: workers_, for state()
  int woken_ = 0;                               // guarded by mu_
  uint64_t late_epoch_ = 0;                     // guarded by mu_: see wake()
  int late_sleepers_ = 0;                       // guarded by mu_: asleep at late_epoch_
  std::atomic<uint64_t> spins_expired_{0}, spins_parked_{0};
  const Placement placement_;
  int workers_ = 0;
  std::exception_ptr error_;
};

}  // namespace

void parallel_run(int64_t n, int64_t grain, RangeFn fn, void* ctx) {
  const int threads = std::max(1, num_threads_setting());
  grain = std::max<int64_t>(grain, 1);
  if (threads == 1 || n <= grain || in_parallel_region) {  // nested: run inline
    fn(ctx, 0, n);
    return;
  }
  const int64_t parts = std::min<int64_t>(threads * 4, (n + grain - 1) / grain);
  const int64_t chunk = (n + parts - 1) / parts;
  const int used = static_cast<int>(std::min<int64_t>(threads, parts));  // caller included
  if (!ThreadPool::get().try_run(n, chunk, used, fn, ctx)) fn(ctx, 0, n);  // pool busy
}

}  // namespace detail

int spin_microseconds() { return detail::spin_us().load(std::memory_order_relaxed); }

void set_spin_microseconds(int us) {
  detail::spin_us().store(std::clamp(us, 0, detail::kMaxSpinMicroseconds));
}

void park_workers() { detail::ThreadPool::get().park(); }

ThreadPoolState thread_pool_state() { return detail::ThreadPool::get().state(); }

namespace detail {

std::string thread_pool_key() {
  // Bump the version when ThreadPool's members change; the size catches most forgotten bumps.
  return "opsdk.thread_pool.v4." + std::to_string(sizeof(ThreadPool));
}

void* thread_pool_handle() { return &ThreadPool::get(); }

void adopt_thread_pool(void* handle) { ThreadPool::adopt(static_cast<ThreadPool*>(handle)); }

}  // namespace detail

namespace detail {

std::string run_kernel(const OpRegistration& r, const CustomOpKernelContext& ctx) noexcept {
  try {
    r.kernel()(ctx);
  } catch (const std::exception& e) {
    std::string error = e.what();
    return error.empty() ? "std::exception with an empty message" : error;
  } catch (...) {
    return "unknown C++ exception";
  }
  return {};
}

}  // namespace detail

// ------------------------------------------------------------------ invocation core
namespace {

using detail::cat;

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
  return s;
}

std::string signature(const OpRegistration& r) {
  std::vector<std::string> ins, outs;
  for (const auto& a : r.inputs()) ins.push_back(a.dtype);
  for (const auto& a : r.outputs()) outs.push_back(a.dtype);
  return "(" + join(ins) + ") -> (" + join(outs) + ")";
}

// The declarations sorted by index (registrations may list them in any order).
std::vector<ArgDecl> by_index(const std::vector<ArgDecl>& decls) {
  std::vector<ArgDecl> v = decls;
  std::sort(v.begin(), v.end(), [](const ArgDecl& a, const ArgDecl& b) { return a.index < b.index; });
  return v;
}

bool given(const std::vector<RawTensor>& ts, size_t i) { return i < ts.size() && ts[i].present; }

bool matches(const OpRegistration& r, const std::vector<RawTensor>& ins,
             const std::vector<RawTensor>& outs) {
  const auto in_decl = by_index(r.inputs());
  const auto out_decl = by_index(r.outputs());
  if (ins.size() > in_decl.size() || outs.size() != out_decl.size()) return false;
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i].present && dtype_name(ins[i].dtype) != in_decl[i].dtype) return false;
  for (size_t i = 0; i < outs.size(); ++i)
    if (dtype_name(outs[i].dtype) != out_decl[i].dtype) return false;
  return true;
}

// Why no registration of `op` matches: the first argument whose dtype none of them has, or
// the combination with the registered ones listed.
[[noreturn]] void no_match(const std::string& op, const std::vector<const OpRegistration*>& regs,
                           const std::vector<RawTensor>& ins, const std::vector<RawTensor>& outs) {
  const auto in0 = by_index(regs[0]->inputs());
  const auto out0 = by_index(regs[0]->outputs());
  if (ins.size() > in0.size())
    throw OpError(cat(op, ": ", ins.size(), " inputs given, the operator declares ", in0.size(),
                      " (", regs[0]->inputs().size(), " in REGISTER_CUSTOM_OP)"));
  if (outs.size() != out0.size())
    throw OpError(cat(op, ": ", outs.size(), " outputs given, expected ", out0.size()));
  auto check = [&](const char* kind, const std::vector<RawTensor>& ts, bool input) {
    for (size_t i = 0; i < ts.size(); ++i) {
      if (!ts[i].present) continue;
      std::vector<std::string> seen;
      for (const auto* r : regs) {
        const auto d = by_index(input ? r->inputs() : r->outputs());
        if (std::find(seen.begin(), seen.end(), d[i].dtype) == seen.end()) seen.push_back(d[i].dtype);
      }
      const std::string got = dtype_name(ts[i].dtype);
      if (std::find(seen.begin(), seen.end(), got) == seen.end())
        throw OpError(cat(op, ": ", kind, " '", (input ? in0 : out0)[i].name, "' has dtype ", got,
                          ", expected ", join(seen, " or "), " (the registered kernels)"));
    }
  };
  check("input", ins, true);
  check("output", outs, false);
  std::vector<std::string> sigs;
  for (const auto* r : regs) sigs.push_back(signature(*r));
  std::vector<std::string> got_in, got_out;
  for (const auto& t : ins) got_in.push_back(t.present ? dtype_name(t.dtype) : "absent");
  for (const auto& t : outs) got_out.push_back(dtype_name(t.dtype));
  throw OpError(cat(op, ": no kernel for dtypes (", join(got_in), ") -> (", join(got_out),
                    "); registered: ", join(sigs, "; ")));
}

const OpRegistration& find_registration(const std::string& op, const std::vector<RawTensor>& ins,
                                        const std::vector<RawTensor>& outs) {
  {
    // Kernels<...> registrations get their spec once: only when a spec or a registration
    // was added since the last call (static initialisers of a library loaded later)
    static std::mutex declaring;
    static size_t applied_specs = 0, applied_regs = 0;
    std::lock_guard<std::mutex> lock(declaring);
    if (declared_specs().size() != applied_specs || registry().size() != applied_regs) {
      detail::apply_declared_specs();
      applied_specs = declared_specs().size();
      applied_regs = registry().size();
    }
  }
  std::vector<const OpRegistration*> named;
  for (const auto& r : registry())
    if (r->name() == op) named.push_back(r.get());
  if (named.empty()) {
    std::vector<std::string> known;
    for (const auto& r : registry())
      if (std::find(known.begin(), known.end(), r->name()) == known.end())
        known.push_back(r->name());
    throw OpError(cat(op, ": no such operator is registered in this library (registered: ",
                      known.empty() ? std::string("none") : join(known),
                      "); link the operator's kernel.cpp and check the REGISTER_CUSTOM_OP name"));
  }
  for (const auto* r : named)
    if (!r->pending_columns().empty())
      throw OpError(cat(op, ": the kernels registered with Kernels<...> have no declared spec; "
                        "declare its spec (opsdk::SpecRegistration, which opsdk writes from spec.py)"));
  for (const auto* r : named)
    if (matches(*r, ins, outs)) return *r;
  no_match(op, named, ins, outs);
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

// Copies between a strided tensor and a contiguous buffer, element by element.
void copy_strided(char* strided, char* dense, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& strides, size_t item, bool to_dense) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
    char* s = strided + off * static_cast<int64_t>(item);
    char* c = dense + k * static_cast<int64_t>(item);
    std::memcpy(to_dense ? c : s, to_dense ? s : c, item);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// A tensor view of one argument; `scratch` keeps a contiguous copy when the kernel needs one.
struct Arg {
  Tensor view;
  std::vector<char> scratch;
  const RawTensor* raw = nullptr;  // set when scratch must be scattered back (outputs)
};

// The bytes [first, last) a tensor's elements span (empty for no elements).
std::pair<const char*, const char*> byte_span(const RawTensor& t) {
  const auto item = static_cast<int64_t>(dtype_size(t.dtype));
  const auto strides = t.strides.empty() ? contiguous_strides(t.shape) : t.strides;
  if (strides.size() != t.shape.size()) return {nullptr, nullptr};  // make_arg explains
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] <= 0) return {nullptr, nullptr};
    const int64_t reach = (t.shape[d] - 1) * strides[d] * item;
    (reach < 0 ? lo : hi) += reach;
  }
  const char* base = static_cast<const char*>(t.data);
  return {base + lo, base + hi + item};
}

// True when output `i` may share memory with an input or an earlier output.
bool overlaps(const std::vector<RawTensor>& inputs, const std::vector<RawTensor>& outputs,
              size_t i) {
  const auto o = byte_span(outputs[i]);
  auto hit = [&](const RawTensor& t) {
    const auto s = byte_span(t);
    return t.present && t.data && o.first < s.second && s.first < o.second;
  };
  return o.first && (std::any_of(inputs.begin(), inputs.end(), hit) ||
                     std::any_of(outputs.begin(), outputs.begin() + i, hit));
}

// `apart`: an output that overlaps another argument is computed in scratch and copied back,
// so the kernel never reads what it already wrote (NumPy's rule for overlapping operands).
Arg make_arg(const std::string& op, const RawTensor& t, const ArgDecl& decl, bool output,
             bool strided_ok, bool apart = false) {
  const char* kind = output ? "output" : "input";
  if (!t.strides.empty() && t.strides.size() != t.shape.size())
    throw OpError(cat(op, ": ", kind, " '", decl.name, "' has ", t.shape.size(), " dims but ",
                      t.strides.size(), " strides; pass one stride per dim or none"));
  int64_t numel = 1;
  for (int64_t d : t.shape) {
    if (d < 0)
      throw OpError(cat(op, ": ", kind, " '", decl.name, "' has a negative dim in shape ",
                        detail::shape_str(t.shape)));
    numel *= d;
  }
  if (numel > 0 && t.data == nullptr)
    throw OpError(cat(op, ": ", kind, " '", decl.name, "' of shape ", detail::shape_str(t.shape),
                      " has no data (null pointer)"));
  const auto dense = contiguous_strides(t.shape);
  Arg a;
  std::vector<int64_t> strides = t.strides.empty() ? dense : t.strides;
  Tensor probe(t.data, t.dtype, t.shape, strides, decl.name, output);
  if ((strided_ok || probe.is_contiguous() || numel == 0) && !apart) {
    a.view = std::move(probe);
    return a;
  }
  const size_t item = dtype_size(t.dtype);
  a.scratch.resize(static_cast<size_t>(numel) * item);
  if (!output)
    copy_strided(static_cast<char*>(t.data), a.scratch.data(), t.shape, strides, item, true);
  else
    a.raw = &t;
  a.view = Tensor(a.scratch.data(), t.dtype, t.shape, dense, decl.name, output);
  return a;
}

bool attr_fits(const AttrValue& v, const std::string& type) {
  static const char* names[] = {"int", "float", "bool", "string", "ints", "floats"};
  return type == names[v.index()];
}

// The value of a declared attribute as the kernel reads it: ints widen to float(s).
AttrValue coerce_attr(const std::string& op, const AttrDecl& decl, const AttrValue& v) {
  if (attr_fits(v, decl.type)) return v;
  if (decl.type == "float" && std::holds_alternative<int64_t>(v))
    return static_cast<double>(std::get<int64_t>(v));
  if (decl.type == "floats" && std::holds_alternative<std::vector<int64_t>>(v)) {
    const auto& iv = std::get<std::vector<int64_t>>(v);
    return std::vector<double>(iv.begin(), iv.end());
  }
  throw OpError(cat(op, ": attribute '", decl.name, "' is declared ", decl.type,
                    " (REGISTER_CUSTOM_OP .Attr), got a value of type ", attr_value_type(v)));
}

std::vector<AttrValue> resolve_attrs(const std::string& op, const OpRegistration& r,
                                     const std::vector<NamedAttr>& attrs,
                                     std::vector<std::string>& names) {
  for (const auto& [name, _] : attrs) {
    const bool declared = std::any_of(r.attrs().begin(), r.attrs().end(),
                                      [&](const AttrDecl& d) { return d.name == name; });
    if (!declared) {
      std::vector<std::string> decl;
      for (const auto& d : r.attrs()) decl.push_back(d.name);
      throw OpError(cat(op, ": unknown attribute '", name, "'; declared: ",
                        decl.empty() ? std::string("none") : join(decl)));
    }
  }
  std::vector<AttrValue> values;
  for (const auto& d : r.attrs()) {
    auto it = std::find_if(attrs.begin(), attrs.end(),
                           [&](const NamedAttr& a) { return a.first == d.name; });
    if (it == attrs.end() && !d.has_default)
      throw OpError(cat(op, ": required attribute '", d.name, "' (", d.type,
                        ") was not given and has no registered default; pass it, or declare "
                        "a default with .Attr(name, type, default)"));
    names.push_back(d.name);
    values.push_back(it == attrs.end() ? d.default_value : coerce_attr(op, d, it->second));
  }
  return values;
}

}  // namespace

void invoke(const std::string& op, const std::vector<RawTensor>& inputs,
            const std::vector<RawTensor>& outputs, const std::vector<NamedAttr>& attrs) {
  const OpRegistration& r = find_registration(op, inputs, outputs);
  if (!r.kernel()) throw OpError(cat(op, ": the registration has no .KernelFn(...)"));
  const auto in_decl = by_index(r.inputs());
  const auto out_decl = by_index(r.outputs());
  std::vector<Arg> ins, outs;
  std::vector<bool> present;
  for (size_t i = 0; i < in_decl.size(); ++i) {
    const bool has = given(inputs, i);
    if (!has && !in_decl[i].optional)
      throw OpError(cat(op, ": required input '", in_decl[i].name, "' (index ", i,
                        ") was not given"));
    present.push_back(has);
    ins.push_back(has ? make_arg(op, inputs[i], in_decl[i], false, r.accepts_strided())
                      : Arg{Tensor(nullptr, dtype_from_name(in_decl[i].dtype), {}, {},
                                   in_decl[i].name, false), {}, nullptr});
  }
  for (size_t i = 0; i < out_decl.size(); ++i)
    outs.push_back(make_arg(op, outputs[i], out_decl[i], true, r.accepts_strided(),
                            overlaps(inputs, outputs, i)));
  std::vector<std::string> names;
  std::vector<AttrValue> values = resolve_attrs(op, r, attrs, names);
  std::vector<Tensor> in_views, out_views;
  for (const auto& a : ins) in_views.push_back(a.view);
  for (const auto& a : outs) out_views.push_back(a.view);
  CustomOpKernelContext ctx(op, std::move(in_views), std::move(present), std::move(out_views),
                            &names, std::move(values));
  const std::string error = detail::run_kernel(r, ctx);
  if (!error.empty()) throw OpError(op + ": " + error);
  for (auto& a : outs)
    if (a.raw)
      copy_strided(static_cast<char*>(a.raw->data), a.scratch.data(), a.raw->shape,
                   a.raw->strides.empty() ? contiguous_strides(a.raw->shape) : a.raw->strides,
                   dtype_size(a.raw->dtype), false);
}

}  // namespace opsdk
