// Copyright 2026 The memtrace Authors.

#include "runtime/frame_arena.h"

#include "runtime/tracer.h"

namespace memtrace {

FrameArena::FrameArena(size_t capacity)
    : buffer_(new std::byte[capacity]), capacity_(capacity) {}

void* FrameArena::Alloc(size_t len, size_t alignment, uintptr_t) noexcept {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(buffer_.get());
  const uintptr_t start = (base + used_ + alignment - 1) & ~(alignment - 1);
  const size_t offset = start - base;
  if (len == 0) len = 1;
  if (offset > capacity_ || len > capacity_ - offset) return nullptr;
  used_ = offset + len;
  return buffer_.get() + offset;
}

bool FrameArena::Resize(Memory memory, size_t, size_t new_len, uintptr_t) noexcept {
  if (!IsLast(memory) || new_len == 0) return new_len != 0 && new_len <= memory.size();
  const size_t offset = static_cast<size_t>(memory.data() - buffer_.get());
  if (new_len > capacity_ - offset) return false;
  used_ = offset + new_len;
  return true;
}

void* FrameArena::Remap(Memory memory, size_t alignment, size_t new_len,
                        uintptr_t ret_addr) noexcept {
  return Resize(memory, alignment, new_len, ret_addr) ? memory.data() : nullptr;
}

void FrameArena::Free(Memory memory, size_t, uintptr_t) noexcept {
  if (IsLast(memory)) used_ -= memory.size();
}

void FrameArena::ResetTraced(TracingAllocator& traced) noexcept {
  traced.RecordReset();  // before the memory can be handed out again
  Reset();
}

}  // namespace memtrace
