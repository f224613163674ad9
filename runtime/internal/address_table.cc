// Copyright 2026 The memtrace Authors.

#include "runtime/internal/address_table.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace memtrace::runtime_internal {
namespace {

constexpr size_t kInitialCapacity = 16;
// Tables from this size on ask for transparent huge pages (two whole ones at least).
constexpr size_t kHugePagesFrom = size_t{4} << 20;

// Asks for transparent huge pages for the whole 2 MiB pages inside [memory, memory +
// bytes), before they are first written. A hint: failure changes nothing.
void AdviseHugePages(void* memory, size_t bytes) noexcept {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(memory) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(memory) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace

LiveBlock* AddressTable::Insert(const LiveBlock& block) {
  if (Full()) Grow();
  size_t i = Home(block.address);
  while (slots_[i].address != 0) i = Next(i);
  slots_[i] = block;
  ++size_;
  return &slots_[i];
}

void AddressTable::Grow() {
  LineAlignedVector<LiveBlock> old;
  old.swap(slots_);
  const size_t capacity =
      old.empty() ? kInitialCapacity : old.size() + old.size() * 2 / 5;
  // A large table in huge pages: zero-filling it faults each 2 MiB once, not 512 times
  // (each fault 3-11 us on these VMs), and its random lookups miss the TLB less.
  slots_.reserve(capacity);
  if (capacity * sizeof(LiveBlock) >= kHugePagesFrom) {
    AdviseHugePages(slots_.data(), capacity * sizeof(LiveBlock));
  }
  slots_.assign(capacity, LiveBlock{});
  capacity_ = capacity;
  size_ = 0;
  for (const LiveBlock& b : old) {
    if (b.address == 0) continue;
    size_t i = Home(b.address);
    while (slots_[i].address != 0) i = Next(i);
    slots_[i] = b;
    ++size_;
  }
}

void AddressTable::Clear() noexcept {
  LineAlignedVector<LiveBlock>().swap(slots_);
  capacity_ = 0;
  size_ = 0;
}

size_t AddressTable::LongestRun() const noexcept {
  size_t longest = 0;
  size_t run = 0;
  // Twice around, so that a run that wraps past the last slot is counted whole.
  for (size_t k = 0; k < 2 * capacity_; ++k) {
    run = slots_[k % capacity_].address != 0 ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::min(longest, capacity_);
}

}  // namespace memtrace::runtime_internal
