// Copyright 2026 The memtrace Authors.
//
// analysis_common.h: what the analysis subcommands (cli/analysis_commands.h) share.
//
//   - Reading: Load() replays a capture (to its end, or to a snapshot point) with a
//     progress bar on stderr when it is a terminal; OneCapture() is the usage check of the
//     subcommands that take exactly one CAPTURE.
//   - The verdict every first line and every JSON object states: Verdict() in text
//     ("complete", "TRUNCATED (...)", "PARTIAL (...)", then the recording filters in force,
//     analysis/capture_filters.h), VerdictWord() (analysis/capture_summary.h) and
//     JsonHead() in JSON, PrintSampledNote() under the header of a sampled capture,
//     PrintFamilyFiltersNote() under a family's.
//   - Names and numbers: scope and layer names, snapshot points in words, hex addresses,
//     shares in percent, file names without their directory.
//   - --limit, the row count that summary, top and peak read.
//
// Private to cli/: only the subcommands' own files include it. Each prints exactly what
// the one file that held every subcommand printed, so the golden outputs stand.
//
// Thread safety: called from main() only (Load() draws on stderr).
//
// Example (a subcommand's handler):
//
//   if (auto exit = cli_internal::OneCapture(kRetentionSpec, args)) return *exit;
//   const auto s = cli_internal::Load(args.positional[0]);
//   if (!s.ok()) return InputError(kRetentionSpec, std::string(s.status().message()));
//   printf("memtrace retention of %s: capture %s\n", path.c_str(),
//          cli_internal::Verdict(*s).c_str());
//   cli_internal::PrintSampledNote(*s);

#ifndef MEMTRACE_CLI_INTERNAL_ANALYSIS_COMMON_H_
#define MEMTRACE_CLI_INTERNAL_ANALYSIS_COMMON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "analysis/analyzer.h"
#include "analysis/capture_filters.h"
#include "cli/command_line.h"

// Rows to print (summary of several captures, top, peak).
ABSL_DECLARE_FLAG(int32_t, limit);

namespace memtrace::cli_internal {

// The recording filters of `s` (analysis/capture_filters.h), with the counts its trailer
// has (none when it has no trailer, or one that cannot be read).
CaptureFilters FiltersOf(const CaptureSummary& s);

// The verdict of `s`, and after it every recording filter in force with what it left out.
std::string Verdict(const CaptureSummary& s);

// Why `s` fails `memtrace verify`, one sentence each: an allocator ahead of the
// interposer, no memory events, still being written, truncated, partial. Empty: none of
// these (the integrity block may still report findings: IntegrityFindings()).
std::vector<std::string> CaptureProblems(const CaptureSummary& s);

// The problem of a whole capture that holds no memory events (one of CaptureProblems()),
// or nullopt.
std::optional<std::string> NoEventsProblem(const CaptureSummary& s);

// What the trailer's integrity block reports beyond "complete, exact, nothing lost"
// (CaptureIntegrity::Findings()), the sink's losses, and releases the replay could not
// pair. A trailer without integrity counters (an older capture's) has none of the first.
std::vector<std::string> IntegrityFindings(const CaptureSummary& s);

// The verdict of a clean capture in one line, which `memtrace summary` prints in place of
// the integrity block and `memtrace verify` prints as its pass:
//   complete, exact: 410,090 events, nothing lost[, peaks within their bounds]
// (or ", peaks without bounds (...)" for a capture written before memtrace bounded them;
// an older trailer with no integrity counters says so, and counts the capture's events).
// A capture is clean when CaptureProblems() and IntegrityFindings() are both empty, but
// for NoEventsProblem(), whose "0 events" the line says; nullopt otherwise. Recording filters are asked for, not findings: callers say them.
std::optional<std::string> CleanIntegrity(const CaptureSummary& s);

// Under a family's first line (its verdicts counted): each capture that recording filters
// thinned, and what they left out.
void PrintFamilyFiltersNote(const std::vector<std::pair<std::string, CaptureFilters>>& filtered);

// The line under every text header of a sampled capture.
void PrintSampledNote(const CaptureSummary& s);

// The line under every text header of a snapshot (`memtrace snapshot`): whose, when, and
// that its events are the blocks live then, not every allocation the process made.
void PrintSnapshotNote(const CaptureSummary& s);
// "YYYY-MM-DD hh:mm:ss UTC": a capture's wall-clock time, to the second.
std::string UtcTime(int64_t unix_ns);

// The JSON fields every analysis output starts with.
std::string JsonHead(const std::string& command, const std::string& path,
                     const CaptureSummary& s);

// A scope's path, or "scope ID" when the capture does not name it.
std::string ScopeName(const CaptureSummary& s, uint32_t id);

// A layer's name, or its id when the capture does not name it.
std::string LayerName(const CaptureSummary& s, uint32_t id);

// "0x" and the hex digits of `v`.
std::string Hex(uint64_t v);

// `part` as a percentage of `whole` (0 when `whole` is 0).
double Share(uint64_t part, uint64_t whole);

// Reads `path` up to `point`, with a progress bar when stderr is a terminal.
absl::StatusOr<CaptureSummary> Load(const std::string& path, const SnapshotPoint& point);

// Reads `path` to its end.
absl::StatusOr<CaptureSummary> Load(const std::string& path);

// Exactly one CAPTURE argument, or a usage error.
std::optional<int> OneCapture(const CommandSpec& spec, const ParsedArgs& args);

// --limit as a row count: the rows to print (0: every row, as the largest size_t), or a
// usage error of `spec` for a negative one.
std::optional<int> RowLimit(const CommandSpec& spec, size_t* rows);

// A snapshot point in words: "the end", "event N", "time N ns", "exit N of PATH".
std::string PointDescription(const SnapshotPoint& p);

// Why the state at `p` is the capture's end, when `p` lies past its last event ("the
// capture ends before that event, so this is its end"), or "".
std::string PastTheEnd(const SnapshotPoint& p, const CaptureSummary& s);

// Fails when a scope-exit point was never reached.
std::optional<int> CheckReached(const CommandSpec& spec, const CaptureSummary& s,
                                const SnapshotPoint& p);

// The last component of `path`.
std::string Basename(const std::string& path);

}  // namespace memtrace::cli_internal

#endif  // MEMTRACE_CLI_INTERNAL_ANALYSIS_COMMON_H_
