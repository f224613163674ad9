// Copyright 2026 The memtrace Authors.
//
// analyzer.h: rebuilds a capture's ledger from its events and answers with totals.
//
// Analyzer replays a capture (capture_reader.h) in file order, which is the order the
// drainer applied the records in, so its totals, per-scope and per-layer counters and
// high-water marks equal the runtime's own Snapshot taken at the end of the capture (the
// round-trip test checks this). Releases are paired with allocations by ticket (`of`),
// falling back to the oldest live block at the same address, as the runtime does. Memory
// is bounded by the live allocations, not by the file.
//
// This is the first part of the analysis issue: totals and integrity. Top sites,
// snapshots at a point, differences, retention, peak composition and coverage build on
// the same replay.
//
// Thread safety: an Analyzer is used by one thread.

#ifndef MEMTRACE_ANALYSIS_ANALYZER_H_
#define MEMTRACE_ANALYSIS_ANALYZER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "analysis/capture_reader.h"
#include "runtime/usage_counters.h"

namespace memtrace {

struct CaptureSummary {
  uint64_t pid = 0;
  uint64_t events = 0;
  bool has_trailer = false;
  bool trailer_complete = false;  // the trailer's own verdict (runtime and sink)
  std::string trailer;            // the trailer line, raw
  UsageCounters totals;
  std::map<uint32_t, std::string> scope_paths;  // scope id -> path
  std::map<uint32_t, UsageCounters> scopes;     // scopes that allocated
  std::map<uint32_t, std::string> layer_names;
  std::map<uint32_t, UsageCounters> layers;
  uint64_t unmatched_releases = 0;  // releases the capture has no allocation for
  uint64_t live_blocks = 0;
};

class Analyzer {
 public:
  // Reads and replays a capture file.
  static absl::StatusOr<CaptureSummary> Summarize(const std::string& path);
  static absl::StatusOr<CaptureSummary> SummarizeText(std::string_view text,
                                                      const std::string& name);

  absl::Status Apply(const CaptureRecord& rec);
  CaptureSummary Finish(const CaptureReadStats& stats);

 private:
  struct Block {
    uint64_t addr;
    uint64_t size;
    uint32_t scope;
    uint32_t site;
    uint32_t layer;
  };
  struct Moving {
    bool active = false;
    uint32_t scope = 0, site = 0;
  };

  void Allocate(uint64_t ticket, const Block& b);
  // Finds the live block `of` names, or the oldest at (layer, addr); erases it.
  bool Take(uint64_t of, uint32_t layer, uint64_t addr, Block* out);
  void Account(const Block& b, bool allocate);

  CaptureSummary summary_;
  absl::flat_hash_map<uint64_t, Block> live_;  // by ticket
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> by_address_;  // layer<<56^addr
  absl::flat_hash_map<uint32_t, Moving> moving_;  // by thread, between remap halves
};

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_ANALYZER_H_
