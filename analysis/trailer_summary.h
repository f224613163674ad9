// Copyright 2026 The memtrace Authors.
//
// trailer_summary.h: a capture's summary at its end from its first and last records
// alone.
//
// The trailer holds the recording process's own ledger at the end: the totals and every
// layer's and scope's counters, with their peak intervals, and the integrity counters.
// Where those are the whole story, a summary need not replay millions of events: it reads
// the header (the process, the settings) and the trailer, a few KiB at each end of the
// file. They are the whole story when the capture is clean (the integrity block shows
// nothing lost or unmatched, the sink lost and wrote past no limit), nothing filtered or
// sampled its records (a replay then estimates, the ledger does not), and the trailer
// counts the capture's event records (`event_lines`, written since the sink counted
// them). Then the replay's summary at the end equals the trailer's, field for field
// (tests/trailer_summary_test.cc checks both ways on the same captures); anywhere else
// SummaryFromTrailer() says no and the caller replays.
//
// Only an uncompressed capture is read from its ends (capture_file_ends.h).

#ifndef MEMTRACE_ANALYSIS_TRAILER_SUMMARY_H_
#define MEMTRACE_ANALYSIS_TRAILER_SUMMARY_H_

#include <optional>
#include <string>

#include "analysis/capture_summary.h"

namespace memtrace {

// The summary of `path` at its end, from its header and trailer, or nullopt when it needs
// a replay (see above; also when the file cannot be read that way at all, which the replay
// then reports).
std::optional<CaptureSummary> SummaryFromTrailer(const std::string& path);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_TRAILER_SUMMARY_H_
