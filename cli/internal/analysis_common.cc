// Copyright 2026 The memtrace Authors.

#include "cli/internal/analysis_common.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/trailer.h"
#include "cli/progress_bar.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

ABSL_FLAG(int32_t, limit, 20, "rows to print");

namespace memtrace::cli_internal {
namespace {

// What was lost, or that nothing was (Verdict() adds the filters).
std::string VerdictAlone(const CaptureSummary& s) {
  if (s.being_written) {
    return "INCOMPLETE (still being written: the process writing it is running, and its "
           "trailer comes when that process exits)";
  }
  if (!s.has_trailer && !s.cut.empty()) {
    return absl::StrCat("TRUNCATED (cut off while it was written: ", s.cut,
                        "; everything before it is read)");
  }
  if (!s.has_trailer) {
    return s.source == "preload"
               ? "TRUNCATED (no trailer: the process ended without its exit handlers, killed "
                 "or by its own exit_group as Go programs end; `memtrace verify` says more)"
               : "TRUNCATED (no trailer: the program or the sink stopped early)";
  }
  if (!s.trailer_complete) {
    const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
    if (t.ok() && t->LostOnlyPastTheSizeLimit()) {
      return absl::StrCat("PARTIAL (its size limit, ", FormatBytes(t->max_bytes),
                          ", was reached: the events stop there; the totals at the end are "
                          "below the integrity block)");
    }
    return "PARTIAL (the trailer reports lost records)";
  }
  return "complete";
}

}  // namespace


// The recording filters of `s` (analysis/capture_filters.h), with the counts its trailer
// has (none when it has no trailer, or one that cannot be read).
CaptureFilters FiltersOf(const CaptureSummary& s) {
  if (!s.has_trailer) return CaptureFilters::Of(s, nullptr);
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
  return CaptureFilters::Of(s, t.ok() ? &*t : nullptr);
}

// The verdict of `s`, and after it every recording filter in force with what it left out.
std::string Verdict(const CaptureSummary& s) {
  return VerdictAlone(s) + FiltersOf(s).VerdictSuffix();
}

std::string VerdictWord(const CaptureSummary& s) {
  if (!s.has_trailer) return s.being_written ? "running" : "truncated";
  return s.trailer_complete ? "complete" : "partial";
}

// Under a family's first line (its verdicts counted): each capture that recording filters
// thinned, and what they left out.
void PrintFamilyFiltersNote(const std::vector<std::pair<std::string, CaptureFilters>>& filtered) {
  for (const auto& [path, filters] : filtered) {
    printf("filtered: %s: %s\n", path.c_str(), absl::StrJoin(filters.Statements(), "; ").c_str());
  }
}

// The line under every text header of a sampled capture.
void PrintSampledNote(const CaptureSummary& s) {
  if (!s.sampled) return;
  printf("sampled estimate: the interposer kept a sample (one per %llu bytes on average); "
         "counts and bytes are scaled by each sample's weight\n",
         static_cast<unsigned long long>(s.sample_interval_bytes));
}

// The JSON fields every analysis output starts with.
std::string JsonHead(const std::string& command, const std::string& path,
                     const CaptureSummary& s) {
  return absl::StrCat("\"command\":", JsonQuote(command), ",\"capture\":", JsonQuote(path),
                      ",\"verdict\":\"", VerdictWord(s), "\",\"filters\":", FiltersOf(s).Json(),
                      ",\"sampled\":", s.sampled ? "true" : "false", ",\"events\":", s.events);
}

std::string ScopeName(const CaptureSummary& s, uint32_t id) {
  auto it = s.scope_paths.find(id);
  return it != s.scope_paths.end() ? it->second : absl::StrCat("scope ", id);
}

std::string LayerName(const CaptureSummary& s, uint32_t id) {
  auto it = s.layer_names.find(id);
  return it != s.layer_names.end() ? it->second : absl::StrCat(id);
}

std::string Hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// Reads `path` up to `point`, with a progress bar when stderr is a terminal.
absl::StatusOr<CaptureSummary> Load(const std::string& path, const SnapshotPoint& point) {
  ProgressBar bar(path, "reading");
  AnalysisSummaryOptions options;
  options.point = point;
  options.progress = [&bar](uint64_t bytes) { bar.Update(bytes); };
  return Analyzer::Summarize(path, options);
}

absl::StatusOr<CaptureSummary> Load(const std::string& path) { return Load(path, SnapshotPoint{}); }

// Exactly one CAPTURE argument, or a usage error.
std::optional<int> OneCapture(const CommandSpec& spec, const ParsedArgs& args) {
  if (args.positional.empty()) return UsageError(spec, "which capture? give a CAPTURE file");
  if (args.positional.size() > 1 || args.dashdash) {
    return UsageError(spec, "give exactly one CAPTURE file");
  }
  return std::nullopt;
}

std::string PointDescription(const SnapshotPoint& p) {
  switch (p.kind) {
    case SnapshotPoint::Kind::kEnd: return "the end";
    case SnapshotPoint::Kind::kEvent: return absl::StrCat("event ", p.event);
    case SnapshotPoint::Kind::kTime: return absl::StrCat("time ", p.time_ns, " ns");
    case SnapshotPoint::Kind::kScopeExit: return absl::StrCat("exit ", p.nth, " of ", p.scope);
  }
  return p.text;
}

// Fails when a scope-exit point was never reached.
std::optional<int> CheckReached(const CommandSpec& spec, const CaptureSummary& s,
                                const SnapshotPoint& p) {
  if (s.snapshot_reached) return std::nullopt;
  return InputError(spec, absl::StrCat("the capture never reaches ", PointDescription(p),
                                       " (the scope exits fewer times, or never: check the "
                                       "path with memtrace retention)"));
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace memtrace::cli_internal
