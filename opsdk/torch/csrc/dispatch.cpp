// opsdk's torch dispatcher extension: the CPU kernel of every registered opsdk operator,
// registered in C++ so that `torch.ops.<namespace>.<Name>(x)` reaches the operator's kernel
// without a Python frame.
//
// For each operator, opsdk.torch (the Python side: _register.py, _cpp.py) defines the
// schema, the fake implementation and the autograd formula with torch.library as before,
// and calls `register_op` here, which adds two boxed kernels to the dispatcher:
//
//   CPU          the kernel of the operator's module (its `kernel_abi()` capsule,
//                opsdk/kernel_abi.h) on the tensors' own memory: contiguous inputs are
//                used as they are, others made contiguous; outputs allocated from the
//                spec's shape inference (elementwise: the inputs' one shape; else a plan
//                the Python planner made, kept per call signature). The module is loaded
//                (compiled) on the first call, through the Python binder.
//   AutogradCPU  with grad mode on and an input that requires grad, the Python autograd
//                kernel torch.library registered (the one the Autograd alias computed);
//                otherwise it goes below autograd at once.
//
// Whatever the C++ path does not take (an input of a dtype no kernel has, a tensor on
// another device, inputs of different shapes for an elementwise op, a planner error, a
// kernel exception) goes to the Python CPU implementation, which runs the checks of
// `op(x)` and raises its error (SpecError, KernelError) as the Python path would.
#include <ATen/EmptyTensor.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/library.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "opsdk/custom_op.h"
#include "opsdk/kernel_abi.h"

namespace py = pybind11;

namespace {

// The opsdk::DType (custom_op.h) of a torch scalar type, as the kernel ABI passes it; -1 when
// opsdk has no such dtype.
int opsdk_dtype(c10::ScalarType t) {
  using D = opsdk::DType;
  using S = c10::ScalarType;
  static const std::pair<S, D> table[] = {
      {S::Half, D::Float16}, {S::BFloat16, D::BFloat16}, {S::Float, D::Float32},
      {S::Double, D::Float64}, {S::Char, D::Int8}, {S::Short, D::Int16}, {S::Int, D::Int32},
      {S::Long, D::Int64}, {S::Byte, D::UInt8}, {S::Bool, D::Bool}};
  for (const auto& [torch_type, opsdk_type] : table)
    if (torch_type == t) return static_cast<int>(opsdk_type);
  return -1;
}

c10::ScalarType torch_dtype(int code) {
  for (int s = 0; s < static_cast<int>(c10::ScalarType::NumOptions); ++s)
    if (opsdk_dtype(static_cast<c10::ScalarType>(s)) == code) return static_cast<c10::ScalarType>(s);
  throw std::invalid_argument("opsdk dtype " + std::to_string(code) + " has no torch dtype");
}

// One registration of the module: its input dtypes (-1: any, for an optional input left
// out), its index in the module, its output dtypes and attribute order (positions in the
// schema's keyword-only arguments).
struct Entry {
  std::vector<int> in_types;
  size_t index = 0;
  std::vector<int> out_types;
  std::vector<c10::ScalarType> out_scalar_types;  // the same, as torch spells them
  std::vector<size_t> attr_slots;
};

// What the binder returned: the module's C entry and its registrations.
struct Bound {
  const opsdk_kernel_abi* abi = nullptr;
  py::object keep;  // the capsule (and so the module) stays alive
  std::vector<Entry> entries;
  bool elementwise = false;
  py::object planner;  // None for elementwise operators
};

// One attribute value as the kernel ABI passes it, with its storage.
struct Attr {
  opsdk_abi_attr c{};
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

constexpr size_t kMaxPlans = 64;

class CpuKernel final : public c10::OperatorKernel {
 public:
  CpuKernel(std::string name, size_t n_inputs, std::vector<std::string> attr_names,
            py::object binder, py::object fallback)
      : name_(std::move(name)), n_inputs_(n_inputs), attr_names_(std::move(attr_names)),
        binder_(std::move(binder)), fallback_(std::move(fallback)) {}

