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
// Inside one step (the events of one process stamped t) the process passes through values
// between its lowest and its highest there, in its own order, which its replay knows; how
// the steps of two processes stamped alike interleave, no capture says. So the highest sum
// is an interval, as a peak reached by the threads of one process is: at least what one
// process's highest moment in a step and every other's lowest in its step at that time add
// up to, at most the sum of their highest. Where at most one process changes at each time
// the two are equal, and a family's peak is never below its largest process's own.
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
  // The events stamped t: the live bytes after the last of them (`end`), and the lowest
  // and highest the process held from before the first of them to after the last.
  struct Step {
    int64_t t = 0;  // unix ns
    uint64_t end = 0;
    uint64_t lowest = 0;
    uint64_t highest = 0;
  };
  std::vector<Step> steps;  // t ascending, one per t
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
  uint64_t bytes = 0;       // the highest sum: at least this much was live at once
  uint64_t bytes_high = 0;  // and at most this much (equal when exact)
  int64_t t = 0;            // the first moment of `bytes` (unix ns); 0 when nothing was live
  size_t processes = 0;     // the images holding memory then
  bool exact() const noexcept { return bytes == bytes_high; }
};

FamilyHighWater HighestSum(const std::vector<ProcessLiveSteps>& processes);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_FAMILY_LIVE_H_
