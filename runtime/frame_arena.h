// Copyright 2026 The memtrace Authors.
//
// frame_arena.h: a bump allocator reset once per frame, the way game engines use one.
//
// FrameArena hands out memory from one buffer by bumping an offset; Free releases only the
// most recent block (other frees are no-ops), Resize and Remap work in place on the most
// recent block, and Reset() releases everything at once. Traced, a reset is one event
// that releases every sub-allocation: wrap the arena in a TracingAllocator on a layer of
// its own and call ResetTraced(), which records the reset before the memory is reused.
//
// Thread safety: none. A frame arena belongs to one thread (usually the frame loop).
//
// Example:
//   memtrace::FrameArena arena(1 << 20);
//   memtrace::TracingAllocator frame(tracer, &arena, memtrace::layers::kFrameArena);
//   for (;;) {
//     void* scratch = frame.Alloc(256, 16, MEMTRACE_CALL_SITE());
//     ...
//     arena.ResetTraced(frame);
//   }

#ifndef MEMTRACE_RUNTIME_FRAME_ARENA_H_
#define MEMTRACE_RUNTIME_FRAME_ARENA_H_

#include <cstddef>
#include <memory>

#include "runtime/allocator.h"

namespace memtrace {

class TracingAllocator;

class FrameArena final : public Allocator {
 public:
  explicit FrameArena(size_t capacity);

  void* Alloc(size_t len, size_t alignment, uintptr_t ret_addr) noexcept override;
  bool Resize(Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) noexcept override;
  void* Remap(Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) noexcept override;
  void Free(Memory memory, size_t alignment, uintptr_t ret_addr) noexcept override;

  // Releases every block.
  void Reset() noexcept { used_ = 0; }
  // Records the reset in `traced` (which must wrap this arena), then resets.
  void ResetTraced(TracingAllocator& traced) noexcept;

  size_t used() const noexcept { return used_; }
  size_t capacity() const noexcept { return capacity_; }

 private:
  bool IsLast(const Memory& memory) const noexcept {
    return memory.data() + memory.size() == buffer_.get() + used_;
  }

  std::unique_ptr<std::byte[]> buffer_;
  const size_t capacity_;
  size_t used_ = 0;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_FRAME_ARENA_H_
