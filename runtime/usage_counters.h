// Copyright 2026 The memtrace Authors.
//
// usage_counters.h: the byte and block counts kept per scope, per layer and in total.
//
// Invariants, which tests check after every capture:
//   live_bytes == allocated_bytes - freed_bytes
//   live_count == allocated_count - freed_count
//   high_water_bytes >= live_bytes
// An in-place resize moves allocated_bytes (growth) or freed_bytes (shrink) and leaves the
// counts alone; a remap that moves counts as one free of the old block and one allocation
// of the new one.
//
// Thread safety: plain data.

#ifndef MEMTRACE_RUNTIME_USAGE_COUNTERS_H_
#define MEMTRACE_RUNTIME_USAGE_COUNTERS_H_

#include <cstdint>

namespace memtrace {

struct UsageCounters {
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
  uint64_t high_water_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t allocated_count = 0;
  uint64_t freed_bytes = 0;
  uint64_t freed_count = 0;

  void Allocate(uint64_t bytes) noexcept {
    allocated_bytes += bytes;
    ++allocated_count;
    Grow(bytes);
  }
  void Free(uint64_t bytes) noexcept {
    freed_bytes += bytes;
    ++freed_count;
    live_bytes -= bytes;
    --live_count;
  }
  // An in-place size change from `from` to `to` bytes.
  void Resize(uint64_t from, uint64_t to) noexcept {
    if (to >= from) {
      allocated_bytes += to - from;
      live_bytes += to - from;
      if (live_bytes > high_water_bytes) high_water_bytes = live_bytes;
    } else {
      freed_bytes += from - to;
      live_bytes -= from - to;
    }
  }

  // Adds another set's live, allocated and freed counts (rows summed into one: scopes
  // folded into "more scopes", one call site over several processes). Not its
  // high-water mark: the two peaks need not have been at the same moment, so the caller
  // says what the sum's high-water is.
  void AddCounts(const UsageCounters& o) noexcept {
    live_bytes += o.live_bytes;
    live_count += o.live_count;
    allocated_bytes += o.allocated_bytes;
    allocated_count += o.allocated_count;
    freed_bytes += o.freed_bytes;
    freed_count += o.freed_count;
  }

  friend bool operator==(const UsageCounters&, const UsageCounters&) = default;

 private:
  void Grow(uint64_t bytes) noexcept {
    live_bytes += bytes;
    ++live_count;
    if (live_bytes > high_water_bytes) high_water_bytes = live_bytes;
  }
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_USAGE_COUNTERS_H_
