// Copyright 2026 The memtrace Authors.
//
// allocation_record.h: one live allocation as memtrace reports it.
//
// The ledger keeps live blocks compactly (24 bytes each, see internal/address_table.h);
// an AllocationRecord is the expanded, public form handed to snapshots, sinks and tests.
// `site` is the call site the allocation was recorded with: the return address passed to
// the allocator interface, or the id of a captured stack once stacks are enabled.
//
// Thread safety: plain data.

#ifndef MEMTRACE_RUNTIME_ALLOCATION_RECORD_H_
#define MEMTRACE_RUNTIME_ALLOCATION_RECORD_H_

#include <cstdint>

#include "transport/event.h"

namespace memtrace {

struct AllocationRecord {
  uint64_t address = 0;
  uint64_t size = 0;
  uint32_t scope = 0;      // scope path id (scope_table.h); 0 is "(unscoped)"
  uint64_t site = 0;       // call site (return address) as recorded
  LayerId layer = 0;

  friend bool operator==(const AllocationRecord&, const AllocationRecord&) = default;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_ALLOCATION_RECORD_H_
