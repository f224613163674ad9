// Copyright 2026 The memtrace Authors.

#include "transport/internal/mapped_memory.h"

#include <sys/mman.h>

namespace memtrace::transport_internal {

void* MapZeroed(size_t bytes) noexcept {
  if (bytes == 0) return nullptr;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void* MapZeroedHuge(size_t bytes) noexcept {
  void* p = MapZeroed(bytes);
  if (p != nullptr) madvise(p, bytes, MADV_HUGEPAGE);  // a hint: failure changes nothing
  return p;
}

void Unmap(void* memory, size_t bytes) noexcept {
  if (memory != nullptr) munmap(memory, bytes);
}

}  // namespace memtrace::transport_internal
