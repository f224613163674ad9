// Copyright 2026 The memtrace Authors.

#include "transport/spsc_ring.h"

#include <algorithm>
#include <new>

#include "transport/internal/mapped_memory.h"

namespace memtrace {

SpscRing::SpscRing(uint32_t id, uint64_t mask, Event* slots, size_t mapped_bytes) noexcept
    : producer_check_((mask + 1) / 4 == 0 ? 1 : (mask + 1) / 4),
      id_(id), mask_(mask), slots_(slots),
      mapped_bytes_(mapped_bytes) {}

SpscRing* SpscRing::Create(uint32_t id, uint32_t capacity_log2) noexcept {
  if (capacity_log2 < kMinCapacityLog2 || capacity_log2 > kMaxCapacityLog2) return nullptr;
  const uint64_t capacity = uint64_t{1} << capacity_log2;
  // One mapping holds the ring object followed by its slots.
  const size_t bytes = sizeof(SpscRing) + capacity * sizeof(Event);
  void* memory = transport_internal::MapZeroed(bytes);
  if (memory == nullptr) return nullptr;
  auto* slots = reinterpret_cast<Event*>(static_cast<char*>(memory) + sizeof(SpscRing));
  return new (memory) SpscRing(id, capacity - 1, slots, bytes);
}

void SpscRing::Destroy(SpscRing* ring) noexcept {
  if (ring == nullptr) return;
  const size_t bytes = ring->mapped_bytes_;
  ring->~SpscRing();
  transport_internal::Unmap(ring, bytes);
}

void SpscRing::PopulateAhead(uint64_t head) noexcept {
  const uint64_t capacity = mask_ + 1;
  if (populated_ >= capacity) return;
  // As far ahead as the producer has come (and 16 KiB), so that a thread that records
  // little keeps little resident; in steps of at least a quarter of the new end, so the
  // calls are few.
  constexpr uint64_t kMinAhead = 16384 / sizeof(Event);
  const uint64_t end = std::min(capacity, 2 * head + kMinAhead);
  if (end <= populated_ || (end - populated_ < end / 4 && end < capacity)) return;
  if (!transport_internal::Populate(slots_ + populated_, (end - populated_) * sizeof(Event))) {
    populated_ = capacity;  // the kernel cannot: the producer faults pages in itself
    return;
  }
  populated_ = end;
}

void SpscRing::ResetPositions(uint64_t position) noexcept {
  // Relaxed throughout: no other thread uses the ring now (see the header); the queue that
  // hands it over publishes these stores.
  head_.store(position, std::memory_order_relaxed);
  claim_.store(position, std::memory_order_relaxed);
  tail_.store(position, std::memory_order_relaxed);
  producer_head_ = position;
  producer_check_ = position + QuarterCapacity();
  wake_request_ = false;
}

}  // namespace memtrace
