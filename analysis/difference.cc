// Copyright 2026 The memtrace Authors.

#include "analysis/difference.h"

#include <algorithm>
#include <map>

namespace memtrace {

std::vector<Difference> Compare(const CaptureSummary& before, const CaptureSummary& after) {
  std::map<std::string, Difference> by_path;
  auto path_of = [](const CaptureSummary& s, uint32_t id) {
    auto it = s.scope_paths.find(id);
    return it != s.scope_paths.end() ? it->second : std::string("(scope ") +
                                                        std::to_string(id) + ")";
  };
  for (const auto& [id, usage] : before.scopes) {
    Difference& d = by_path[path_of(before, id)];
    d.path = path_of(before, id);
    d.before = usage;
  }
  for (const auto& [id, usage] : after.scopes) {
    Difference& d = by_path[path_of(after, id)];
    d.path = path_of(after, id);
    d.after = usage;
  }
  std::vector<Difference> out;
  out.push_back(Difference{"TOTAL", before.totals, after.totals});
  std::vector<Difference> rows;
  for (auto& [path, d] : by_path) rows.push_back(d);
  std::sort(rows.begin(), rows.end(), [](const Difference& a, const Difference& b) {
    const int64_t la = a.live_delta() < 0 ? -a.live_delta() : a.live_delta();
    const int64_t lb = b.live_delta() < 0 ? -b.live_delta() : b.live_delta();
    if (la != lb) return la > lb;
    const int64_t ha = a.high_water_delta() < 0 ? -a.high_water_delta() : a.high_water_delta();
    const int64_t hb = b.high_water_delta() < 0 ? -b.high_water_delta() : b.high_water_delta();
    if (ha != hb) return ha > hb;
    return a.path < b.path;
  });
  out.insert(out.end(), rows.begin(), rows.end());
  return out;
}

std::vector<Difference> CompareSites(const CaptureSummary& before, const SiteNameOf& before_name,
                                     const CaptureSummary& after, const SiteNameOf& after_name) {
  std::map<std::string, Difference> by_name;
  auto add = [&](const CaptureSummary& s, const SiteNameOf& name,
                 UsageCounters Difference::*side, bool Difference::*peak_known) {
    std::map<std::string, int> rows_of;
    for (const AllocationAttribution& a : s.attribution) {
      const std::string n = name(a.site);
      Difference& d = by_name[n];
      UsageCounters& u = d.*side;
      if (++rows_of[n] == 1) {
        u = a.usage;  // one row: its peak is the name's
        if (!s.snapshot_of.taken) continue;
      } else {
        u.AddCounts(a.usage);
      }
      u.high_water_bytes = u.high_water_low_bytes = u.high_water_high_bytes = 0;
      d.*peak_known = false;
    }
  };
  add(before, before_name, &Difference::before, &Difference::before_peak_known);
  add(after, after_name, &Difference::after, &Difference::after_peak_known);
  std::vector<Difference> rows;
  for (auto& [name, d] : by_name) {
    d.path = name;
    rows.push_back(d);
  }
  std::sort(rows.begin(), rows.end(), [](const Difference& a, const Difference& b) {
    if (a.live_delta() != b.live_delta()) return a.live_delta() > b.live_delta();
    if (a.allocated_delta() != b.allocated_delta()) return a.allocated_delta() > b.allocated_delta();
    return a.path < b.path;
  });
  return rows;
}

// Site ids of a capture are the ledger's site values; every one gets its own (the
// capacity is the most ids, less the one SiteTable keeps for "other sites").
}  // namespace memtrace