  // Torch's dispatcher is a static object: it may destroy this kernel after the interpreter
  // has gone, when its Python objects are gone with it and must not be released.
  ~CpuKernel() override {
    std::unique_ptr<Bound> b(bound_.load());
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      binder_ = py::object();
      fallback_ = py::object();
      b.reset();
      return;
    }
    binder_.release();
    fallback_.release();
    if (b) {
      b->keep.release();
      b->planner.release();
    }
  }

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const size_t n_args = n_inputs_ + attr_names_.size();
    const Bound& b = bound();
    if (!b.abi) return fall_back(op, stack, n_args);
    auto args = torch::jit::last(*stack, n_args);
    std::vector<at::Tensor> ins(n_inputs_);
    std::vector<int> types(n_inputs_, -1);
    for (size_t i = 0; i < n_inputs_; ++i) {
      if (args[i].isNone()) continue;
      ins[i] = args[i].toTensor();
      types[i] = opsdk_dtype(ins[i].scalar_type());
      // empty tensors too: the kernel ABI reads a NULL data pointer as an absent input
      if (types[i] < 0 || ins[i].device().type() != c10::DeviceType::CPU || ins[i].numel() == 0)
        return fall_back(op, stack, n_args);
    }
    const Entry* e = lookup(b, types);
    if (!e) return fall_back(op, stack, n_args);
    std::vector<Attr> attrs(e->attr_slots.size());
    for (size_t k = 0; k < attrs.size(); ++k)
      to_attr(args[n_inputs_ + e->attr_slots[k]], attr_names_[e->attr_slots[k]], attrs[k]);
    std::vector<std::vector<int64_t>> out_shapes;
    if (!output_shapes(b, *e, ins, attrs, stack, n_args, out_shapes))
      return fall_back(op, stack, n_args);
    for (const auto& shape : out_shapes)
      for (int64_t d : shape)
        if (d == 0) return fall_back(op, stack, n_args);  // an empty output: as above
    std::vector<opsdk_abi_tensor> c_in(n_inputs_), c_out(out_shapes.size());
    for (size_t i = 0; i < n_inputs_; ++i) {
      if (!ins[i].defined()) {
        c_in[i] = {nullptr, e->in_types[i], 0, nullptr};
        continue;
      }
      if (!ins[i].is_contiguous()) ins[i] = ins[i].contiguous();
      c_in[i] = {ins[i].data_ptr(), types[i], static_cast<int32_t>(ins[i].dim()),
                 ins[i].sizes().data()};
    }
    std::vector<at::Tensor> outs;
    outs.reserve(out_shapes.size());
    for (size_t i = 0; i < out_shapes.size(); ++i) {
      outs.emplace_back(at::detail::empty_cpu(out_shapes[i], e->out_scalar_types[i]));
      c_out[i] = {outs[i].data_ptr(), e->out_types[i], static_cast<int32_t>(out_shapes[i].size()),
                  outs[i].sizes().data()};
    }
    std::vector<opsdk_abi_attr> c_attrs(attrs.size());
    for (size_t k = 0; k < attrs.size(); ++k) c_attrs[k] = attrs[k].c;
    char error[512];
    if (b.abi->run(e->index, c_in.data(), c_in.size(), c_out.data(), c_out.size(),
                   c_attrs.data(), c_attrs.size(), error, sizeof error) != 0)
      return fall_back(op, stack, n_args);  // runs the kernel again, raises KernelError there
    torch::jit::drop(*stack, n_args);
    for (auto& t : outs) torch::jit::push(*stack, std::move(t));
  }

