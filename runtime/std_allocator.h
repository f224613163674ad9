// Copyright 2026 The memtrace Authors.
//
// std_allocator.h: a standard C++ allocator over a memtrace Allocator, for containers.
//
// StdAllocator<T> meets the Allocator requirements of the standard library: give it any
// memtrace Allocator (usually a TracingAllocator) and a container's memory is allocated,
// and traced, through it. Allocation failure throws std::bad_alloc, as containers expect.
// Call sites are the container's own code; use scopes to say which part of the program
// the container belongs to.
//
// Thread safety: as the underlying Allocator's.
//
// Example:
//   memtrace::TracingAllocator traced(tracer, &heap, memtrace::layers::kCpuHeap);
//   std::vector<int, memtrace::StdAllocator<int>> v{memtrace::StdAllocator<int>(&traced)};

#ifndef MEMTRACE_RUNTIME_STD_ALLOCATOR_H_
#define MEMTRACE_RUNTIME_STD_ALLOCATOR_H_

#include <cstddef>
#include <limits>
#include <new>

#include "runtime/allocator.h"

namespace memtrace {

template <typename T>
class StdAllocator {
 public:
  using value_type = T;

  explicit StdAllocator(Allocator* allocator) noexcept : allocator_(allocator) {}
  template <typename U>
  StdAllocator(const StdAllocator<U>& other) noexcept : allocator_(other.allocator()) {}

  T* allocate(size_t n) {
    if (n > std::numeric_limits<size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    void* p = allocator_->Alloc(n * sizeof(T), alignof(T), MEMTRACE_CALL_SITE());
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    allocator_->Free(AsMemory(p, n * sizeof(T)), alignof(T), MEMTRACE_CALL_SITE());
  }

  Allocator* allocator() const noexcept { return allocator_; }

  template <typename U>
  friend bool operator==(const StdAllocator& a, const StdAllocator<U>& b) noexcept {
    return a.allocator() == b.allocator();
  }

 private:
  Allocator* allocator_;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_STD_ALLOCATOR_H_
