// Copyright 2026 The memtrace Authors.

#include "analysis/family_live.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <tuple>

#include "analysis/capture_reader.h"

namespace memtrace {
namespace {

// The number after "finished_unix_ns" in a trailer line; 0 when absent.
int64_t FinishedAt(const std::string& trailer) {
  static constexpr std::string_view kKey = "\"finished_unix_ns\":";
  const size_t at = trailer.find(kKey);
  if (at == std::string::npos) return 0;
  return strtoll(trailer.c_str() + at + kKey.size(), nullptr, 10);
}

}  // namespace

absl::StatusOr<CaptureSummary> SummarizeWithSteps(const std::string& path,
                                                  const Analyzer::Progress& progress,
                                                  ProcessLiveSteps* steps) {
  Analyzer analyzer;
  CaptureReadStats stats;
  steps->steps.clear();
  steps->ended_unix_ns = 0;
  int64_t last_t = 0;
  // After each record is applied: the live bytes after the last event at each time, and
  // the lowest and highest from before the first.
  auto step = [&](const CaptureRecord& rec) {
    if (rec.type == LineType::kTrailer) {
      steps->ended_unix_ns = FinishedAt(rec.raw);
    } else if (IsEvent(rec.type)) {
      const uint64_t live = analyzer.state().totals.live_bytes;
      std::vector<ProcessLiveSteps::Step>& all = steps->steps;
      if (all.empty() || all.back().t != rec.t) {
        const uint64_t before = all.empty() ? 0 : all.back().end;
        all.push_back({rec.t, before, before, before});
      }
      ProcessLiveSteps::Step& s = all.back();
      s.end = live;
      s.lowest = std::min(s.lowest, live);
      s.highest = std::max(s.highest, live);
      last_t = std::max(last_t, rec.t);
    }
    return absl::OkStatus();
  };
  absl::Status s = analyzer.ApplyFile(path, &stats, progress, step);
  if (!s.ok()) return s;
  if (steps->ended_unix_ns == 0) steps->ended_unix_ns = last_t;
  return analyzer.FinishFile(path, stats);
}

FamilyHighWater HighestSum(const std::vector<ProcessLiveSteps>& processes) {
  // Every process's steps, each image's end as a step to 0, in time order. An image that
  // ends at t ends before the others' steps at t (an exec'd image starts after the one it
  // replaced), unless its own last step is at t: it ends after that, with them.
  struct Change {
    int64_t t;
    int order;  // at one t: 0, the ends; 1, the steps (and the ends that follow their own)
    size_t process;
    ProcessLiveSteps::Step step;
  };
  std::vector<Change> changes;
  for (size_t p = 0; p < processes.size(); ++p) {
    for (const ProcessLiveSteps::Step& s : processes[p].steps) changes.push_back({s.t, 1, p, s});
    if (!processes[p].steps.empty()) {
      const ProcessLiveSteps::Step& last = processes[p].steps.back();
      const int64_t end = std::max(processes[p].ended_unix_ns, last.t);
      changes.push_back({end, end == last.t ? 1 : 0, p, {end, 0, 0, last.end}});
    }
  }
  // Stable: a process's own changes at one time keep their order (its last step, then its
  // end when they share the time).
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return std::tie(a.t, a.order) < std::tie(b.t, b.order);
  });
  // At each time t: every process that changes then passes through [lowest, highest] (two
  // changes of one process at t merge), the others hold their value.
  std::vector<uint64_t> live(processes.size(), 0);
  std::vector<ProcessLiveSteps::Step> at(processes.size());
  std::vector<size_t> changed;
  uint64_t sum = 0;  // of `live`
  FamilyHighWater best;
  for (size_t i = 0; i < changes.size();) {
    const int64_t t = changes[i].t;
    const int order = changes[i].order;
    changed.clear();
    for (; i < changes.size() && changes[i].t == t && changes[i].order == order; ++i) {
      const Change& c = changes[i];
      ProcessLiveSteps::Step& s = at[c.process];
      if (changed.empty() || std::find(changed.begin(), changed.end(), c.process) == changed.end()) {
        changed.push_back(c.process);
        s = c.step;
      } else {
        s.end = c.step.end;
        s.lowest = std::min(s.lowest, c.step.lowest);
        s.highest = std::max(s.highest, c.step.highest);
      }
    }
    // The others' values, and each changed process's lowest and highest.
    uint64_t lowest = sum, highest = sum, rise = 0;
    for (const size_t p : changed) {
      lowest = lowest - live[p] + at[p].lowest;
      highest = highest - live[p] + at[p].highest;
      rise = std::max(rise, at[p].highest - at[p].lowest);
    }
    // One process at its highest while every other is at no less than its lowest.
    const uint64_t low = lowest + rise;
    if (low > best.bytes) {
      best.bytes = low;
      best.t = t;
      best.processes = 0;
      for (size_t p = 0; p < processes.size(); ++p) {
        const bool changes_now = std::find(changed.begin(), changed.end(), p) != changed.end();
        best.processes += (changes_now ? at[p].highest : live[p]) != 0;
      }
    }
    best.bytes_high = std::max(best.bytes_high, highest);
    for (const size_t p : changed) {
      sum = sum - live[p] + at[p].end;
      live[p] = at[p].end;
    }
  }
  best.bytes_high = std::max(best.bytes_high, best.bytes);
  return best;
}

}  // namespace memtrace
