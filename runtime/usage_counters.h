// Copyright 2026 The memtrace Authors.
//
// usage_counters.h: the byte and block counts kept per scope, per layer and in total.
//
// Invariants, which tests check after every capture:
//   live_bytes == allocated_bytes - freed_bytes
//   live_count == allocated_count - freed_count
//   high_water_bytes >= live_bytes
//   high_water_low_bytes <= high_water_bytes <= high_water_high_bytes
//
// The high-water mark. high_water_bytes is the peak of the order the records were
// applied in. When threads allocate at once, the real peak may differ; it lies in
// [high_water_low_bytes, high_water_high_bytes], which the drainer computes from the
// records' time stamps (runtime/internal/peak_bounds.h). The peak is exact when the two are equal.
// A change applied in a known order (`ordered`: one thread's records, a replay of a
// sequence) raises all three; one applied in an order that is only a guess raises the
// value and the upper end, and the drainer raises the lower end at the epoch's end.
// An in-place resize moves allocated_bytes (growth) or freed_bytes (shrink) and leaves the
// counts alone; a remap that moves counts as one free of the old block and one allocation
// of the new one.
//
// Blocks and calls. allocated_count counts blocks: an in-place resize makes none.
// allocation_calls counts the calls that allocated, as heaptrack counts its "calls to
// allocation functions": every allocation and every resize, in place or moved, a resize
// being one call. So allocation_calls == allocated_count + (in-place resizes), and a move
// (one free and one allocation here) is one call, counted by its allocation.
//
// Thread safety: plain data.

#ifndef MEMTRACE_RUNTIME_USAGE_COUNTERS_H_
#define MEMTRACE_RUNTIME_USAGE_COUNTERS_H_

#include <cstdint>

namespace memtrace {

// high_water_high_bytes of a peak that has no bound: a capture written before memtrace
// bounded peaks, or a point inside a capture whose bounds hold only for its end.
inline constexpr uint64_t kNoHighWaterBound = ~uint64_t{0};

struct UsageCounters {
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
  uint64_t high_water_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t allocated_count = 0;
  uint64_t freed_bytes = 0;
  uint64_t freed_count = 0;
  // The interval that must hold the real peak (above).
  uint64_t high_water_low_bytes = 0;
  uint64_t high_water_high_bytes = 0;
  // Calls that allocated: allocations and resizes (above).
  uint64_t allocation_calls = 0;

  void Allocate(uint64_t bytes, bool ordered = true) noexcept {
    allocated_bytes += bytes;
    ++allocated_count;
    ++allocation_calls;
    live_bytes += bytes;
    ++live_count;
    Rise(ordered);
  }
  void Free(uint64_t bytes) noexcept {
    freed_bytes += bytes;
    ++freed_count;
    live_bytes -= bytes;
    --live_count;
  }
  // An in-place size change from `from` to `to` bytes.
  void Resize(uint64_t from, uint64_t to, bool ordered = true) noexcept {
    ++allocation_calls;
    if (to >= from) {
      allocated_bytes += to - from;
      live_bytes += to - from;
      Rise(ordered);
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
    allocation_calls += o.allocation_calls;
    freed_bytes += o.freed_bytes;
    freed_count += o.freed_count;
  }

  // Whether the high-water mark is exact: its interval is one value.
  bool high_water_exact() const noexcept {
    return high_water_low_bytes == high_water_high_bytes;
  }
  // Whether it has a bound at all (above).
  bool high_water_bounded() const noexcept {
    return high_water_high_bytes != kNoHighWaterBound;
  }
  // Forgets the interval: the peak has no bound (kNoHighWaterBound).
  void UnboundHighWater() noexcept {
    high_water_low_bytes = 0;
    high_water_high_bytes = kNoHighWaterBound;
  }

  // Takes [low, high] as the interval of one more stretch's peak (the drainer's, for an
  // epoch): the whole run's peak is the largest of its stretches', so each end becomes
  // the larger of the two; then widened where needed to hold high_water_bytes.
  void BoundHighWater(uint64_t low, uint64_t high) noexcept {
    if (low > high_water_low_bytes) high_water_low_bytes = low;
    if (high > high_water_high_bytes) high_water_high_bytes = high;
    if (high_water_low_bytes > high_water_bytes) high_water_low_bytes = high_water_bytes;
    if (high_water_high_bytes < high_water_bytes) high_water_high_bytes = high_water_bytes;
  }

  friend bool operator==(const UsageCounters&, const UsageCounters&) = default;

 private:
  void Rise(bool ordered) noexcept {
    if (live_bytes > high_water_bytes) high_water_bytes = live_bytes;
    if (live_bytes > high_water_high_bytes) high_water_high_bytes = live_bytes;
    if (ordered && live_bytes > high_water_low_bytes) high_water_low_bytes = live_bytes;
  }
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_USAGE_COUNTERS_H_
