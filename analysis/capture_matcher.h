// Copyright 2026 The memtrace Authors.
//
// capture_matcher.h: what `memtrace verify` needs of a replay, and no more.
//
// A verdict (cli/internal/analysis_common.h: CaptureProblems(), IntegrityFindings())
// reads a capture's header, its trailer, how many events it holds, where it was cut off,
// whether any event was sampled, and how many releases matched no allocation. Only the
// last needs a replay, and only its matching: each release paired with its allocation by
// the drainer's rules. MatchCapture() reads every record (checked as any reading checks
// them, on the batch reader: batch_reader.h) and applies the memory events to the
// drainer's own ledger (AllocationLedger, 24 bytes a live block), in the order and with
// the epoch ends Analyzer::Apply() uses. It keeps no notes, call sites or per-thread
// state, which are most of a full replay's work per event.
//
// The summary it returns has the fields above, as Analyzer::Summarize() gives them for
// the same file (capture_matcher_test and the capture_reader fuzzer compare the two). Its
// totals, and the layers and scopes that allocated, are the drainer's ledger's counters
// over the records in the capture's order: what the recording process's own ledger
// counted (its trailer's `totals`, `layers` and `scopes`) when every record it applied is
// in the file as written. Sizes are the recorded ones (a sampled block counts unscaled,
// as the recording ledger counted it). Its tables and attribution are left empty.
//
// Thread safety: one call per thread; it reads on a second thread of its own.

#ifndef MEMTRACE_ANALYSIS_CAPTURE_MATCHER_H_
#define MEMTRACE_ANALYSIS_CAPTURE_MATCHER_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/capture_summary.h"

namespace memtrace {

// Reads the capture at `path` to its end and matches its releases (above). `progress`,
// if any, is called with the bytes read so far before each batch of records. Errors are
// the reading's, as Analyzer::Summarize() returns them.
absl::StatusOr<CaptureSummary> MatchCapture(
    const std::string& path,
    const std::function<void(uint64_t bytes_read)>& progress = nullptr);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_CAPTURE_MATCHER_H_
