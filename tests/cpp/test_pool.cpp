// Tests of the thread pool behind ctx.parallel_for (csrc/runtime.cpp), built and run by
// tests/package/test_cross_aarch64.py with the host compiler (and the aarch64 cross compiler under
// qemu). Prints one line per failed check and exits non-zero if any failed. No check reads
// a clock or CPU time: each waits for the event it means (a worker joining, a worker going
// to sleep, as opsdk::thread_pool_state() shows), with a cap only a hang reaches.
#include <opsdk/invoke.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(OPSDK_POOL_TEST_HOOKS)
#error "build with -DOPSDK_POOL_TEST_HOOKS (the runtime's test-only hook, as tests/package/test_cross_aarch64.py does)"
#endif
namespace opsdk::detail {
extern void (*pool_hook_after_publish)();  // runtime.cpp: between publishing a job and waking
}

static std::atomic<int> failures{0};
static std::atomic<int> checks{0};

static void expect(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAILED: %s\n", what.c_str());
  }
}

// Waits until `done()` holds; false only after 30 s, which no working pool needs (its
// longest wait is a 1 s spin), however loaded the machine.
template <class Done> static bool eventually(Done done) {
  const auto cap = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > cap) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Every index of [0, n) visited exactly once, over `calls` parallel_for calls.
static bool covers_once(int64_t n, int64_t grain, int calls) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  for (int c = 0; c < calls; ++c) {
    for (auto& h : hits) h.store(0, std::memory_order_relaxed);
    opsdk::parallel_for(n, grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (const auto& h : hits)
      if (h.load() != 1) return false;
  }
  return true;
}

// Distinct threads that ran ranges of one call.
static int threads_used(int64_t n) {
  std::vector<std::thread::id> ids(static_cast<size_t>(n));
  opsdk::parallel_for(n, 1, [&](int64_t b, int64_t e) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (int64_t i = b; i < e; ++i) ids[static_cast<size_t>(i)] = std::this_thread::get_id();
  });
  std::vector<std::thread::id> seen;
  for (auto id : ids)
    if (std::find(seen.begin(), seen.end(), id) == seen.end()) seen.push_back(id);
  return static_cast<int>(seen.size());
}

// True when a worker runs a range of one call: the caller's first range waits until
// another thread ran one (a worker that never joins leaves it waiting for the cap, once).
static bool a_worker_joins() {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> worker_ran{false};
  bool waited = false;
  opsdk::parallel_for(8, 1, [&](int64_t, int64_t) {
    if (std::this_thread::get_id() != caller) {
      worker_ran.store(true);
    } else if (!waited) {
      waited = true;
      eventually([&] { return worker_ran.load(); });
    }
  });
  return worker_ran.load();
}

// The first parallel call of the process starts the workers; they join that very call,
// not only the next one.
static void test_first_call_uses_the_new_workers() {
  opsdk::num_threads_setting() = 2;
  expect(a_worker_joins(), "the first parallel call ran on the caller alone");
}

static void test_coverage_and_thread_counts() {
  for (int threads : {1, 2, 3, 4, 2, 1, 3}) {  // grows and shrinks between calls
    opsdk::num_threads_setting() = threads;
    for (int64_t n : {1, 2, 7, 64, 1000, 100003})
      expect(covers_once(n, 1, n > 1000 ? 20 : 300),
             "threads=" + std::to_string(threads) + " n=" + std::to_string(n) +
                 ": every index exactly once");
  }
  opsdk::num_threads_setting() = 3;
  const int used = threads_used(12);
  expect(used >= 1 && used <= 3, "3 threads: ranges ran on " + std::to_string(used) + " threads");
  opsdk::num_threads_setting() = 1;
  expect(threads_used(12) == 1, "1 thread: everything runs on the caller");
}

static void test_exceptions() {
  opsdk::num_threads_setting() = 2;
  for (int k = 0; k < 200; ++k) {
    const int64_t bad = (k * 37) % 1000;  // the range holding it may run on either thread
    try {
      opsdk::parallel_for(1000, 1, [&](int64_t b, int64_t e) {
        if (b <= bad && bad < e) throw std::runtime_error("range " + std::to_string(bad));
      });
      expect(false, "an exception in a range reaches the caller");
    } catch (const std::runtime_error& e) {
      expect(std::string(e.what()) == "range " + std::to_string(bad),
             std::string("the range's own exception, got: ") + e.what());
    }
  }
  expect(covers_once(5000, 1, 50), "the pool works after exceptions");
}

