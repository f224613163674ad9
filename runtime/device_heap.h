// Copyright 2026 The memtrace Authors.
//
// device_heap.h: a simulated device (GPU) memory heap, so device memory can sit beside CPU
// memory in one capture, the way Tracy's graphics.memory channel does.
//
// SimulatedDeviceHeap hands out *device addresses* from a fixed range with a first-fit
// free list. The addresses are not host memory and must never be dereferenced; they are
// what a real driver's allocation handles would be to memtrace: opaque numbers with sizes.
// Wrap it in a TracingAllocator on layers::kGpuHeap. A real engine wraps its own
// device allocator the same way.
//
// Thread safety: every method is thread-safe (a mutex; device allocations are rare).

#ifndef MEMTRACE_RUNTIME_DEVICE_HEAP_H_
#define MEMTRACE_RUNTIME_DEVICE_HEAP_H_

#include <cstdint>
#include <map>
#include <mutex>

#include "runtime/allocator.h"

namespace memtrace {

class SimulatedDeviceHeap final : public Allocator {
 public:
  // Device addresses start here: far from host heaps, below 2^48.
  static constexpr uint64_t kBase = 0x7e0000000000;

  explicit SimulatedDeviceHeap(uint64_t capacity);

  void* Alloc(size_t len, size_t alignment, uintptr_t ret_addr) noexcept override;
  bool Resize(Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) noexcept override;
  void* Remap(Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) noexcept override;
  void Free(Memory memory, size_t alignment, uintptr_t ret_addr) noexcept override;

  uint64_t used() const;
  uint64_t capacity() const noexcept { return capacity_; }

 private:
  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> free_;  // offset -> length
  std::map<uint64_t, uint64_t> used_;  // offset -> length
  uint64_t used_bytes_ = 0;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_DEVICE_HEAP_H_
