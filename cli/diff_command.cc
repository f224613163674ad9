// Copyright 2026 The memtrace Authors.
//
// `memtrace diff`: per-scope changes between two captures, or two points of one.

#include "cli/analysis_commands.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/capture_filters.h"
#include "analysis/difference.h"
#include "cli/internal/analysis_common.h"
#include "cli/internal/site_namer.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

ABSL_FLAG(std::string, from, "end",
          "diff: the first snapshot point: end, event=N, time=T, scope-exit=PATH[#N]");
ABSL_FLAG(std::string, to, "end", "diff: the second snapshot point (same forms as --from)");
ABSL_FLAG(bool, sites, false,
          "diff: compare call sites (named as `top` names them) instead of scopes");

namespace memtrace {

using cli_internal::Basename;
using cli_internal::CheckReached;
using cli_internal::FiltersOf;
using cli_internal::Load;
using cli_internal::ParseAllocators;
using cli_internal::PastTheEnd;
using cli_internal::PointDescription;
using cli_internal::SiteNamer;
using cli_internal::PrintSampledNote;
using cli_internal::PrintSnapshotNote;
using cli_internal::Verdict;

const CommandSpec kDiffSpec = {
    "diff", "memtrace diff [flags] BEFORE AFTER | memtrace diff --from=P --to=P CAPTURE",
    "Compares two snapshots scope by scope (matched by path): live bytes, high-water and\n"
    "bytes allocated, largest change in live bytes first. With two captures, --from applies\n"
    "to BEFORE and --to to AFTER (both default to the end); with one capture, --from and\n"
    "--to pick two points of it. Points: end, event=N, time=T (since the start, or unix\n"
    "ns; T with a unit, 1.5s, 250ms, 40us, 100ns, or a bare number of ns), scope-exit=PATH\n"
    "or scope-exit=PATH#N.\n"
    "--sites compares call sites instead, matched by name as `top` names them (the caller of\n"
    "the allocator functions, --allocator adding the program's own), so two runs of one\n"
    "build compare whatever addresses they ran at (a rebuild names sites after its own\n"
    "files and lines, and needs its old binary kept to name the old capture's): live bytes\n"
    "and allocations, largest growth in live bytes first. A snapshot capture holds only\n"
    "the blocks live at its moment: its sites compare by live bytes alone.",
    {"json", "from", "to", "sites", "allocator"}};

namespace {

std::string Signed(int64_t v) {
  return v < 0 ? absl::StrCat("-", FormatBytes(static_cast<uint64_t>(-v)))
               : absl::StrCat("+", FormatBytes(static_cast<uint64_t>(v)));
}

// Two captures of different programs (by the interposer's headers): a diff of them is
// rarely what was meant, as when one capture of a process family is another program's.
void PrintDifferentProgramsNote(const CaptureSummary& before, const CaptureSummary& after) {
  if (!before.process.known || !after.process.known || before.process.argv.empty() ||
      after.process.argv.empty()) {
    return;
  }
  const std::string a = Basename(before.process.argv[0]);
  const std::string b = Basename(after.process.argv[0]);
  if (a == b) return;
  printf("note: these are captures of two programs, '%s' before and '%s' after; the rows\n"
         "  compare their scopes by name. Was another capture meant (`memtrace summary` of\n"
         "  each names its command)?\n",
         a.c_str(), b.c_str());
}

std::string SignedCount(int64_t v) { return v < 0 ? absl::StrCat(v) : absl::StrCat("+", v); }

}  // namespace

int DiffCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kDiffSpec, argc, argv, &args)) return *exit;
  if (args.positional.empty() || args.positional.size() > 2 || args.dashdash) {
    return UsageError(kDiffSpec, "give two captures (BEFORE AFTER), or one capture with "
                                 "--from and --to");
  }
  const std::string before_path = args.positional[0];
  const std::string after_path = args.positional.size() == 2 ? args.positional[1] : before_path;
  if (args.positional.size() == 1 && absl::GetFlag(FLAGS_from) == absl::GetFlag(FLAGS_to)) {
    return UsageError(kDiffSpec, "with one capture, --from and --to must name two different "
                                 "points (e.g. --from=scope-exit=frame#1 --to=end)");
  }
  auto from = ParseSnapshotPoint(absl::GetFlag(FLAGS_from));
  if (!from.ok()) return UsageError(kDiffSpec, absl::StrCat("--from: ", from.status().message()));
  auto to = ParseSnapshotPoint(absl::GetFlag(FLAGS_to));
  if (!to.ok()) return UsageError(kDiffSpec, absl::StrCat("--to: ", to.status().message()));
  const auto before = Load(before_path, *from);
  if (!before.ok()) return InputError(kDiffSpec, std::string(before.status().message()));
  if (auto e = CheckReached(kDiffSpec, *before, *from)) return *e;
  const auto after = Load(after_path, *to);
  if (!after.ok()) return InputError(kDiffSpec, std::string(after.status().message()));
  if (auto e = CheckReached(kDiffSpec, *after, *to)) return *e;
  const bool sites = absl::GetFlag(FLAGS_sites);
  AllocatorFunctions allocators;
  if (auto exit = ParseAllocators(kDiffSpec, &allocators)) return *exit;
  std::vector<Difference> rows;
  if (sites) {
    SiteNamer before_names(*before, allocators), after_names(*after, allocators);
    rows = CompareSites(
        *before, [&](uint32_t site) { return before_names.Name(site); }, *after,
        [&](uint32_t site) { return after_names.Name(site); });
  } else {
    rows = Compare(*before, *after);
  }
  // A snapshot capture holds only the blocks live at its moment: its call sites' allocations
  // before then are not in it (its scopes' and layers' are, in its trailer).
  const bool live_only = sites && (before->snapshot_of.taken || after->snapshot_of.taken);
  // A point past the capture's last event is its end: said, not passed over.
  auto label = [](const std::string& path, const SnapshotPoint& p, const CaptureSummary& s) {
    if (p.kind == SnapshotPoint::Kind::kEnd) return path;
    const std::string past = PastTheEnd(p, s);
    return absl::StrCat(path, " at ", PointDescription(p), past.empty() ? "" : " (", past,
                        past.empty() ? "" : ")");
  };
  if (absl::GetFlag(FLAGS_json)) {
    std::string out;
    for (const Difference& d : rows) {
      absl::StrAppend(&out, out.empty() ? "" : ",", sites ? "{\"site\":" : "{\"path\":",
                      JsonQuote(d.path), ",\"before\":", JsonUsage(d.before, d.before_peak_known),
                      ",\"after\":", JsonUsage(d.after, d.after_peak_known), ",\"live_delta\":", d.live_delta());
      if (!sites) absl::StrAppend(&out, ",\"high_water_delta\":", d.high_water_delta());
      if (live_only) {
        absl::StrAppend(&out, ",\"allocated_delta\":null}");
      } else {
        absl::StrAppend(&out, ",\"allocated_delta\":", d.allocated_delta(), "}");
      }
    }
    printf("{\"command\":\"diff\",\"by\":\"%s\",\"before\":%s,\"before_verdict\":\"%s\","
           "\"before_filters\":%s,\"after\":%s,\"after_verdict\":\"%s\",\"after_filters\":%s,"
           "\"sampled\":%s,\"allocations_known\":%s,\"rows\":[%s]}\n",
           sites ? "site" : "scope", JsonQuote(label(before_path, *from, *before)).c_str(),
           VerdictWord(*before).c_str(),
           FiltersOf(*before).Json().c_str(), JsonQuote(label(after_path, *to, *after)).c_str(),
           VerdictWord(*after).c_str(), FiltersOf(*after).Json().c_str(),
           before->sampled || after->sampled ? "true" : "false", live_only ? "false" : "true",
           out.c_str());
    return 0;
  }
  printf("memtrace diff: %s (%s) -> %s (%s)\n", label(before_path, *from, *before).c_str(),
         Verdict(*before).c_str(), label(after_path, *to, *after).c_str(), Verdict(*after).c_str());
  PrintDifferentProgramsNote(*before, *after);
  if (args.positional.size() == 1 && after->events_applied < before->events_applied) {
    printf("note: --to (after event %llu) comes before --from (after event %llu): the "
           "changes run backwards in time; swap the two to read them forwards\n",
           static_cast<unsigned long long>(after->events_applied),
           static_cast<unsigned long long>(before->events_applied));
  }
  PrintSampledNote(before->sampled ? *before : *after);
  PrintSnapshotNote(*before);
  PrintSnapshotNote(*after);
  printf("\n");
  if (live_only) {
    printf("a snapshot holds only the blocks live at its moment: call sites compare by live "
           "bytes alone\n\n");
    const char* row = "%12s %12s %12s  %s\n";
    printf(row, "live before", "live after", "live change", "site");
    for (const Difference& d : rows) {
      printf(row, FormatBytes(d.before.live_bytes).c_str(), FormatBytes(d.after.live_bytes).c_str(),
             Signed(d.live_delta()).c_str(), d.path.c_str());
    }
    return 0;
  }
  if (sites) {
    const char* row = "%12s %12s %12s %12s %12s  %s\n";
    printf(row, "live before", "live after", "live change", "allocs +/-", "allocated +/-",
           "site");
    for (const Difference& d : rows) {
      printf(row, FormatBytes(d.before.live_bytes).c_str(), FormatBytes(d.after.live_bytes).c_str(),
             Signed(d.live_delta()).c_str(),
             SignedCount(static_cast<int64_t>(d.after.allocated_count) -
                         static_cast<int64_t>(d.before.allocated_count))
                 .c_str(),
             Signed(d.allocated_delta()).c_str(), d.path.c_str());
    }
    return 0;
  }
  const char* row = "%-40s %12s %12s %12s %14s %12s\n";
  printf(row, "scope", "live before", "live after", "live change", "high-water +/-",
         "allocated +/-");
  for (const Difference& d : rows) {
    printf(row, d.path.c_str(), FormatBytes(d.before.live_bytes).c_str(),
           FormatBytes(d.after.live_bytes).c_str(), Signed(d.live_delta()).c_str(),
           Signed(d.high_water_delta()).c_str(), Signed(d.allocated_delta()).c_str());
  }
  return 0;
}

}  // namespace memtrace
