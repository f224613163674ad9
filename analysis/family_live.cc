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
  // After each record is applied: the live bytes after the last event at each time.
  auto step = [&](const CaptureRecord& rec) {
    if (rec.type == LineType::kTrailer) {
      steps->ended_unix_ns = FinishedAt(rec.raw);
    } else if (IsEvent(rec.type)) {
      const uint64_t live = analyzer.state().totals.live_bytes;
      if (!steps->steps.empty() && steps->steps.back().first == rec.t) {
        steps->steps.back().second = live;  // the value after the last event at t
      } else {
        steps->steps.emplace_back(rec.t, live);
      }
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
  // (t, process, live bytes from then on), each image's end as 0, in time order. Every
  // change stamped t is applied before the sum at t is read.
  struct Change {
    int64_t t;
    size_t process;
    uint64_t live;
  };
  std::vector<Change> changes;
  for (size_t p = 0; p < processes.size(); ++p) {
    for (const auto& [t, live] : processes[p].steps) changes.push_back({t, p, live});
    if (!processes[p].steps.empty()) {
      const int64_t end = std::max(processes[p].ended_unix_ns, processes[p].steps.back().first);
      changes.push_back({end, p, 0});
    }
  }
  // Stable: a process's own changes at one t keep their order (its last step, then its
  // end when they share the time).
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return a.t < b.t; });
  std::vector<uint64_t> live(processes.size(), 0);
  uint64_t sum = 0;
  size_t holding = 0;
  FamilyHighWater best;
  for (size_t i = 0; i < changes.size();) {
    const int64_t t = changes[i].t;
    for (; i < changes.size() && changes[i].t == t; ++i) {
      const Change& c = changes[i];
      holding -= live[c.process] != 0;
      sum = sum - live[c.process] + c.live;
      live[c.process] = c.live;
      holding += live[c.process] != 0;
    }
    if (sum > best.bytes) best = FamilyHighWater{sum, t, holding};
  }
  return best;
}

}  // namespace memtrace
