// Misbehave: copies x to y; the float64 kernel misbehaves as $OPSDK_MISBEHAVE says.
#include <opsdk/custom_op.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

template <class T>
void copy(const CustomOpKernelContext& ctx) {
  const T* x = ctx.input(0).data<T>();
  T* y = ctx.output(0).mutable_data<T>();
  const int64_t n = ctx.output(0).numel();
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}

volatile double sink = 0;

void misbehave(const CustomOpKernelContext& ctx) {
  copy<double>(ctx);
  const char* env = std::getenv("OPSDK_MISBEHAVE");
  const std::string what = env ? env : "";
  double* y = ctx.output(0).mutable_data<double>();
  const double* x = ctx.input(0).data<double>();
  const int64_t n = ctx.output(0).numel();
  if (what == "segv") *reinterpret_cast<volatile int*>(std::getenv("OPSDK_NO_SUCH_VARIABLE")) = 1;
  if (what == "abort") std::abort();
  if (what == "loop" || what == "fork_loop") {
    if (what == "fork_loop" && fork() == 0)
      for (;;) pause();
    const char line[] = "misbehave: looping\n";  // tests wait for this line
    if (write(2, line, sizeof line - 1) < 0) sink = -1;
    for (;;) sink = sink + 1;
  }
  if (what == "past_end") y[n] = 1.0;
  if (what == "far_past_end") y[n + 100000] = 1.0;
  if (what == "read_past_end") sink = x[n + 2];
  if (what == "write_input") const_cast<double*>(x)[0] = 42.0;
  if (what == "exit0") std::exit(0);
  if (what == "_exit0") _exit(0);
  // what a library the kernel calls does: no exit() or _exit() of the module's own code
  if (what == "exit_group0") syscall(SYS_exit_group, 0);
  if (what == "fork" && fork() == 0) {  // a child that outlives the call, holding stdout
    for (;;) pause();
  }
  // the *_on_13 modes only for inputs starting with 13; by_value: 13 loops, 14 segfaults and
  // 15 writes junk
  const double v = n > 0 ? x[0] : 0.0;
  const bool by_value = what == "by_value";
  if ((what == "segv_on_13" && v == 13.0) || (by_value && v == 14.0)) raise(SIGSEGV);
  if ((what == "loop_on_13" && v == 13.0) || (by_value && v == 13.0))
    for (;;) sink = sink + 1;
  if ((what == "junk_on_13" && v == 13.0) || (by_value && v == 15.0)) {
    // bytes written to descriptors the kernel does not own
    const char junk[] = "stray bytes from a kernel\n";
    for (int fd = 3; fd < 64; ++fd)
      if (write(fd, junk, sizeof junk - 1) < 0) sink = -fd;
  }
  if (what == "int_overflow") {
    volatile int big = 2147483647;
    sink = big + static_cast<int>(n);  // signed overflow: undefined behaviour
  }
}

}  // namespace

REGISTER_CUSTOM_OP("Misbehave")
    .Input(0, "x", "float32")
    .Output(0, "y", "float32")
    .KernelFn(copy<float>);

REGISTER_CUSTOM_OP("Misbehave")
    .Input(0, "x", "float64")
    .Output(0, "y", "float64")
    .KernelFn(misbehave);
