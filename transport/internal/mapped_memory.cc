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
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < kHuge) {
    void* p = MapZeroed(bytes);
    if (p != nullptr) madvise(p, bytes, MADV_HUGEPAGE);  // a hint: failure changes nothing
    return p;
  }
  // A huge page's worth to spare, then trimmed on both sides to [aligned, aligned +
  // bytes): the kernel backs only whole aligned 2 MiB ranges with huge pages, so an
  // unaligned start would leave the first and last partial ones on small pages.
  void* p = MapZeroed(bytes + kHuge);
  if (p == nullptr) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHuge - 1) & ~(kHuge - 1);
  if (aligned != start) munmap(p, aligned - start);
  const uintptr_t end = aligned + bytes;
  if (end != start + bytes + kHuge) {
    munmap(reinterpret_cast<void*>(end), start + bytes + kHuge - end);
  }
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // a hint, as above
  return reinterpret_cast<void*>(aligned);
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