 private:
  // The module's registrations, through the binder on the first call (which compiles the
  // operator's module when needed; its BuildError propagates).
  const Bound& bound() {
    if (const Bound* b = bound_.load(std::memory_order_acquire)) return *b;
    py::gil_scoped_acquire gil;  // the GIL orders binders: taken before any lock
    if (const Bound* b = bound_.load(std::memory_order_acquire)) return *b;
    auto result = py::reinterpret_steal<py::object>(PyObject_CallNoArgs(binder_.ptr()));
    if (!result) raise_python_error();
    auto b = std::make_unique<Bound>();
    auto t = result.cast<py::tuple>();
    b->keep = t[0];  // None: a module without the kernel ABI; every call takes Python
    if (!b->keep.is_none()) {
      b->abi = static_cast<const opsdk_kernel_abi*>(
          PyCapsule_GetPointer(b->keep.ptr(), OPSDK_KERNEL_ABI_CAPSULE));
      if (!b->abi) raise_python_error();
    }
    if (b->abi && b->abi->version != OPSDK_KERNEL_ABI_VERSION)
      throw std::runtime_error(name_ + ": the operator module speaks kernel ABI " +
                               std::to_string(b->abi->version) + ", this extension " +
                               std::to_string(OPSDK_KERNEL_ABI_VERSION) +
                               "; rebuild it (opsdk build --force)");
    for (const auto& k : t[1].cast<py::list>()) {
      auto kt = k.cast<py::tuple>();
      Entry e;
      e.in_types = kt[0].cast<std::vector<int>>();
      e.index = kt[1].cast<size_t>();
      e.out_types = kt[2].cast<std::vector<int>>();
      for (int code : e.out_types) e.out_scalar_types.push_back(torch_dtype(code));
      for (const auto& n : kt[3].cast<std::vector<std::string>>()) {
        size_t slot = 0;
        while (slot < attr_names_.size() && attr_names_[slot] != n) ++slot;
        if (slot == attr_names_.size())
          throw std::runtime_error(name_ + ": kernel attribute " + n + " is not in the schema");
        e.attr_slots.push_back(slot);
      }
      b->entries.push_back(std::move(e));
    }
    b->elementwise = t[2].cast<bool>();
    b->planner = t[3];
    bound_.store(b.release(), std::memory_order_release);
    return *bound_.load();
  }

  [[noreturn]] static void raise_python_error() {
    python_error err;
    err.persist();
    throw err;
  }

  static const Entry* lookup(const Bound& b, const std::vector<int>& types) {
    for (const auto& e : b.entries) {
      bool match = true;
      for (size_t i = 0; i < types.size() && match; ++i)
        match = types[i] < 0 || e.in_types[i] < 0 || types[i] == e.in_types[i];
      if (match) return &e;
    }
    return nullptr;
  }

  static void to_attr(const c10::IValue& v, const std::string& name, Attr& a) {
    a.c.name = name.c_str();
    if (v.isBool()) {
      a.c.type = OPSDK_ABI_BOOL;
      a.c.i = v.toBool();
    } else if (v.isInt()) {
      a.c.type = OPSDK_ABI_INT;
      a.c.i = v.toInt();
    } else if (v.isDouble()) {
      a.c.type = OPSDK_ABI_FLOAT;
      a.c.f = v.toDouble();
    } else if (v.isString()) {
      a.s = v.toStringRef();
      a.c.type = OPSDK_ABI_STRING;
      a.c.s = a.s.c_str();
    } else if (v.isIntList()) {
      a.ints = v.toIntVector();
      a.c.type = OPSDK_ABI_INTS;
      a.c.n = static_cast<int64_t>(a.ints.size());
      a.c.ints = a.ints.data();
    } else {
      a.floats = v.toDoubleVector();
      a.c.type = OPSDK_ABI_FLOATS;
      a.c.n = static_cast<int64_t>(a.floats.size());
      a.c.floats = a.floats.data();
    }
  }

  // The call signature a plan is kept under: kernel, input ranks and dims, attribute values.
  static std::string plan_key(const Entry& e, const std::vector<at::Tensor>& ins,
                              const std::vector<Attr>& attrs) {
    std::string key(reinterpret_cast<const char*>(&e.index), sizeof e.index);
    auto put = [&key](const void* p, size_t n) { key.append(static_cast<const char*>(p), n); };
    for (const auto& t : ins) {
      const int64_t nd = t.defined() ? t.dim() : -1;
      put(&nd, sizeof nd);
      if (nd > 0) put(t.sizes().data(), sizeof(int64_t) * static_cast<size_t>(nd));
    }
    for (const auto& a : attrs) {
      put(&a.c.type, sizeof a.c.type);
      put(&a.c.i, sizeof a.c.i);
      put(&a.c.f, sizeof a.c.f);
      key += a.s;
      key.push_back('\0');
      put(a.ints.data(), sizeof(int64_t) * a.ints.size());
      put(a.floats.data(), sizeof(double) * a.floats.size());
      put(&a.c.n, sizeof a.c.n);
    }
    return key;
  }

