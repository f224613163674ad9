// Copyright 2026 The memtrace Authors.
//
// family_live.h: the live bytes of a process family over time, added up across its
// processes, and the moment that sum was highest.
//
// Each capture's own high-water mark says how much one process held at its worst. A
// server that forks its workers (`memtrace run --forks`) is sized by what all of them hold
// at once, and they peak at different times. Each process's live bytes are a step
// function of time (the events' `t`, which is the start of their drainer epoch: 2 ms
// resolution by default); an image's memory goes away when it ends (exit) or is replaced (exec).
// HighestSum() adds the step functions up and finds the highest moment:
//
//   process A:  100 ──────┐ 50 ───────────┐
//   process B:      70 ─────────┐         │
//   sum:        100  170  120   50        0      highest: 170, when both were live
//
// Events of different processes stamped with the same time are applied together before
// the sum is read, so the figure is at epoch resolution: a peak reached only inside one
// millisecond by two processes' interleaving is not seen, as within one process.
// A forked child's capture begins with the blocks it inherited (recorded as allocations):
// they count in the child as in the parent, since each holds its copy (the kernel shares
// the pages until one of them writes).
//
// Thread safety: pure functions; SummarizeWithSteps reads one file.

#ifndef MEMTRACE_ANALYSIS_FAMILY_LIVE_H_
#define MEMTRACE_ANALYSIS_FAMILY_LIVE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/analyzer.h"

namespace memtrace {

// One process image's live bytes over time.
struct ProcessLiveSteps {
  // (t in unix ns, live bytes after every event stamped t), t ascending, one per t.
  std::vector<std::pair<int64_t, uint64_t>> steps;
  // When the image's memory went away: the trailer's finished_unix_ns, or without a
  // trailer (the process was killed) the last event's t.
  int64_t ended_unix_ns = 0;
};

// Replays `path` once, as Analyzer::Summarize does (`progress` may be empty), and fills
// *steps as it goes.
absl::StatusOr<CaptureSummary> SummarizeWithSteps(const std::string& path,
                                                  const Analyzer::Progress& progress,
                                                  ProcessLiveSteps* steps);

struct FamilyHighWater {
  uint64_t bytes = 0;    // the highest sum
  int64_t t = 0;         // its first moment (unix ns); 0 when nothing was ever live
  size_t processes = 0;  // the images holding memory then
};

FamilyHighWater HighestSum(const std::vector<ProcessLiveSteps>& processes);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_FAMILY_LIVE_H_
