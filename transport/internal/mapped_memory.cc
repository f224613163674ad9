// Copyright 2026 The memtrace Authors.

#include "transport/internal/mapped_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

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

bool Populate(void* memory, size_t bytes) noexcept {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14
#endif
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(memory) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(memory) + bytes;
  if (end <= begin) return true;
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0;
}

void Unmap(void* memory, size_t bytes) noexcept {
  if (memory != nullptr) munmap(memory, bytes);
}

}  // namespace memtrace::transport_internal
