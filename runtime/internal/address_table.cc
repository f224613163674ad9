// Copyright 2026 The memtrace Authors.

#include "runtime/internal/address_table.h"

#include <sys/mman.h>

#include <cstdint>

namespace memtrace::runtime_internal::address_table_internal {

void AdviseHugePages(void* memory, size_t bytes) noexcept {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(memory) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(memory) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace memtrace::runtime_internal::address_table_internal
