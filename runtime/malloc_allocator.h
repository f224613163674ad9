// Copyright 2026 The memtrace Authors.
//
// malloc_allocator.h: the C heap (malloc, aligned_alloc, realloc, free) as an Allocator.
//
// The usual backing for a TracingAllocator that traces a subsystem's heap use. Resize
// succeeds in place when the new length fits the block's usable size
// (malloc_usable_size) and the alignment is malloc's own; Remap uses realloc for blocks
// with malloc's alignment and answers nullptr (alloc, copy, free) for over-aligned ones.
//
// Thread safety: every method may be called from any thread, like malloc.

#ifndef MEMTRACE_RUNTIME_MALLOC_ALLOCATOR_H_
#define MEMTRACE_RUNTIME_MALLOC_ALLOCATOR_H_

#include "runtime/allocator.h"

namespace memtrace {

class MallocAllocator final : public Allocator {
 public:
  void* Alloc(size_t len, size_t alignment, uintptr_t ret_addr) noexcept override;
  bool Resize(Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) noexcept override;
  void* Remap(Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) noexcept override;
  void Free(Memory memory, size_t alignment, uintptr_t ret_addr) noexcept override;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_MALLOC_ALLOCATOR_H_
