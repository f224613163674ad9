// Copyright 2026 The memtrace Authors.
//
// difference.h: two summaries compared scope by scope (`memtrace diff`).

#ifndef MEMTRACE_ANALYSIS_DIFFERENCE_H_
#define MEMTRACE_ANALYSIS_DIFFERENCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/capture_summary.h"
#include "runtime/usage_counters.h"

namespace memtrace {

// One scope compared between two captures (the seed's Difference), matched by path.
struct Difference {
  std::string path;
  UsageCounters before;  // zeros if the scope is new
  UsageCounters after;   // zeros if the scope is gone
  int64_t live_delta() const {
    return static_cast<int64_t>(after.live_bytes) - static_cast<int64_t>(before.live_bytes);
  }
  int64_t high_water_delta() const {
    return static_cast<int64_t>(after.high_water_bytes) -
           static_cast<int64_t>(before.high_water_bytes);
  }
  int64_t allocated_delta() const {
    return static_cast<int64_t>(after.allocated_bytes) -
           static_cast<int64_t>(before.allocated_bytes);
  }
};

// Per-scope differences between two summaries, largest change in live bytes first (ties:
// high-water, then path). The totals come first, under the path "TOTAL".
std::vector<Difference> Compare(const CaptureSummary& before, const CaptureSummary& after);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_DIFFERENCE_H_
