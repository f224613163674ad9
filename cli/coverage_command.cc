// Copyright 2026 The memtrace Authors.
//
// `memtrace coverage`: how much of the memory named scopes explain.

#include "cli/analysis_commands.h"

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "cli/internal/analysis_common.h"
#include "sinks/summary_table.h"

namespace memtrace {

using cli_internal::JsonHead;
using cli_internal::Load;
using cli_internal::OneCapture;
using cli_internal::PrintSampledNote;
using cli_internal::PrintSnapshotNote;
using cli_internal::Share;
using cli_internal::Verdict;

const CommandSpec kCoverageSpec = {
    "coverage", "memtrace coverage [flags] CAPTURE",
    "How much of the memory is explained: bytes allocated (and live at the end) in named\n"
    "scopes versus unscoped, the census total beside the live bytes the allocator observed,\n"
    "and the blocks freed at once: temporaries (heaptrack's, per thread: freed or\n"
    "reallocated by their thread's next allocator call) and short-lived (freed within 8 of\n"
    "their thread's events).",
    {"json"}};

int CoverageCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kCoverageSpec, argc, argv, &args)) return *exit;
  if (auto exit = OneCapture(kCoverageSpec, args)) return *exit;
  const std::string& path = args.positional[0];
  const auto s = Load(path);
  if (!s.ok()) return InputError(kCoverageSpec, std::string(s.status().message()));
  const Coverage& c = s->coverage;
  // A snapshot capture holds only the blocks live at its moment: none of them was freed,
  // so how many blocks were freed soon after their allocation is not known.
  const bool snapshot = s->snapshot_of.taken;
  auto count = [snapshot](uint64_t n) {
    return snapshot ? std::string("null") : absl::StrCat(n);
  };
  if (absl::GetFlag(FLAGS_json)) {
    printf("{%s,\"allocated_scoped\":%llu,\"allocated_unscoped\":%llu,\"live_scoped\":%llu,"
           "\"live_unscoped\":%llu,\"census_bytes\":%lld,\"census_entries\":%llu,"
           "\"live_bytes\":%llu,\"temporaries\":%s,\"temporary_bytes\":%s,"
           "\"short_lived\":%s,\"short_lived_bytes\":%s}\n",
           JsonHead("coverage", path, *s).c_str(),
           static_cast<unsigned long long>(c.allocated_scoped),
           static_cast<unsigned long long>(c.allocated_unscoped),
           static_cast<unsigned long long>(c.live_scoped),
           static_cast<unsigned long long>(c.live_unscoped), static_cast<long long>(c.census_bytes),
           static_cast<unsigned long long>(c.census_entries),
           static_cast<unsigned long long>(s->totals.live_bytes),
           count(s->temporaries).c_str(), count(s->temporary_bytes).c_str(),
           count(s->short_lived).c_str(), count(s->short_lived_bytes).c_str());
    return 0;
  }
  printf("memtrace coverage of %s: capture %s\n", path.c_str(), Verdict(*s).c_str());
  PrintSampledNote(*s);
  PrintSnapshotNote(*s);
  printf("\n");
  const uint64_t allocated = c.allocated_scoped + c.allocated_unscoped;
  const uint64_t live = c.live_scoped + c.live_unscoped;
  printf("allocated in named scopes  %11s  %5.1f%%\n", FormatBytes(c.allocated_scoped).c_str(),
         Share(c.allocated_scoped, allocated));
  printf("allocated unscoped         %11s  %5.1f%%\n", FormatBytes(c.allocated_unscoped).c_str(),
         Share(c.allocated_unscoped, allocated));
  printf("live at the end, scoped    %11s  %5.1f%%\n", FormatBytes(c.live_scoped).c_str(),
         Share(c.live_scoped, live));
  printf("live at the end, unscoped  %11s  %5.1f%%\n", FormatBytes(c.live_unscoped).c_str(),
         Share(c.live_unscoped, live));
  printf("census (%llu entries)       %11s  beside %s the allocator saw live\n",
         static_cast<unsigned long long>(c.census_entries),
         (c.census_bytes < 0 ? "-" + FormatBytes(static_cast<uint64_t>(-c.census_bytes))
                             : FormatBytes(static_cast<uint64_t>(c.census_bytes)))
             .c_str(),
         FormatBytes(s->totals.live_bytes).c_str());
  if (snapshot) {
    printf("temporaries, short-lived   not known: a snapshot holds only the blocks live at its "
           "moment, none of them freed\n");
    return 0;
  }
  printf("temporaries                %11llu  allocations (%s) freed or reallocated by their "
         "thread's next allocator call\n",
         static_cast<unsigned long long>(s->temporaries), FormatBytes(s->temporary_bytes).c_str());
  printf("short-lived                %11llu  blocks (%s) freed within %llu of their thread's "
         "events\n",
         static_cast<unsigned long long>(s->short_lived), FormatBytes(s->short_lived_bytes).c_str(),
         static_cast<unsigned long long>(Analyzer::kShortLivedEvents));
  return 0;
}

}  // namespace memtrace