static void test_nested() {
  opsdk::num_threads_setting() = 2;
  std::atomic<int64_t> total{0};
  opsdk::parallel_for(64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      opsdk::parallel_for(100, 1, [&](int64_t bb, int64_t ee) { total.fetch_add(ee - bb); });
  });
  expect(total.load() == 6400, "a parallel_for inside a range runs inline and completely");
}

static void test_concurrent_callers() {
  opsdk::num_threads_setting() = 2;
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int k = 0; k < 300; ++k) {
        const int64_t n = 1000 + t * 17 + k;
        std::vector<int> hits(static_cast<size_t>(n), 0);
        opsdk::parallel_for(n, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        });
        for (int h : hits)
          if (h != 1) ++bad;
      }
    });
  for (auto& c : callers) c.join();
  expect(bad.load() == 0, "4 threads calling parallel_for at once: each index once per call");
}

// A process that forks after using the pool: the child runs parallel_for (alarm: a
// deadlock is killed after 20 s and reported).
static void test_fork() {
  opsdk::num_threads_setting() = 2;
  expect(covers_once(10000, 1, 20), "before fork");
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);
    const bool ok = covers_once(10000, 1, 50) && covers_once(100, 1, 50);
    _exit(ok ? 0 : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string why =
      WIFSIGNALED(status)
          ? "forked child: killed by signal " + std::to_string(WTERMSIG(status)) + " (deadlock?)"
          : "forked child: parallel_for results wrong";
  expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, why);
  expect(covers_once(10000, 1, 20), "the parent's pool after fork");
}

static opsdk::ThreadPoolState state() { return opsdk::thread_pool_state(); }

static bool all_asleep() {
  const opsdk::ThreadPoolState s = state();
  return s.workers > 0 && s.sleeping == s.workers;
}

static std::string describe(const opsdk::ThreadPoolState& s) {
  return std::to_string(s.sleeping) + " of " + std::to_string(s.workers) +
         " workers asleep, " + std::to_string(s.polling) + " polling, " +
         std::to_string(s.spins_expired) + " spins expired, " +
         std::to_string(s.spins_parked) + " parked";
}

// Waits for `done()` and reports `what` with the pool's state once the wait is over.
template <class Done> static void expect_state(Done done, const std::string& what) {
  const bool ok = eventually(done);
  expect(ok, what + ": " + describe(state()));
}

static void job() { covers_once(4096, 1, 1); }

// A worker that sees a job and goes back to sleep before the job's caller wakes the
// sleepers (the caller descheduled between publishing the job and waking them, as on a
// loaded machine): the hook holds the caller in that window until every worker sleeps.
// The pool must still count each of them asleep and wake one for the next job. Before, the
// wake-up went to a worker that had already seen the job: it slept on, counted neither
// asleep nor polling ("2 of 3 workers asleep, 0 polling" for good), and the worker the
// wake-up was meant for was never woken.
static std::atomic<bool> hold_caller{false};

static void test_wake_racing_with_sleep() {
  const int spin = opsdk::spin_microseconds();
  opsdk::num_threads_setting() = std::max(1, state().workers) + 1;  // a seat for each worker
  opsdk::detail::pool_hook_after_publish = [] {
    if (!hold_caller.exchange(false)) return;
    opsdk::set_spin_microseconds(0);  // the workers that see the job sleep right after it
    eventually(all_asleep);
  };
  for (int cycle = 0; cycle < 20; ++cycle) {
    const std::string at = "wake racing with sleep, cycle " + std::to_string(cycle);
    opsdk::set_spin_microseconds(1000000);
    job();  // the workers poll after it, so they see the next job by themselves
    hold_caller.store(true);
    job();
    const bool asleep = eventually(all_asleep);
    expect(asleep, at + ": every worker counts as asleep: " + describe(state()));
    const bool joined = a_worker_joins();
    expect(joined, at + ": a sleeping worker is woken for the next job: " + describe(state()));
    if (!asleep || !joined) break;  // one report, not 20 waits for the cap
  }
  opsdk::detail::pool_hook_after_publish = nullptr;
  opsdk::set_spin_microseconds(spin);
}

// Many rapid jobs with the caller yielding or napping in that window, spin times from 0 to
// 1 ms, park_workers() between some jobs and thread counts that change: every job covers
// its range once, and afterwards every worker sleeps and one joins the next job.
static std::atomic<unsigned> stress_calls{0};

