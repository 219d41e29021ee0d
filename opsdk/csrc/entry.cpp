// The one generic pybind11 entry point linked into every operator module.
// Compiled once per toolchain configuration and reused by every operator build, next to
// runtime.cpp (the Python-free core: thread pool and kernel invocation), which it shares
// with the AI CPU adapter and the cross-build harness.
//
// Python selects the registration (by op name and input dtypes) and allocates outputs;
// the pieces below wrap the NumPy buffers in opsdk::Tensor views without copying, convert
// attributes, release the GIL and call the kernel. C++ exceptions come back as
// RuntimeError("<op>: <message>"), which opsdk re-raises as KernelError.
//
// One concern per file in csrc/py/, all compiled here as one translation unit:
//   convert.h      registrations described for Python; arrays as Tensors; attributes
//   interrupt.h    Ctrl-C while a kernel runs
//   process_guards.h  a kernel that ends the process; the validation worker's lifeline
//   call.h         the checked path's `run` and the shared `invoke` (GIL released)
//   output_pool.h  output arrays and the pool of large output blocks
//   fast_call.h    the fast path: `op(*inputs, **attrs)` through vectorcall
//   vectorcall.h   the vectorcall subclass of the Python Operator class
//   kernel_abi.h   a kernel run through plain C structs (opsdk/kernel_abi.h), for torch
#include <pybind11/pybind11.h>

#include <string>

#include "opsdk/invoke.h"
#include "py/call.h"
#include "py/convert.h"
#include "py/fast_call.h"
#include "py/interrupt.h"
#include "py/kernel_abi.h"
#include "py/output_pool.h"
#include "py/process_guards.h"
#include "py/vectorcall.h"

namespace {

// The operator modules of one process share the first one's thread pool (invoke.h).
void share_thread_pool() {
  const std::string key = opsdk::detail::thread_pool_key();
  if (void* pool = py::get_shared_data(key))
    opsdk::detail::adopt_thread_pool(pool);
  else
    py::set_shared_data(key, opsdk::detail::thread_pool_handle());
}

}  // namespace

PYBIND11_MODULE(_opsdk_kernels, m) {
  m.doc() = "opsdk operator kernels";
  install_sigint_handler();
  install_exit_guards();
  share_thread_pool();
  m.def("registrations", [] {
    py::list out;
    for (const auto& r : opsdk::registry()) out.append(describe(*r));
    return out;
  });
  m.def("declare_spec", &declare_spec, py::arg("op"), py::arg("type_vars"), py::arg("inputs"),
        py::arg("outputs"), py::arg("attrs"));
  m.def("run", &run, py::arg("index"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs"));
  m.def("fast_caller", &fast_caller, py::arg("n_required"), py::arg("n_inputs"),
        py::arg("kernels"), py::arg("attrs"), py::arg("fallback"),
        py::arg("planner") = py::none(), py::arg("on_error") = py::none());
  m.def("kernel_abi", &kernel_abi);
  m.def("vectorcall_subclass", &vectorcall_subclass, py::arg("base"));
  m.def("enable_vectorcall", &enable_vectorcall, py::arg("op"));
  m.def("empty", &empty, py::arg("shape"), py::arg("dtype"));
  m.def("output_pool_stats", [] { return OutputPool::get().stats(); });
  m.def("set_output_pool_limit", [](size_t bytes) { OutputPool::get().set_limit(bytes); });
  m.def("set_num_threads", [](int n) { opsdk::num_threads_setting() = n > 0 ? n : 1; });
  m.def("get_num_threads", [] { return opsdk::num_threads_setting(); });
  m.def("set_spin_microseconds", [](int us) { opsdk::set_spin_microseconds(us); });
  m.def("get_spin_microseconds", [] { return opsdk::spin_microseconds(); });
  m.def("park_workers", [] { opsdk::park_workers(); });
  m.def("thread_pool_state", [] {
    const opsdk::ThreadPoolState s = opsdk::thread_pool_state();
    py::dict d;
    d["workers"] = s.workers;
    d["sleeping"] = s.sleeping;
    d["polling"] = s.polling;
    d["spins_expired"] = s.spins_expired;
    d["spins_parked"] = s.spins_parked;
    return d;
  });
  m.def("watch_lifeline", &watch_lifeline, py::arg("fd"), py::arg("parent"));
  m.def("set_message_fd", [](int fd) { g_say_fd.store(fd); }, py::arg("fd"));
  m.def("thread_pool_id",
        [] { return reinterpret_cast<uintptr_t>(opsdk::detail::thread_pool_handle()); });
}
