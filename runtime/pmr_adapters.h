// Copyright 2026 The memtrace Authors.
//
// pmr_adapters.h: std::pmr::memory_resource in both directions.
//
//   ResourceAllocator     an Allocator over a memory_resource: use any pmr resource
//                         (a monotonic buffer, a pool) as the backing of a
//                         TracingAllocator. pmr has no resize, so Resize answers false
//                         and Remap nullptr ("alloc, copy, free").
//   TracedMemoryResource  a memory_resource that traces everything it forwards to an
//                         upstream resource: hand it to pmr containers.
//
// Exceptions: pmr's allocate reports failure by throwing. ResourceAllocator catches and
// answers nullptr, so no exception crosses memtrace's Allocator boundary;
// TracedMemoryResource throws std::bad_alloc at the pmr boundary when the allocation (or
// its record, per the seed's semantics) fails, as the pmr contract requires.
//
// Thread safety: as the upstream resource's.
//
// Example:
//   memtrace::TracedMemoryResource traced(tracer, std::pmr::new_delete_resource(),
//                                         memtrace::layers::kCpuHeap);
//   std::pmr::vector<int> v(&traced);

#ifndef MEMTRACE_RUNTIME_PMR_ADAPTERS_H_
#define MEMTRACE_RUNTIME_PMR_ADAPTERS_H_

#include <memory_resource>
#include <new>

#include "runtime/allocator.h"
#include "runtime/tracer.h"

namespace memtrace {

class ResourceAllocator final : public Allocator {
 public:
  explicit ResourceAllocator(std::pmr::memory_resource* resource) noexcept
      : resource_(resource) {}

  void* Alloc(size_t len, size_t alignment, uintptr_t) noexcept override {
    try {
      return resource_->allocate(len == 0 ? 1 : len, alignment);
    } catch (...) {
      return nullptr;
    }
  }
  bool Resize(Memory, size_t, size_t, uintptr_t) noexcept override { return false; }
  void* Remap(Memory, size_t, size_t, uintptr_t) noexcept override { return nullptr; }
  void Free(Memory memory, size_t alignment, uintptr_t) noexcept override {
    resource_->deallocate(memory.data(), memory.empty() ? 1 : memory.size(), alignment);
  }

  std::pmr::memory_resource* resource() const noexcept { return resource_; }

 private:
  std::pmr::memory_resource* const resource_;
};

class TracedMemoryResource final : public std::pmr::memory_resource {
 public:
  TracedMemoryResource(Tracer* tracer, std::pmr::memory_resource* upstream,
                       LayerId layer) noexcept
      : tracer_(tracer), upstream_(upstream), layer_(layer) {}

 private:
  void* do_allocate(size_t bytes, size_t alignment) override {
    void* p = tracer_->Alloc(upstream_, layer_, bytes == 0 ? 1 : bytes, alignment,
                             MEMTRACE_CALL_SITE());
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t alignment) override {
    tracer_->Free(upstream_, layer_, AsMemory(p, bytes == 0 ? 1 : bytes), alignment,
                  MEMTRACE_CALL_SITE());
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  Tracer* const tracer_;
  ResourceAllocator upstream_;
  const LayerId layer_;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_PMR_ADAPTERS_H_
