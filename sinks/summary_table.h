// Copyright 2026 The memtrace Authors.
//
// summary_table.h: the human-readable per-scope summary of a Snapshot.
//
// One row per scope that allocated anything, sorted by path, then the totals, one row per
// layer, and the integrity block. Every summary prints its integrity beside the totals (a
// block with nothing to report as one line, FormatCleanIntegrityLine()), and a partial
// capture says so on its first line, so a reader never mistakes a partial capture for a
// complete one.
//
//   memtrace summary: capture complete; peaks within their bounds
//   scope                        live      blocks  high-water  peak bound   allocated  ...
//   server/request/parse       1.2 KiB         3     64.0 KiB  -0.2%/+0.1%   12.0 MiB  ...
//
// Thread safety: FormatSummaryTable is a pure function.

#ifndef MEMTRACE_SINKS_SUMMARY_TABLE_H_
#define MEMTRACE_SINKS_SUMMARY_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/snapshot.h"

namespace memtrace {

// What a summary shows. Nothing is dropped silently: rows beyond a limit are summed into
// one "(N more ...)" row.
struct SummaryOptions {
  size_t max_scopes = 200;      // rows of scopes; beyond it, the largest by high-water
  bool show_layers = true;
  CensusSummaryOptions census;  // census rows (runtime/census_status.h)
  // The whole integrity block even when it has nothing to report; otherwise such a block
  // is its one line (FormatCleanIntegrityLine()).
  bool verbose = false;
};

std::string FormatSummaryTable(const Snapshot& snapshot,
                               const SummaryOptions& options = SummaryOptions{});

// The same content as one JSON object: totals, scopes (with paths), layers, census and
// its status, and the integrity block with the complete/exact verdicts. A snapshot with
// sites (Snapshot::has_sites) adds them after the layers: "sites" (addresses as hex
// strings, the stack's frames when kept) and "sites_omitted".
std::string FormatSummaryJson(const Snapshot& snapshot);

// A capture's integrity in one line, for a block with nothing to report (complete,
// exact, CaptureIntegrity::Findings() empty), over `events` events:
//   complete, exact: 410,090 events, nothing lost[, peaks within their bounds]
// Exact peaks go without saying; bounded and unbounded ones are said (PeakVerdict()).
// `memtrace summary` and `verify` print the same words for a clean capture.
std::string FormatCleanIntegrityLine(uint64_t events, const CaptureIntegrity& integrity);

// The integrity block alone, as FormatSummaryTable() ends: the verdict line, then records,
// releases, matching and transport counters and memtrace's own memory. `fence` names the
// watermark's heavy fence ("membarrier" or "seq_cst"); `memtrace`'s analysis commands print
// the block of a capture's trailer with it. For a capture that recording filters thinned
// (analysis/capture_filters.h), `exact_for` says what "exact" holds for ("for blocks of at
// least 1000 bytes"), so that it never stands alone beside a filter, and `filter_lines`
// (each "  filters    ...\n") follow the verdict line.
//
//   integrity: complete, exact
//     records    recorded 410090, applied 410090, dropped 0, failed 0, ...
std::string FormatIntegrityBlock(const CaptureIntegrity& integrity, uint64_t memtrace_bytes,
                                 std::string_view fence, std::string_view exact_for = {},
                                 std::string_view filter_lines = {});

// The line on memtrace's own threads' CPU time (runtime/internal/thread_cpu_time.h) that follows
// the integrity block: the drainer's, its appliers' when `applier_ns` is not 0, and the
// capture writer's when `writer_ns` is given (a capture's trailer has it; the runtime's own
// summary has no writer).
//
//     memtrace's own CPU: drainer 62.5 ms, writer 34.9 ms (not counted: the hot path, ...);
//     per record: drainer 24.8 ns, writer 14.9 ns
// `records`: the records the threads handled (the integrity's applied), for the per-record
// figures; 0 leaves them out.
std::string FormatOwnCpuLine(uint64_t drainer_ns, std::optional<uint64_t> writer_ns,
                             uint64_t records = 0, uint64_t applier_ns = 0);

// A high-water mark's interval (usage_counters.h), for the summary's "peak bound" column:
// "exact"; how far below and above the value the real peak may lie, "-1.2%/+0.4%" (of
// the value); or "none" for a peak without a bound. "estimate" for a sampled capture's,
// `sampled`: its value is scaled from a sample, which no interval bounds.
std::string FormatPeakBound(const UsageCounters& u, bool sampled = false);

// The table's header and one row of it: name, live bytes and blocks, high-water and its
// bound, allocated bytes, blocks ("allocs") and calls ("calls": UsageCounters::
// allocation_calls, heaptrack's count), freed bytes and blocks. The analysis commands'
// summary prints its rows with these too, so both tables keep one layout.
std::string FormatUsageHeader();
std::string FormatUsageRow(const std::string& name, const UsageCounters& u,
                           bool sampled = false);

// "512 B", "1.5 KiB", "3.2 MiB", "1.0 GiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_SUMMARY_TABLE_H_
