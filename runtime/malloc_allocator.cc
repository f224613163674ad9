// Copyright 2026 The memtrace Authors.

#include "runtime/malloc_allocator.h"

#include <malloc.h>

#include <cstddef>
#include <cstdlib>

namespace memtrace {
namespace {

bool MallocAligned(size_t alignment) { return alignment <= alignof(std::max_align_t); }

}  // namespace

void* MallocAllocator::Alloc(size_t len, size_t alignment, uintptr_t) noexcept {
  if (len == 0) len = 1;
  if (MallocAligned(alignment)) return malloc(len);
  void* p = nullptr;
  return posix_memalign(&p, alignment, len) == 0 ? p : nullptr;
}

bool MallocAllocator::Resize(Memory memory, size_t, size_t new_len, uintptr_t) noexcept {
  return new_len != 0 && new_len <= malloc_usable_size(memory.data());
}

void* MallocAllocator::Remap(Memory memory, size_t alignment, size_t new_len,
                             uintptr_t) noexcept {
  if (!MallocAligned(alignment) || new_len == 0) return nullptr;
  return realloc(memory.data(), new_len);
}

void MallocAllocator::Free(Memory memory, size_t, uintptr_t) noexcept { free(memory.data()); }

}  // namespace memtrace
