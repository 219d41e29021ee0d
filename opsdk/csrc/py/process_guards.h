// A kernel that ends the process: fatal signals and exit() inside a kernel name the
// operator; the lifeline that ends a validation worker with its parent.
// Part of opsdk's pybind11 entry point (csrc/entry.cpp includes it once, after interrupt.h).
#pragma once

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <poll.h>
#include <unistd.h>

namespace {

// A kernel that ends the process. In-process, `op(x)` must not end a program silently: a
// fatal signal inside a kernel prints the operator's name, then goes to the handler that
// was there before (Python's faulthandler, a sanitizer's, or the default); exit() and _exit()
// called from the kernel's code (the module is linked with --wrap=exit,--wrap=_exit,
// --wrap=_Exit by OpsdkOperator.cmake) or exit() from a library it calls (on_exit) print it
// too, and a status 0, which would report success, becomes 1.
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr const char* kFatalNames[] = {"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT"};
struct sigaction g_prev_fatal[5];
std::atomic<int> g_exit_told{0};

void on_fatal(int sig, siginfo_t* info, void*) {
  for (size_t i = 0; i < 5; ++i) {
    if (kFatalSignals[i] != sig) continue;
    if (g_in_kernel.load() > 0) {
      say("\nopsdk: the kernel of ");
      say(g_kernel_name.load());
      say(" crashed with ");
      say(kFatalNames[i]);
      say("; the process ends\n");
    }
    sigaction(sig, &g_prev_fatal[i], nullptr);
    if (info == nullptr || info->si_code <= 0) raise(sig);  // sent: deliver to the previous
    return;  // a fault: the instruction runs again and faults into the previous handler
  }
}

// The status to end with when the kernel ends the process (and says so once).
int kernel_exit_status(const char* how, int status) {
  if (g_in_kernel.load() == 0 || g_exit_told.fetch_add(1) > 0) return status;
  char num[16];
  snprintf(num, sizeof num, "%d", status);
  say("\nopsdk: the kernel of ");
  say(g_kernel_name.load());
  say(" called ");
  say(how);
  say("(");
  say(num);
  say("); the process ends here, inside the operator call");
  say(status == 0 ? ", with status 1 (not 0: the call did not succeed)\n" : "\n");
  return status == 0 ? 1 : status;
}

void on_process_exit(int status, void*) {
  const int now = kernel_exit_status("exit", status);
  if (now != status) {
    fflush(nullptr);
    _exit(now);
  }
}

void install_exit_guards() {
  for (size_t i = 0; i < 5; ++i) {
    struct sigaction ours {};
    ours.sa_sigaction = &on_fatal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    sigaction(kFatalSignals[i], &ours, &g_prev_fatal[i]);
  }
#if defined(__GLIBC__)
  on_exit(&on_process_exit, nullptr);
#endif
}

// In opsdk's worker processes (opsdk/runtime/_procs.py): a thread that waits for EOF on the
// lifeline pipe (the parent ended) or a new parent pid, then kills the worker's process
// group. Native, so a kernel that never returns and holds the GIL cannot keep it from running.
void watch_lifeline(int fd, int parent) {
  std::thread([fd, parent] {
    char c;
    while (getppid() == parent) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 1000) > 0 && read(fd, &c, 1) == 0) break;
    }
    if (getpgrp() == getpid()) kill(0, SIGKILL);
    kill(getpid(), SIGKILL);
  }).detach();
}

}  // namespace

// exit(), _exit() and _Exit() called from kernel code (see kernel_exit_status); the __real_
// symbols are weak, so a module linked without --wrap still loads.
extern "C" {
void __real_exit(int) __attribute__((weak, noreturn));
void __real__exit(int) __attribute__((weak, noreturn));
void __real__Exit(int) __attribute__((weak, noreturn));
[[noreturn]] void __wrap_exit(int status) {
  status = kernel_exit_status("exit", status);
  if (__real_exit) __real_exit(status);
  std::abort();
}
[[noreturn]] void __wrap__exit(int status) {
  status = kernel_exit_status("_exit", status);
  if (__real__exit) __real__exit(status);
  std::abort();
}
[[noreturn]] void __wrap__Exit(int status) {
  status = kernel_exit_status("_Exit", status);
  if (__real__Exit) __real__Exit(status);
  std::abort();
}
}
