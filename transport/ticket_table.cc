// Copyright 2026 The memtrace Authors.

#include "transport/ticket_table.h"

#include <type_traits>

#include "transport/internal/mapped_memory.h"

namespace memtrace {

static_assert(sizeof(std::atomic<uint64_t>) == 8 &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "slots are plain lock-free words");

TicketTable::TicketTable(uint32_t slots_log2) noexcept
    : slots_log2_(slots_log2), shift_(64 - (slots_log2 - kWaysLog2)) {
  if (slots_log2 < kMinSlotsLog2 || slots_log2 > kMaxSlotsLog2) return;
  // Zero-filled pages hold empty slots (address 0). The atomics are lock-free words with
  // no other state, so mapped zero pages are valid objects of that type.
  buckets_ = static_cast<Slot*>(transport_internal::MapZeroedHuge(mapped_bytes()));
}

TicketTable::~TicketTable() { transport_internal::Unmap(buckets_, mapped_bytes()); }

}  // namespace memtrace