  // False when the Python path must take the call.
  bool output_shapes(const Bound& b, const Entry& e, const std::vector<at::Tensor>& ins,
                     const std::vector<Attr>& attrs, torch::jit::Stack* stack, size_t n_args,
                     std::vector<std::vector<int64_t>>& out) {
    if (b.elementwise) {
      const at::Tensor* first = nullptr;
      for (const auto& t : ins) {
        if (!t.defined()) return false;
        if (first && !first->sizes().equals(t.sizes())) return false;
        if (!first) first = &t;
      }
      if (!first) return false;
      out.assign(e.out_types.size(), first->sizes().vec());
      return true;
    }
    const std::string key = plan_key(e, ins, attrs);
    {
      std::lock_guard<std::mutex> lock(plans_mutex_);
      auto it = plans_.find(key);
      if (it != plans_.end()) {
        out = it->second;
        return true;
      }
    }
    py::gil_scoped_acquire gil;
    auto [args, kwargs] = python_args(*stack, n_args);
    auto got = py::reinterpret_steal<py::object>(
        PyObject_Call(b.planner.ptr(), args.ptr(), kwargs.ptr()));
    if (!got) {  // the Python path raises the same error, with the same text
      PyErr_Clear();
      return false;
    }
    auto t = got.cast<py::tuple>();
    if (t[0].cast<size_t>() != e.index) return false;
    out = t[1].cast<std::vector<std::vector<int64_t>>>();
    if (out.size() != e.out_types.size()) return false;
    std::lock_guard<std::mutex> lock(plans_mutex_);
    if (plans_.size() >= kMaxPlans) plans_.clear();
    plans_.emplace(key, out);
    return true;
  }

  // The call's arguments as Python objects: inputs positional, attributes by keyword.
  std::pair<py::tuple, py::dict> python_args(const torch::jit::Stack& stack, size_t n_args) {
    auto args = torch::jit::last(stack, n_args);
    py::tuple pos(n_inputs_);
    for (size_t i = 0; i < n_inputs_; ++i) {
      PyObject* o = args[i].isNone() ? Py_NewRef(Py_None) : THPVariable_Wrap(args[i].toTensor());
      if (!o) raise_python_error();
      PyTuple_SET_ITEM(pos.ptr(), static_cast<Py_ssize_t>(i), o);
    }
    py::dict kw;
    for (size_t k = 0; k < attr_names_.size(); ++k) {
      const c10::IValue& v = args[n_inputs_ + k];
      py::object o;
      if (v.isBool()) o = py::bool_(v.toBool());
      else if (v.isInt()) o = py::int_(v.toInt());
      else if (v.isDouble()) o = py::float_(v.toDouble());
      else if (v.isString()) o = py::str(v.toStringRef());
      else if (v.isIntList()) o = py::cast(v.toIntVector());
      else o = py::cast(v.toDoubleVector());
      kw[py::str(attr_names_[k])] = o;
    }
    return {std::move(pos), std::move(kw)};
  }

  // The Python CPU implementation takes the call (and raises the Python path's errors).
  void fall_back(const c10::OperatorHandle&, torch::jit::Stack* stack, size_t n_args) {
    py::gil_scoped_acquire gil;
    auto [args, kwargs] = python_args(*stack, n_args);
    auto got = py::reinterpret_steal<py::object>(
        PyObject_Call(fallback_.ptr(), args.ptr(), kwargs.ptr()));
    if (!got) raise_python_error();
    std::vector<at::Tensor> outs;
    if (PyTuple_Check(got.ptr())) {
      for (const auto& o : got.cast<py::tuple>()) outs.push_back(THPVariable_Unpack(o.ptr()));
    } else {
      outs.push_back(THPVariable_Unpack(got.ptr()));
    }
    torch::jit::drop(*stack, n_args);
    for (auto& t : outs) torch::jit::push(*stack, std::move(t));
  }

