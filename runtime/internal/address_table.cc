// Copyright 2026 The memtrace Authors.

#include "runtime/internal/address_table.h"

#include <algorithm>
#include <utility>

namespace memtrace::runtime_internal {
namespace {

constexpr size_t kInitialCapacity = 16;

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
