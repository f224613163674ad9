// Copyright 2026 The memtrace Authors.

#include "runtime/internal/address_table.h"

#include <utility>

namespace memtrace::runtime_internal {
namespace {

constexpr size_t kInitialCapacity = 16;
// Grow when size would pass 85% of capacity.
constexpr size_t kMaxLoadNumerator = 17;
constexpr size_t kMaxLoadDenominator = 20;

}  // namespace

LiveBlock* AddressTable::Find(uint64_t address) noexcept {
  if (size_ == 0) return nullptr;
  for (size_t i = Home(address);; i = Next(i)) {
    LiveBlock& b = slots_[i];
    if (b.address == address) return &b;
    if (b.address == 0) return nullptr;
  }
}

LiveBlock* AddressTable::Insert(const LiveBlock& block) {
  if ((size_ + 1) * kMaxLoadDenominator > slots_.size() * kMaxLoadNumerator) Grow();
  size_t i = Home(block.address);
  while (slots_[i].address != 0) i = Next(i);
  slots_[i] = block;
  ++size_;
  return &slots_[i];
}

LiveBlock* AddressTable::FindOrInsert(const LiveBlock& block, bool* inserted) {
  if ((size_ + 1) * kMaxLoadDenominator > slots_.size() * kMaxLoadNumerator) Grow();
  size_t i = Home(block.address);
  for (;; i = Next(i)) {
    LiveBlock& b = slots_[i];
    if (b.address == block.address) {
      *inserted = false;
      return &b;
    }
    if (b.address == 0) break;
  }
  slots_[i] = block;
  ++size_;
  *inserted = true;
  return &slots_[i];
}

void AddressTable::Erase(LiveBlock* block) noexcept {
  // Backward-shift deletion: pull later members of the probe run into the hole so that
  // lookups never need tombstones.
  size_t hole = static_cast<size_t>(block - slots_.data());
  size_t i = hole;
  for (;;) {
    i = Next(i);
    LiveBlock& b = slots_[i];
    if (b.address == 0) break;
    const size_t home = Home(b.address);
    // b may move into the hole if its home is not in the cyclic range (hole, i].
    const bool home_in_range = hole <= i ? (home > hole && home <= i)
                                         : (home > hole || home <= i);
    if (!home_in_range) {
      slots_[hole] = b;
      hole = i;
    }
  }
  slots_[hole] = LiveBlock{};
  --size_;
}

void AddressTable::Grow() {
  std::vector<LiveBlock> old;
  old.swap(slots_);
  const size_t capacity =
      old.empty() ? kInitialCapacity : old.size() + old.size() / 2;
  slots_.assign(capacity, LiveBlock{});
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
  std::vector<LiveBlock>().swap(slots_);
  size_ = 0;
}

}  // namespace memtrace::runtime_internal