  std::string name_;
  size_t n_inputs_;
  std::vector<std::string> attr_names_;
  py::object binder_, fallback_;
  std::atomic<Bound*> bound_{nullptr};
  std::mutex plans_mutex_;
  std::unordered_map<std::string, std::vector<std::vector<int64_t>>> plans_;
};

// AutogradCPU: below autograd at once unless a gradient is wanted, then the Python autograd
// kernel torch.library registered.
class AutogradKernel final : public c10::OperatorKernel {
 public:
  AutogradKernel(c10::SafeKernelFunction python, size_t n_inputs)
      : python_(std::move(python)), n_inputs_(n_inputs) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    if (c10::GradMode::is_enabled() && wants_grad(op, *stack)) {
      python_.callBoxed(op, ks, stack);
      return;
    }
    at::AutoDispatchBelowAutograd guard;
    op.redispatchBoxed(ks & c10::after_autograd_keyset, stack);
  }

 private:
  bool wants_grad(const c10::OperatorHandle& op, const torch::jit::Stack& stack) const {
    auto args = torch::jit::last(stack, op.schema().arguments().size());
    for (size_t i = 0; i < n_inputs_; ++i)
      if (args[i].isTensor() && args[i].toTensor().requires_grad()) return true;
    return false;
  }

  c10::SafeKernelFunction python_;
  size_t n_inputs_;
};

std::vector<std::unique_ptr<torch::Library>>& libraries() {
  // Never destroyed: the kernels (and the Python objects they hold) live as long as the
  // process, as torch's own registrations do.
  static auto* libs = new std::vector<std::unique_ptr<torch::Library>>();
  return *libs;
}

// Registers the CPU and AutogradCPU kernels of `qualname` (defined by torch.library, with
// its Python Autograd kernel already registered).
void register_op(const std::string& qualname, py::object binder, py::object fallback) {
  const auto sep = qualname.find("::");
  if (sep == std::string::npos) throw std::invalid_argument(qualname + ": expected ns::Name");
  const std::string ns = qualname.substr(0, sep), name = qualname.substr(sep + 2);
  auto handle = c10::Dispatcher::singleton().findSchemaOrThrow(qualname.c_str(), "");
  const auto& schema = handle.schema();
  size_t n_inputs = 0;
  std::vector<std::string> attr_names;
  for (const auto& a : schema.arguments()) {
    if (a.kwarg_only()) attr_names.push_back(a.name());
    else ++n_inputs;
  }
  auto python_autograd = handle.getComputedKernelForDispatchKey(c10::DispatchKey::AutogradCPU);
  auto cpu = std::make_unique<torch::Library>(torch::Library::IMPL, ns, c10::DispatchKey::CPU,
                                              __FILE__, __LINE__);
  cpu->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(std::make_unique<CpuKernel>(
                              qualname, n_inputs, attr_names, std::move(binder),
                              std::move(fallback))));
  auto grad = std::make_unique<torch::Library>(
      torch::Library::IMPL, ns, c10::DispatchKey::AutogradCPU, __FILE__, __LINE__);
  grad->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunctor(
                               std::make_unique<AutogradKernel>(std::move(python_autograd),
                                                                n_inputs)));
  libraries().push_back(std::move(cpu));
  libraries().push_back(std::move(grad));
}

}  // namespace

PYBIND11_MODULE(_opsdk_torch, m) {
  m.doc() = "opsdk operators' CPU kernels in torch's dispatcher";
  m.def("register_op", &register_op, py::arg("qualname"), py::arg("binder"), py::arg("fallback"));
  m.attr("kernel_abi_version") = OPSDK_KERNEL_ABI_VERSION;
}
