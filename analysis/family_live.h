// Copyright 2026 The memtrace Authors.
//
// family_live.h: the live bytes of a process family over time, added up across its
// processes, and the moment that sum was highest.
//
// Each capture's own high-water mark says how much one process held at its worst. A
// server that forks its workers (`memtrace run --forks`) is sized by what all of them hold
// at once, and they peak at different times. Each process's events carry the start of
// their drainer epoch (`t`); an image's memory goes away when it ends (exit) or is
// replaced (exec). Within one step (the events of one process stamped t) the process
// passes through values between its lowest and highest there, in an order its replay
// knows; when, within the step's window, no capture says: from t to the process's next
// step (the epochs between had no events), or to its end. Two processes' steps whose
// windows meet may have interleaved in any way. So HighestSum() gives an interval:
//
//   at least: one process at its highest in a step while every other holds no less
//             than the least it surely held throughout that step's window;
//   at most:  every process at the highest of its step whose window holds one moment,
//             at the moment that sum is largest; a process whose capture has no trailer
//             (killed) is taken to hold its last step's highest until the family's end,
//             since when it died is not known.
//
//   process A:  [0 ..100] ─────┐[100 .. 50] ──────────┐
//   process B:        [0 .. 70] ──────────┐           │
//   sum:        at least 100 (A alone at its highest), at most 170 (both at theirs)
//
// The two are equal where the windows do not leave the order open (one process changing
// at a time, the others holding steady values), and the lower end is never below the
// largest process's own high-water. Windows are taken closed: two that touch meet.
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
  // trailer (the process was killed) the last event's t, which it surely lived to; it may
  // have held its memory any time after (end_known false): a killed worker's blocks count
  // in the upper end of the family's interval until every other process has ended.
  int64_t ended_unix_ns = 0;
  bool end_known = true;
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