static void test_wake_races_under_stress() {
  const int spin = opsdk::spin_microseconds();
  opsdk::detail::pool_hook_after_publish = [] {
    const unsigned k = stress_calls.fetch_add(1);
    if (k % 3 == 0) std::this_thread::yield();
    if (k % 3 == 1) std::this_thread::sleep_for(std::chrono::microseconds(k % 50));
  };
  bool covered = true;
  for (int cycle = 0; cycle < 400 && covered; ++cycle) {
    opsdk::num_threads_setting() = 2 + cycle % 3;
    opsdk::set_spin_microseconds(cycle % 4 == 0 ? 0 : (cycle % 4) * 300);
    covered = covers_once(257 + cycle, 1, 1);
    if (cycle % 5 == 0) opsdk::park_workers();
  }
  opsdk::detail::pool_hook_after_publish = nullptr;
  expect(covered, "racing wake-ups: every index exactly once");
  opsdk::set_spin_microseconds(0);
  expect_state(all_asleep, "racing wake-ups: afterwards every worker sleeps");
  opsdk::num_threads_setting() = 2;
  expect(a_worker_joins(), "racing wake-ups: a worker joins the next job: " + describe(state()));
  opsdk::set_spin_microseconds(spin);
}

// The pool's state, not its CPU time: a worker that polls after a job goes to sleep when
// its spin time is up or park_workers() ends the polling, and the pool counts which. Each
// wait is for that event; only a worker that never sleeps reaches the cap.
static void test_spin_is_bounded() {
  opsdk::num_threads_setting() = 2;
  expect(opsdk::spin_microseconds() >= 0, "spin time is set");
  opsdk::set_spin_microseconds(-5);
  expect(opsdk::spin_microseconds() == 0, "a negative spin time clamps to 0");
  opsdk::set_spin_microseconds(5000000);
  expect(opsdk::spin_microseconds() == 1000000, "the spin time clamps to 1 s");

  // After a job the workers poll for the spin time, then sleep: a 20 ms spin ...
  opsdk::set_spin_microseconds(20000);
  expect_state(all_asleep, "idle workers sleep");
  opsdk::ThreadPoolState before = state();
  for (int k = 0; k < 50; ++k) job();
  expect_state(all_asleep, "after a 20 ms spin every worker sleeps");
  opsdk::ThreadPoolState after = state();
  expect(after.spins_expired > before.spins_expired && after.spins_parked == before.spins_parked,
         "20 ms spin: the workers slept when the spin time was up: " + describe(after));

  // ... and a 1 s one.
  opsdk::set_spin_microseconds(1000000);
  before = state();
  job();
  expect_state(all_asleep, "after a 1 s spin every worker sleeps");
  after = state();
  expect(after.spins_expired > before.spins_expired && after.spins_parked == before.spins_parked,
         "1 s spin: the workers slept when the spin time was up: " + describe(after));

  // park_workers() ends the polling before the 1 s is up: called once a worker polls. A
  // worker whose spin time ran out before the call (the caller descheduled that long)
  // counts as expired instead: so a few tries, one of which has to see the worker parked.
  bool parked = false;
  for (int attempt = 0; attempt < 20 && !parked; ++attempt) {
    before = state();
    job();
    expect_state([&] {
                   const opsdk::ThreadPoolState s = state();
                   return s.polling > 0 || s.spins_expired > before.spins_expired;
                 },
                 "after a job with a 1 s spin a worker polls");
    opsdk::park_workers();
    expect_state(all_asleep, "after park_workers() every worker sleeps");
    parked = state().spins_parked > before.spins_parked;
  }
  expect(parked, "park_workers() ended a 1 s spin: " + describe(state()));

  // Spin 0: workers sleep at once, no polling to expire or park.
  opsdk::set_spin_microseconds(0);
  before = state();
  for (int k = 0; k < 50; ++k) job();
  expect_state(all_asleep, "spin 0: every worker sleeps");
  after = state();
  expect(after.spins_expired == before.spins_expired && after.spins_parked == before.spins_parked,
         "spin 0: no worker polled: " + describe(after));
  expect(covers_once(100000, 1, 20), "spin 0: results");
}

int main() {
  test_first_call_uses_the_new_workers();  // first: no parallel call may precede it
  test_wake_racing_with_sleep();
  test_coverage_and_thread_counts();
  test_exceptions();
  test_nested();
  test_concurrent_callers();
  test_fork();
  test_wake_races_under_stress();
  test_spin_is_bounded();
  std::printf("%d checks, %d failed\n", checks.load(), failures.load());
  return failures.load() == 0 ? 0 : 1;
}
