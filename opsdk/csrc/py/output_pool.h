// Output arrays: `empty` and the process-wide pool of large output blocks.
// Part of opsdk's pybind11 entry point (csrc/entry.cpp includes it once).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace py = pybind11;

namespace {

// ------------------------------------------------------------------ output memory
// Outputs of at least kPoolMinBytes come from one pool of blocks keyed by (page-rounded)
// size, shared by every operator module of the process through pybind11's shared data.
// An array holds its block through a capsule, its base object: NumPy keeps the base alive
// for the array and every view of it, so the capsule's destructor hands the block back only
// once nothing can reach it any more, and a block is never given out twice while in use.
// A caller's `y = op(x)` in a loop then gets warm, already-mapped memory back instead of a
// fresh mapping that the OS page-faults and zeroes on every call (glibc maps blocks above
// its mmap threshold, at most 32 MiB, afresh each time). ONNX Runtime's arena does the same.
constexpr size_t kPoolMinBytes = size_t{256} << 10;
constexpr size_t kPoolPerSize = 4;                  // free blocks kept per size
constexpr size_t kHugeBytes = size_t{4} << 20;      // 2 MiB-aligned, transparent huge pages
constexpr const char* kBlockCapsule = "opsdk.output_block";

class OutputPool {
 public:
  // The process-wide pool (created by the first operator module that needs it).
  static OutputPool& get() {
    static OutputPool* pool = [] {
      const char* key = "opsdk.output_pool.v1";
      void* p = py::get_shared_data(key);
      if (!p) p = py::set_shared_data(key, new OutputPool());  // leaked: lives with Python
      return static_cast<OutputPool*>(p);
    }();
    return *pool;
  }
  static size_t rounded(size_t bytes) { return (bytes + 4095) & ~size_t{4095}; }

  void* acquire(size_t size) {
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= size;
        ++hits_;
        return p;
      }
      ++misses_;
    }
    return allocate(size);
  }
  void release(void* p, size_t size) noexcept {
    {
      std::lock_guard<std::mutex> g(mu_);
      auto& blocks = free_[size];
      if (cached_ + size <= limit_ && blocks.size() < kPoolPerSize) {
        blocks.push_back(p);
        cached_ += size;
        return;
      }
    }
    std::free(p);
  }
  // Caps the bytes kept free for reuse (0 turns pooling off); frees what is over.
  void set_limit(size_t bytes) {
    std::vector<void*> drop;
    {
      std::lock_guard<std::mutex> g(mu_);
      limit_ = bytes;
      for (auto& [size, blocks] : free_) {
        while (cached_ > limit_ && !blocks.empty()) {
          drop.push_back(blocks.back());
          blocks.pop_back();
          cached_ -= size;
        }
      }
    }
    for (void* p : drop) std::free(p);
  }
  bool enabled() const { return limit_ > 0; }
  py::dict stats() {
    std::lock_guard<std::mutex> g(mu_);
    py::dict d;
    d["limit_bytes"] = limit_;
    d["cached_bytes"] = cached_;
    d["hits"] = hits_;
    d["misses"] = misses_;
    d["min_bytes"] = kPoolMinBytes;
    return d;
  }

 private:
  OutputPool() {
    const char* env = std::getenv("OPSDK_OUTPUT_POOL_MB");
    if (env && *env) limit_ = static_cast<size_t>(std::max(0L, std::atol(env))) << 20;
  }
  static void* allocate(size_t size) {
    const size_t align = size >= kHugeBytes ? (size_t{2} << 20) : 64;
    void* p = nullptr;
    if (posix_memalign(&p, align, size) != 0) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= kHugeBytes) madvise(p, size, MADV_HUGEPAGE);  // as NumPy does; a hint only
#endif
    return p;
  }
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0, limit_ = size_t{1} << 30;
  uint64_t hits_ = 0, misses_ = 0;
};

void release_block(PyObject* capsule) {
  void* p = PyCapsule_GetPointer(capsule, kBlockCapsule);
  const auto size = reinterpret_cast<size_t>(PyCapsule_GetContext(capsule));
  if (p) OutputPool::get().release(p, size);
}

// A new C-contiguous array (new reference; nullptr with a Python error set). Large ones
// take a pooled block; small ones come from NumPy, whose own cache serves them well.
PyObject* new_output(PyObject* descr, int nd, const Py_intptr_t* dims, size_t nbytes) {
  auto& api = py::detail::npy_api::get();
  OutputPool& pool = OutputPool::get();
  Py_INCREF(descr);  // PyArray_NewFromDescr steals it
  if (nbytes < kPoolMinBytes || !pool.enabled())
    return api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, nd, dims, nullptr, nullptr, 0,
                                     nullptr);
  const size_t size = OutputPool::rounded(nbytes);
  void* block = pool.acquire(size);
  PyObject* capsule = PyCapsule_New(block, kBlockCapsule, release_block);
  if (!capsule || PyCapsule_SetContext(capsule, reinterpret_cast<void*>(size)) != 0) {
    Py_XDECREF(capsule);
    pool.release(block, size);
    Py_DECREF(descr);
    return nullptr;
  }
  PyObject* arr = api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, nd, dims, nullptr, block,
                                            py::detail::npy_api::NPY_ARRAY_WRITEABLE_, nullptr);
  if (!arr) {
    Py_DECREF(capsule);
    return nullptr;
  }
  if (api.PyArray_SetBaseObject_(arr, capsule) != 0) {  // steals the capsule
    Py_DECREF(arr);
    return nullptr;
  }
  return arr;
}

// `module.empty(shape, dtype)`: a C-contiguous output array, pooled when large.
py::object empty(const std::vector<Py_intptr_t>& shape, const py::dtype& dtype) {
  size_t n = static_cast<size_t>(dtype.itemsize());
  for (auto d : shape) {
    if (d < 0) throw py::value_error("negative dimension in output shape");
    n *= static_cast<size_t>(d);
  }
  PyObject* arr = new_output(dtype.ptr(), static_cast<int>(shape.size()), shape.data(), n);
  if (!arr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(arr);
}

}  // namespace
