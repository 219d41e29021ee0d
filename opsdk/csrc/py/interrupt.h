// Ctrl-C while a kernel runs: install_sigint_handler and the InKernel guard.
// Part of opsdk's pybind11 entry point (csrc/entry.cpp includes it once).
#pragma once

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

// Ctrl-C inside a kernel. Python only notices SIGINT once the kernel returns, so an
// endless kernel could not be stopped. While a kernel runs, a first Ctrl-C says so (Python
// still raises KeyboardInterrupt when the kernel returns) and a second one ends the
// process; outside kernels the signal goes to the handler that was there before (Python's).
// Not installed where SIGINT is ignored or default (e.g. opsdk's validation workers).
std::atomic<int> g_in_kernel{0};
std::atomic<int> g_interrupts{0};
std::atomic<const char*> g_kernel_name{""};
struct sigaction g_prev_sigint;

// Where messages go: stderr, or a copy of the terminal's made before output capture began
// (set_message_fd: pytest captures fd 2 into a file that is lost when the process dies).
std::atomic<int> g_say_fd{2};

void say(const char* text) {
  ssize_t ignored = write(g_say_fd.load(std::memory_order_relaxed), text, strlen(text));
  (void)ignored;
}

void on_sigint(int sig, siginfo_t* info, void* uctx) {
  const int saved_errno = errno;  // write() below must not change the interrupted code's
  if (g_in_kernel.load() > 0) {
    const bool again = g_interrupts.fetch_add(1) > 0;
    say(again ? "\nopsdk: interrupted again inside the kernel of " : "\nopsdk: interrupt inside "
                "the kernel of ");
    say(g_kernel_name.load());
    say(again ? "; ending the process\n"
              : "; it stops when the kernel returns (Ctrl-C again ends the process)\n");
    if (again) _exit(130);
  }
  if (g_prev_sigint.sa_flags & SA_SIGINFO) {
    if (g_prev_sigint.sa_sigaction) g_prev_sigint.sa_sigaction(sig, info, uctx);
  } else if (g_prev_sigint.sa_handler != SIG_DFL && g_prev_sigint.sa_handler != SIG_IGN) {
    g_prev_sigint.sa_handler(sig);
  }
  errno = saved_errno;
}

void install_sigint_handler() {
  struct sigaction now {};
  if (sigaction(SIGINT, nullptr, &now) != 0) return;
  if (!(now.sa_flags & SA_SIGINFO) && (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN))
    return;
  g_prev_sigint = now;
  struct sigaction ours {};
  ours.sa_sigaction = &on_sigint;
  ours.sa_flags = SA_SIGINFO | (now.sa_flags & (SA_RESTART | SA_ONSTACK));
  ours.sa_mask = now.sa_mask;
  sigaction(SIGINT, &ours, nullptr);
}

struct InKernel {
  explicit InKernel(const std::string& name) {
    if (g_in_kernel.fetch_add(1) == 0) {  // the handler's read is best effort: no fences
      g_interrupts.store(0, std::memory_order_relaxed);
      g_kernel_name.store(name.c_str(), std::memory_order_relaxed);
    }
  }
  ~InKernel() { g_in_kernel.fetch_sub(1); }
};

}  // namespace
