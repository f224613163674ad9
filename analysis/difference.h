// Copyright 2026 The memtrace Authors.
//
// difference.h: two summaries compared scope by scope, or call site by call site
// (`memtrace diff`, `memtrace diff --sites`, the HTML report's "Compared with").
//
// Thread safety: plain functions of their arguments.

#ifndef MEMTRACE_ANALYSIS_DIFFERENCE_H_
#define MEMTRACE_ANALYSIS_DIFFERENCE_H_

#include <cstdint>
#include <functional>
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
  // Whether each side's high-water mark is a real one (CompareSites()).
  bool before_peak_known = true;
  bool after_peak_known = true;
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

// A call site's name in one capture (cli/internal/site_namer.h names them as `top` does).
using SiteNameOf = std::function<std::string(uint32_t site)>;

// Each call site's counters in `before` and `after`, matched by the name each capture's
// namer gives it (so two runs compare whatever addresses they ran at), every (site,
// scope, layer) of a name summed; `path` is the name. Largest growth in live bytes first,
// then in bytes allocated, then by name. A side's high-water mark is known only where one
// row of the capture has the name, in a capture that is not a snapshot (which holds only
// the blocks live at its moment): rows of one name peak at different moments, so their
// sum's peak is not known (left at zero, before_peak_known or after_peak_known false).
std::vector<Difference> CompareSites(const CaptureSummary& before, const SiteNameOf& before_name,
                                     const CaptureSummary& after, const SiteNameOf& after_name);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_DIFFERENCE_H_
