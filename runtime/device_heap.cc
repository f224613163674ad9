// Copyright 2026 The memtrace Authors.

#include "runtime/device_heap.h"

#include <iterator>

namespace memtrace {
namespace {

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

SimulatedDeviceHeap::SimulatedDeviceHeap(uint64_t capacity) : capacity_(capacity) {
  if (capacity > 0) free_.emplace(0, capacity);
}

void* SimulatedDeviceHeap::Alloc(size_t len, size_t alignment, uintptr_t) noexcept {
  if (len == 0) len = 1;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = AlignUp(it->first, alignment);
    const uint64_t end = it->first + it->second;
    if (start + len > end) continue;
    const uint64_t hole_start = it->first;
    free_.erase(it);
    if (start > hole_start) free_.emplace(hole_start, start - hole_start);
    if (start + len < end) free_.emplace(start + len, end - (start + len));
    used_.emplace(start, len);
    used_bytes_ += len;
    return reinterpret_cast<void*>(kBase + start);
  }
  return nullptr;
}

bool SimulatedDeviceHeap::Resize(Memory memory, size_t, size_t new_len, uintptr_t) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t offset = reinterpret_cast<uint64_t>(memory.data()) - kBase;
  auto it = used_.find(offset);
  if (it == used_.end() || new_len == 0) return false;
  if (new_len <= it->second) {  // shrink: give the tail back
    const uint64_t tail = it->second - new_len;
    if (tail > 0) free_.emplace(offset + new_len, tail);
    used_bytes_ -= tail;
    it->second = new_len;
    return true;
  }
  auto next = free_.find(offset + it->second);  // grow into the free block right after
  if (next == free_.end() || it->second + next->second < new_len) return false;
  const uint64_t extra = new_len - it->second;
  const uint64_t rest = next->second - extra;
  free_.erase(next);
  if (rest > 0) free_.emplace(offset + new_len, rest);
  used_bytes_ += extra;
  it->second = new_len;
  return true;
}

void* SimulatedDeviceHeap::Remap(Memory memory, size_t alignment, size_t new_len,
                                 uintptr_t ret_addr) noexcept {
  // Device memory cannot be copied by the host: only in-place changes.
  return Resize(memory, alignment, new_len, ret_addr) ? memory.data() : nullptr;
}

void SimulatedDeviceHeap::Free(Memory memory, size_t, uintptr_t) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t offset = reinterpret_cast<uint64_t>(memory.data()) - kBase;
  auto it = used_.find(offset);
  if (it == used_.end()) return;
  uint64_t start = offset, len = it->second;
  used_bytes_ -= len;
  used_.erase(it);
  // Coalesce with neighbours.
  auto next = free_.find(start + len);
  if (next != free_.end()) {
    len += next->second;
    free_.erase(next);
  }
  auto after = free_.lower_bound(start);
  if (after != free_.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, len);
}

uint64_t SimulatedDeviceHeap::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_bytes_;
}

}  // namespace memtrace
