// Copyright 2026 The memtrace Authors.
//
// `memtrace summary`: one capture's totals per scope and layer with its integrity block
// (or its state at a snapshot point, --at-*), or one row per process image of a family.

#include "cli/analysis_commands.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/analyzer.h"
#include "analysis/capture_filters.h"
#include "analysis/family_live.h"
#include "analysis/process_tree.h"
#include "analysis/trailer.h"
#include "analysis/trailer_summary.h"
#include "cli/internal/analysis_common.h"
#include "cli/internal/summary_notes.h"
#include "cli/progress_bar.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

ABSL_FLAG(std::string, at_event, "", "snapshot: the state right after the first N events");
ABSL_FLAG(std::string, at_time, "",
          "snapshot: the state at a time since the capture started, with a unit (1.5s, "
          "250ms, 40us, 100ns) or a bare number of ns; or in unix ns");
ABSL_FLAG(std::string, at_scope_exit, "",
          "snapshot: the state right after a scope's first exit (PATH) or its N-th (PATH#N)");
ABSL_FLAG(bool, verbose, false,
          "the whole integrity block, also for a clean capture (which gets one line)");
ABSL_FLAG(bool, replay, false,
          "replay every event, also where the trailer holds the summary (a clean capture "
          "read at its end)");

namespace memtrace {

using cli_internal::Basename;
using cli_internal::CheckReached;
using cli_internal::CleanIntegrity;
using cli_internal::NoEventsProblem;
using cli_internal::JsonHead;
using cli_internal::LayerName;
using cli_internal::Load;
using cli_internal::OneCapture;
using cli_internal::PastTheEnd;
using cli_internal::PointDescription;
using cli_internal::PrintBeforeStartNote;
using cli_internal::PrintExecNote;
using cli_internal::PrintFamilyFiltersNote;
using cli_internal::PrintForkNote;
using cli_internal::PrintSampledNote;
using cli_internal::PrintSnapshotNote;
using cli_internal::RowLimit;
using cli_internal::PrintShadowNote;
using cli_internal::PrintSignalNote;
using cli_internal::PrintSiteOverflowNote;
using cli_internal::PrintSampledAtNote;
using cli_internal::PrintTimelineNote;
using cli_internal::PrintUntracedForksNote;
using cli_internal::ScopeName;
using cli_internal::Verdict;

const CommandSpec kSummarySpec = {
    "summary", "memtrace summary [flags] CAPTURE | memtrace summary [flags] CAPTURE CAPTURE...",
    "Replays CAPTURE and prints live bytes, blocks, high-water, allocated and freed per\n"
    "scope and per layer, then its integrity: for a clean capture (complete, exact,\n"
    "nothing lost, unfiltered) one line, the words `memtrace verify` passes it with;\n"
    "otherwise, or with --verbose, the integrity block from its trailer: what was lost, how\n"
    "releases were matched, the transport, memtrace's own memory and its threads' CPU\n"
    "time. With one of the --at-* flags, the state at that point of the capture (a\n"
    "snapshot); at a time, also the recorder's memory sample at that time (the trailer's\n"
    "timeline), which goes on where a size limit cut the events. A clean, unfiltered\n"
    "capture's summary at its end is read from its\n"
    "trailer (the recording process's own ledger) without replaying its events, which\n"
    "gives the same numbers; --replay replays them anyway.\n"
    "With several captures (the processes of one program traced with `memtrace run\n"
    "--children` or `--forks`: memtrace summary NAME.mtb NAME.*), one row per process\n"
    "image, as a tree of who forked, exec'd or started whom, with its totals, how it\n"
    "ended and its verdict; --limit rows (the largest by bytes allocated when there are\n"
    "more; 0: all).",
    {"json", "at_event", "at_time", "at_scope_exit", "limit", "verbose", "replay"}};

namespace {

void PrintTable(const CaptureSummary& s, const std::string& path) {
  printf("memtrace summary of %s: capture %s\n", path.c_str(), Verdict(s).c_str());
  PrintSampledNote(s);
  PrintSnapshotNote(s);
  printf("\n");
  printf("%s", FormatUsageHeader().c_str());
  auto line = [&](const std::string& name, const UsageCounters& u) {
    printf("%s", FormatUsageRow(name, u, s.sampled).c_str());
  };
  for (const auto& [id, usage] : s.scopes) line(ScopeName(s, id), usage);
  line("TOTAL", s.totals);
  if (!s.layers.empty()) printf("\n");
  for (const auto& [id, usage] : s.layers) line("layer " + LayerName(s, id), usage);
  // At a snapshot point inside the capture, the counts are those up to it.
  const bool inside = s.events_applied < s.events;
  const std::string events =
      inside ? absl::StrCat(s.events_applied, " of ", s.events, " events applied")
             : absl::StrCat(s.events, " events");
  printf("\n%s; %llu blocks live at %s; %llu releases with no allocation in the capture%s%s\n",
         events.c_str(), static_cast<unsigned long long>(s.live_blocks),
         inside ? "the snapshot point" : "the end",
         static_cast<unsigned long long>(s.unmatched_releases), inside ? " up to it" : "",
         s.missed_frees == 0
             ? ""
             : absl::StrCat("; ", s.missed_frees,
                            " blocks released when their address came back without their "
                            "release (missed frees)")
                   .c_str());
}

std::string JsonScopeUsages(const CaptureSummary& s, bool peaks_known) {
  std::string scopes;
  for (const auto& [id, usage] : s.scopes) {
    absl::StrAppend(&scopes, scopes.empty() ? "" : ",", "{\"id\":", id,
                    ",\"path\":", JsonQuote(s.scope_paths.count(id) ? s.scope_paths.at(id) : ""),
                    ",\"usage\":", JsonUsage(usage, peaks_known), "}");
  }
  return scopes;
}

std::optional<SnapshotPoint> SummaryPoint(int* exit) {
  std::vector<std::string> given;
  if (!absl::GetFlag(FLAGS_at_event).empty()) given.push_back("event=" + absl::GetFlag(FLAGS_at_event));
  if (!absl::GetFlag(FLAGS_at_time).empty()) given.push_back("time=" + absl::GetFlag(FLAGS_at_time));
  if (!absl::GetFlag(FLAGS_at_scope_exit).empty()) {
    given.push_back("scope-exit=" + absl::GetFlag(FLAGS_at_scope_exit));
  }
  if (given.size() > 1) {
    *exit = UsageError(kSummarySpec, "give at most one of --at-event, --at-time, --at-scope-exit");
    return std::nullopt;
  }
  if (given.empty()) return SnapshotPoint{};
  auto point = ParseSnapshotPoint(given[0]);
  if (!point.ok()) {
    *exit = UsageError(kSummarySpec, std::string(point.status().message()));
    return std::nullopt;
  }
  return *point;
}

// The trailer's integrity block, as the runtime's own summary prints it, and the sink's
// counts; a capture cut short has none, and says so. A clean capture that no filter
// thinned gets one line instead (CleanIntegrity()), unless --verbose asks for the block.
// What the census attached to the tracer reported at the end (runtime/census.h), beside
// the allocations the table shows: each entry, its value and its high-water.
void PrintCensus(const std::optional<TrailerBlocks>& blocks) {
  if (!blocks || blocks->census.empty()) return;
  auto bytes = [](int64_t b) {
    return b < 0 ? "-" + FormatBytes(static_cast<uint64_t>(-b))
                 : FormatBytes(static_cast<uint64_t>(b));
  };
  printf("\ncensus (reported by the program, beside what the allocators saw):\n");
  for (const TrailerBlocks::CensusValue& c : blocks->census) {
    printf("  %-38s %11s  high-water %s\n", c.name.c_str(), bytes(c.bytes).c_str(),
           bytes(c.high_water_bytes).c_str());
  }
}

// Under the integrity of a whole capture with no events: what that may mean.
void PrintNoEventsNote(const CaptureSummary& s) {
  if (const std::optional<std::string> none = NoEventsProblem(s)) {
    printf("note: %s\n", none->c_str());
  }
}

void PrintIntegrity(const CaptureSummary& s, const std::optional<TrailerBlocks>& blocks,
                    const CaptureFilters& filters) {
  printf("\n");
  if (!absl::GetFlag(FLAGS_verbose) && !filters.any()) {
    if (const std::optional<std::string> clean = CleanIntegrity(s)) {
      printf("integrity: %s\n", clean->c_str());
      PrintNoEventsNote(s);
      return;
    }
  }
  if (!blocks) {
    printf("%s", s.checksum_differs
                     ? "integrity: DAMAGED: the file's bytes differ from those its trailer's "
                       "checksum was computed over, and the damage makes it read as cut off "
                       "before its trailer (`memtrace verify` says more)\n"
                     : "integrity: unknown: the capture has no trailer (it was cut short; "
                       "`memtrace verify` says more)\n");
    return;
  }
  std::string filter_lines;
  for (const std::string& f : filters.Statements()) {
    absl::StrAppend(&filter_lines, "  filters    ", f, "\n");
  }
  if (s.checksum_differs) {
    // The trailer's counters are the recorder's, written before the bytes changed: said
    // as such, never as this file's verdict.
    printf("integrity: DAMAGED: the file's bytes differ from those its trailer's checksum "
           "was computed over (`memtrace verify` says more). As written, the trailer said:\n");
  }
  if (blocks->has_integrity) {
    std::string block = FormatIntegrityBlock(blocks->integrity, blocks->memtrace_bytes,
                                             blocks->fence, filters.ExactFor(), filter_lines);
    if (s.checksum_differs) block.replace(0, block.find(':') + 1, "  recorder  ");
    printf("%s", block.c_str());
  } else {
    printf("integrity: not in the trailer\n%s", filter_lines.c_str());
  }
  if (blocks->has_sink) {
    printf("  sink       events written %llu, lost %llu, write errors %llu, stack collisions "
           "%llu\n",
           static_cast<unsigned long long>(blocks->events_written),
           static_cast<unsigned long long>(blocks->events_lost),
           static_cast<unsigned long long>(blocks->write_errors),
           static_cast<unsigned long long>(blocks->stack_collisions));
    if (blocks->events_past_limit != 0) {
      printf("  size limit the capture reached its size limit (%s): %llu later events were "
             "not written.\n"
             "             The table above covers the run up to there; the totals at the "
             "end,\n"
             "             from the trailer: %s\n",
             FormatBytes(blocks->max_bytes).c_str(),
             static_cast<unsigned long long>(blocks->events_past_limit),
             blocks->has_totals
                 ? absl::StrCat("live ", FormatBytes(blocks->totals.live_bytes), " in ",
                                blocks->totals.live_count, " blocks, high-water ",
                                FormatBytes(blocks->totals.high_water_bytes), ", allocated ",
                                FormatBytes(blocks->totals.allocated_bytes), " in ",
                                blocks->totals.allocated_count, " allocations")
                       .c_str()
                 : "not recorded");
    }
  }
  if (blocks->has_memtrace_cpu) {
    printf("%s", FormatOwnCpuLine(blocks->drainer_cpu_ns, blocks->writer_cpu_ns,
                                  blocks->has_integrity ? blocks->integrity.events_applied : 0,
                                  blocks->applier_cpu_ns)
                     .c_str());
  }
  PrintNoEventsNote(s);
}

// The command line a row of the process table shows: the arguments joined by spaces,
// cut to `width` characters.
std::string CommandText(const ProcessOrigin& p, size_t width) {
  if (!p.known) return "(not recorded)";
  std::string text = absl::StrJoin(p.argv, " ");
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // a newline in a `bash -c` script
  }
  if (p.argv_truncated) text += " ...";
  if (text.size() > width) text = text.substr(0, width - 3) + "...";
  return text;
}

const char* RelationWord(ProcessRelation r) {
  switch (r) {
    case ProcessRelation::kRoot: return "root";
    case ProcessRelation::kForked: return "forked";
    case ProcessRelation::kExeced: return "exec";
    case ProcessRelation::kStarted: return "started";
  }
  return "root";
}


// What a process allocated itself: a forked child's capture records the blocks it
// inherited first, as allocations (the header's fork object counts them).
UsageCounters OwnAllocated(const CaptureSummary& s) {
  UsageCounters u = s.totals;
  if (s.fork.forked) {
    u.allocated_bytes -= std::min(u.allocated_bytes, s.fork.inherited_bytes);
    u.allocated_count -= std::min(u.allocated_count, s.fork.inherited_blocks);
    u.allocation_calls -= std::min(u.allocation_calls, s.fork.inherited_blocks);
  }
  return u;
}

// `memtrace summary A B ...`: one row per capture (process image), as a process tree
// (analysis/process_tree.h). Exit 2 when a capture cannot be read (its row says so, and
// the reason follows the table); the others are still shown.
int FamilySummary(const std::vector<std::string>& paths) {
  if (!absl::GetFlag(FLAGS_at_event).empty() || !absl::GetFlag(FLAGS_at_time).empty() ||
      !absl::GetFlag(FLAGS_at_scope_exit).empty()) {
    return UsageError(kSummarySpec, "the --at-* snapshot flags take one CAPTURE, not "
                                    "several; summarize the one you want at that point");
  }
  const int limit = absl::GetFlag(FLAGS_limit);  // checked by SummaryCommand()
  struct Loaded {
    std::string path;
    std::optional<CaptureSummary> s;
    std::string error;  // when s is empty
    std::optional<TrailerBlocks> blocks;
  };
  std::vector<Loaded> captures;
  std::vector<ProcessImage> images;
  std::vector<ProcessLiveSteps> live;  // of the captures read, for the family's high-water
  for (const std::string& path : paths) {
    Loaded l;
    l.path = path;
    ProcessLiveSteps steps;
    absl::StatusOr<CaptureSummary> s;
    {
      ProgressBar bar(path, "reading");
      s = SummarizeWithSteps(path, [&bar](uint64_t bytes) { bar.Update(bytes); }, &steps);
    }
    if (s.ok()) live.push_back(std::move(steps));
    ProcessImage image;
    if (s.ok()) {
      l.s = *std::move(s);
      if (l.s->has_trailer) {
        absl::StatusOr<TrailerBlocks> t = ParseTrailer(l.s->trailer);
        if (t.ok()) l.blocks = *std::move(t);
      }
      image.pid = l.s->pid;
      image.ppid = l.s->process.ppid;
      image.forked = l.s->fork.forked;
      image.fork_parent = l.s->fork.parent_pid;
      image.started_unix_ns = l.s->started_unix_ns;
      image.ended_by_exec = l.blocks && l.blocks->ended_by == "exec";
    } else {
      l.error = std::string(s.status().message());
    }
    captures.push_back(std::move(l));
    images.push_back(image);
  }
  std::vector<ProcessTreeRow> rows = ProcessTree(images);
  // Unreadable captures have no place in the tree: they go last.
  std::stable_partition(rows.begin(), rows.end(),
                        [&](const ProcessTreeRow& r) { return captures[r.image].s.has_value(); });
  UsageCounters sum;
  uint64_t largest_high_water = 0;
  size_t largest = 0;
  uint64_t events = 0;
  std::map<std::string, size_t> verdicts;  // by word, for the first line
  for (const Loaded& l : captures) {
    if (!l.s) {
      ++verdicts["unreadable"];
      continue;
    }
    ++verdicts[VerdictWord(*l.s)];
    const UsageCounters own = OwnAllocated(*l.s);
    sum.allocated_bytes += own.allocated_bytes;
    sum.allocated_count += own.allocated_count;
    if (l.s->totals.high_water_bytes >= largest_high_water) {
      largest_high_water = l.s->totals.high_water_bytes;
      largest = static_cast<size_t>(&l - captures.data());
    }
    events += l.s->events;
  }
  const bool any_unreadable = verdicts.count("unreadable") != 0;
  const FamilyHighWater together = HighestSum(live);
  int64_t first_start = 0;
  for (const Loaded& l : captures) {
    if (l.s && l.s->started_unix_ns != 0 &&
        (first_start == 0 || l.s->started_unix_ns < first_start)) {
      first_start = l.s->started_unix_ns;
    }
  }

  if (absl::GetFlag(FLAGS_json)) {
    std::string out;
    for (const ProcessTreeRow& r : rows) {
      const Loaded& l = captures[r.image];
      if (!l.s) {
        absl::StrAppend(&out, out.empty() ? "" : ",", "{\"capture\":", JsonQuote(l.path),
                        ",\"verdict\":\"unreadable\",\"error\":", JsonQuote(l.error), "}");
        continue;
      }
      std::vector<std::string> argv;
      for (const std::string& a : l.s->process.argv) argv.push_back(JsonQuote(a));
      absl::StrAppend(
          &out, out.empty() ? "" : ",", "{\"capture\":", JsonQuote(l.path), ",\"verdict\":\"",
          VerdictWord(*l.s), "\",\"filters\":",
          CaptureFilters::Of(*l.s, l.blocks ? &*l.blocks : nullptr).Json(), ",\"pid\":", l.s->pid, ",\"ppid\":",
          l.s->process.known ? absl::StrCat(l.s->process.ppid) : "null", ",\"how\":\"",
          RelationWord(r.relation), "\",\"parent\":",
          r.relation == ProcessRelation::kRoot ? "null" : JsonQuote(captures[r.parent].path),
          ",\"depth\":", r.depth, ",\"argv\":",
          l.s->process.known ? absl::StrCat("[", absl::StrJoin(argv, ","), "]") : "null",
          ",\"ended_by\":",
          l.blocks && !l.blocks->ended_by.empty() ? JsonQuote(l.blocks->ended_by) : "null",
          ",\"sampled\":", l.s->sampled ? "true" : "false", ",\"events\":", l.s->events,
          ",\"totals\":", JsonUsage(l.s->totals), ",\"own_allocated_bytes\":",
          OwnAllocated(*l.s).allocated_bytes, ",\"own_allocated_count\":",
          OwnAllocated(*l.s).allocated_count, "}");
    }
    printf("{\"command\":\"summary\",\"captures\":[%s],\"processes\":%zu,"
           "\"allocated_bytes\":%llu,\"allocated_count\":%llu,"
           "\"together_high_water\":{\"bytes\":%llu,\"bytes_high\":%llu,\"unix_ns\":%lld,"
           "\"processes\":%zu},"
           "\"largest_high_water_bytes\":%llu,\"events\":%llu}\n",
           out.c_str(), captures.size(),
           static_cast<unsigned long long>(sum.allocated_bytes),
           static_cast<unsigned long long>(sum.allocated_count),
           static_cast<unsigned long long>(together.bytes),
           static_cast<unsigned long long>(together.bytes_high),
           static_cast<long long>(together.t),
           together.processes,
           static_cast<unsigned long long>(largest_high_water),
           static_cast<unsigned long long>(events));
    return any_unreadable ? 2 : 0;
  }

  std::vector<std::string> counts;
  for (const auto& [word, n] : verdicts) counts.push_back(absl::StrCat(n, " ", word));
  printf("memtrace summary of %zu captures, one per process image: %s\n", captures.size(),
         absl::StrJoin(counts, ", ").c_str());
  std::vector<std::pair<std::string, CaptureFilters>> filtered;
  for (const Loaded& l : captures) {
    if (!l.s) continue;
    CaptureFilters f = CaptureFilters::Of(*l.s, l.blocks ? &*l.blocks : nullptr);
    if (f.any()) filtered.emplace_back(l.path, std::move(f));
  }
  PrintFamilyFiltersNote(filtered);
  // Past --limit, the largest rows by bytes allocated, flat: a tree cut anywhere would
  // hide where the rest hang.
  const bool cut = limit != 0 && rows.size() > static_cast<size_t>(limit);
  if (cut) {
    auto bytes = [&](const ProcessTreeRow& r) {
      return captures[r.image].s ? OwnAllocated(*captures[r.image].s).allocated_bytes : 0;
    };
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const ProcessTreeRow& a, const ProcessTreeRow& b) {
                       return bytes(a) > bytes(b);
                     });
    rows.resize(static_cast<size_t>(limit));
  }
  int depth_max = 0;
  size_t capture_width = strlen("capture");
  for (const ProcessTreeRow& r : rows) {
    depth_max = std::max(depth_max, cut ? 0 : std::min(r.depth, 8));
    capture_width = std::max(capture_width, Basename(captures[r.image].path).size());
  }
  const int pid_width = 8 + 2 * depth_max;
  printf("\n%-*s %-7s %-8s %11s %11s %11s %10s %-9s %-10s %-*s %s\n", pid_width, "pid", "how",
         "parent", "allocated", "high-water", "live at end", "events", "ended by", "verdict",
         static_cast<int>(capture_width), "capture", "command");
  for (const ProcessTreeRow& r : rows) {
    const Loaded& l = captures[r.image];
    const std::string file = Basename(l.path);
    if (!l.s) {
      printf("%-*s %-7s %-8s %11s %11s %11s %10s %-9s %-10s %-*s\n", pid_width, "?", "", "", "",
             "", "", "", "", "unreadable", static_cast<int>(capture_width), file.c_str());
      continue;
    }
    const std::string pid =
        std::string(cut ? 0 : 2 * std::min(r.depth, 8), ' ') + absl::StrCat(l.s->pid);
    const std::string ended =
        l.blocks && !l.blocks->ended_by.empty() ? l.blocks->ended_by : "-";
    // An exec'd image's parent is the image before it, with the same pid.
    const std::string parent =
        r.relation == ProcessRelation::kForked || r.relation == ProcessRelation::kStarted
            ? absl::StrCat(captures[r.parent].s->pid)
            : "-";
    printf("%-*s %-7s %-8s %11s %11s %11s %10llu %-9s %-10s %-*s %s\n", pid_width, pid.c_str(),
           RelationWord(r.relation), parent.c_str(),
           FormatBytes(OwnAllocated(*l.s).allocated_bytes).c_str(),
           FormatBytes(l.s->totals.high_water_bytes).c_str(),
           FormatBytes(l.s->totals.live_bytes).c_str(),
           static_cast<unsigned long long>(l.s->events), ended.c_str(),
           VerdictWord(*l.s).c_str(), static_cast<int>(capture_width), file.c_str(),
           CommandText(l.s->process, 60).c_str());
  }
  printf("%-*s %-7s %-8s %11s %11s %11s %10llu\n", pid_width, "TOTAL", "", "",
         FormatBytes(sum.allocated_bytes).c_str(), FormatBytes(largest_high_water).c_str(), "",
         static_cast<unsigned long long>(events));
  if (cut) {
    printf("(the %d largest of %zu by bytes allocated; --limit=0 lists all, as a tree)\n",
           limit, captures.size());
  }
  // Exact where one process changed at a time; otherwise the interval that holds it.
  const std::string how_much =
      together.exact()
          ? FormatBytes(together.bytes)
          : absl::StrCat("between ", FormatBytes(together.bytes), " and ",
                         FormatBytes(together.bytes_high));
  printf("\nall processes together: %s live at their highest moment, %.1f ms after the "
         "first\n  capture began, %zu process%s holding memory then (each process's events are "
         "known to\n  their drainer epoch; a forked child counts the blocks it inherited, as its "
         "parent does)\n",
         how_much.c_str(),
         together.t > first_start && first_start != 0 ? (together.t - first_start) / 1e6 : 0.0,
         together.processes, together.processes == 1 ? "" : "es");
  if (!together.exact()) {
    printf("  an interval: processes whose epochs overlap may have changed in any order\n");
  }
  printf("\nhow: root: no parent among these captures; forked: a traced fork of its parent\n"
         "  (--forks); exec: the image that replaced the one above it at its level, same pid\n"
         "  (--children); started: a program its parent ran (fork, then exec).\n"
         "allocated: what the process allocated itself (a forked child's capture begins\n"
         "  with the blocks it inherited, recorded as allocations: left out here).\n"
         "TOTAL: bytes allocated and events summed over the processes; high-water is the\n"
         "  largest of one process (%s, pid %llu): processes peak at different times.\n",
         Basename(captures[largest].path).c_str(),
         static_cast<unsigned long long>(captures[largest].s ? captures[largest].s->pid : 0));
  bool sampled = false;
  for (const Loaded& l : captures) sampled = sampled || (l.s && l.s->sampled);
  if (sampled) {
    printf("sampled estimate: some captures kept a sample; their bytes and counts are "
           "scaled\n");
  }
  for (const Loaded& l : captures) {
    if (!l.s) printf("memtrace summary: %s\n", l.error.c_str());
  }
  return any_unreadable ? 2 : 0;
}

}  // namespace

int SummaryCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kSummarySpec, argc, argv, &args)) return *exit;
  size_t rows = 0;  // 0 is every row here too: FamilySummary() reads the flag
  if (auto exit = RowLimit(kSummarySpec, &rows)) return *exit;
  if (args.positional.size() > 1 && !args.dashdash) return FamilySummary(args.positional);
  if (auto exit = OneCapture(kSummarySpec, args)) return *exit;
  int exit = 0;
  const std::optional<SnapshotPoint> point = SummaryPoint(&exit);
  if (!point) return exit;
  const std::string& path = args.positional[0];
  bool from_trailer = false;
  auto s = [&]() -> absl::StatusOr<CaptureSummary> {
    if (point->kind == SnapshotPoint::Kind::kEnd && !absl::GetFlag(FLAGS_replay)) {
      if (std::optional<CaptureSummary> read = SummaryFromTrailer(path)) {
        from_trailer = true;
        return *std::move(read);
      }
    }
    return Load(path, *point);
  }();
  if (!s.ok()) return InputError(kSummarySpec, std::string(s.status().message()));
  if (auto e = CheckReached(kSummarySpec, *s, *point)) return *e;
  const bool at_point = point->kind != SnapshotPoint::Kind::kEnd;
  // The trailer's blocks (analysis/trailer.h): what only the recording process knew.
  std::optional<TrailerBlocks> blocks;
  if (s->has_trailer) {
    absl::StatusOr<TrailerBlocks> t = ParseTrailer(s->trailer);
    if (!t.ok()) return InputError(kSummarySpec, absl::StrCat(path, ": ", t.status().message()));
    blocks = *std::move(t);
  }
  if (absl::GetFlag(FLAGS_json)) {
    auto raw = [](const std::string& json) { return json.empty() ? std::string("null") : json; };
    // A capture that lacks operations has no peak worth a number (TrailerBlocks::
    // PeaksKnown()): its high-water fields are null.
    const bool peaks_known = !blocks || blocks->PeaksKnown();
    std::string census;
    if (blocks) {
      for (const TrailerBlocks::CensusValue& c : blocks->census) {
        absl::StrAppend(&census, census.empty() ? "" : ",", "{\"name\":", JsonQuote(c.name),
                        ",\"bytes\":", c.bytes, ",\"high_water_bytes\":", c.high_water_bytes,
                        "}");
      }
    }
    const std::string trailer_fields =
        blocks ? absl::StrCat(",\"census\":[", census, "]",
                              ",\"integrity\":", raw(blocks->integrity_json),
                              ",\"sink\":", raw(blocks->sink_json),
                              ",\"memtrace_bytes\":", blocks->memtrace_bytes,
                              ",\"memtrace_memory\":", raw(blocks->memtrace_memory_json),
                              ",\"memtrace_cpu_ns\":", raw(blocks->memtrace_cpu_json),
                              ",\"timeline\":", raw(blocks->timeline_json),
                              ",\"forks\":", blocks->forks, ",\"before_start\":{\"freed_blocks\":",
                              blocks->prestart_freed, ",\"freed_bytes\":",
                              blocks->prestart_freed_bytes, ",\"untracked_blocks\":",
                              blocks->prestart_untracked, "}")
               : std::string(",\"census\":null,\"integrity\":null,\"sink\":null,"
                             "\"memtrace_bytes\":null,"
                             "\"memtrace_memory\":null,\"memtrace_cpu_ns\":null,"
                             "\"timeline\":null,\"forks\":null,"
                             "\"before_start\":null");
    std::string layers;
    for (const auto& [id, usage] : s->layers) {
      absl::StrAppend(&layers, layers.empty() ? "" : ",", "{\"id\":", id,
                      ",\"name\":", JsonQuote(LayerName(*s, id)), ",\"usage\":",
                      JsonUsage(usage, peaks_known),
                      "}");
    }
    const ForkOrigin& f = s->fork;
    const std::string fork =
        f.forked ? absl::StrCat("{\"parent_pid\":", f.parent_pid, ",\"inherited_blocks\":",
                                f.inherited_blocks, ",\"inherited_bytes\":", f.inherited_bytes,
                                f.stacks_known
                                    ? absl::StrCat(",\"inherited_without_stack\":",
                                                   f.inherited_without_stack)
                                    : "",
                                ",\"unpublished_records\":", f.unpublished_records, "}")
                 : "null";
    const SnapshotOrigin& o = s->snapshot_of;
    const std::string snapshot_of =
        o.taken ? absl::StrCat("{\"taken_unix_ns\":", o.taken_unix_ns, ",\"blocks\":", o.blocks,
                               ",\"bytes\":", o.bytes, "}")
                : "null";
    // A salvaged capture's origin (analysis/capture_conversion.h), or null.
    const std::string salvaged =
        blocks && blocks->salvaged
            ? absl::StrCat("{\"from\":", JsonQuote(blocks->salvaged_from),
                           ",\"cut\":", JsonQuote(blocks->salvaged_cut), "}")
            : "null";
    printf("{%s,\"has_trailer\":%s,\"complete\":%s,\"salvaged\":%s,\"source\":%s,"
           "\"snapshot_of\":%s,\"fork\":%s,"
           "\"unmatched_releases\":%llu,\"missed_frees\":%llu,"
           "\"live_blocks\":%llu,\"snapshot\":%s,\"totals\":%s,\"scopes\":[%s],\"layers\":[%s]%s}\n",
           JsonHead("summary", path, *s).c_str(), s->has_trailer ? "true" : "false",
           s->has_trailer && s->trailer_complete ? "true" : "false", salvaged.c_str(),
           JsonQuote(s->source).c_str(), snapshot_of.c_str(), fork.c_str(),
           static_cast<unsigned long long>(s->unmatched_releases),
           static_cast<unsigned long long>(s->missed_frees),
           static_cast<unsigned long long>(s->live_blocks),
           at_point ? absl::StrCat("{\"point\":", JsonQuote(point->text), ",\"events_applied\":",
                                   s->events_applied, ",\"t\":", s->snapshot_t, "}")
                          .c_str()
                    : "null",
           JsonUsage(s->totals, peaks_known).c_str(), JsonScopeUsages(*s, peaks_known).c_str(),
           layers.c_str(),
           trailer_fields.c_str());
    return 0;
  }
  if (at_point) {
    // A point past the capture's last event is its end: said, not passed over.
    const std::string past = PastTheEnd(*point, *s);
    printf("(state at %s: after event %llu of %llu%s%s)\n", PointDescription(*point).c_str(),
           static_cast<unsigned long long>(s->events_applied),
           static_cast<unsigned long long>(s->events), past.empty() ? "" : ": ", past.c_str());
  }
  PrintTable(*s, path);
  if (!at_point) PrintCensus(blocks);
  PrintIntegrity(*s, blocks, CaptureFilters::Of(*s, blocks ? &*blocks : nullptr));
  if (s->checksum_differs) {
    printf("%s\n", from_trailer ? "The counters above are the trailer's, the recorder's own; "
                                  "`memtrace summary --replay` counts the records as they "
                                  "are now."
                                : "The counters above are the records' as they are now, not "
                                  "the recorder's.");
  }
  PrintExecNote(blocks, path, s->trace_children);
  PrintSignalNote(blocks);
  PrintShadowNote(*s);
  PrintForkNote(*s);
  PrintUntracedForksNote(blocks, s->trace_children, s->trace_forks);
  PrintBeforeStartNote(blocks);
  PrintSiteOverflowNote(blocks, *s);
  if (!at_point) PrintTimelineNote(blocks);
  if (point->kind == SnapshotPoint::Kind::kTime) {
    // The point as the replay took it: since the capture started, or unix ns.
    const int64_t at = point->time_ns < s->started_unix_ns ? s->started_unix_ns + point->time_ns
                                                            : point->time_ns;
    PrintSampledAtNote(blocks, *s, at);
  }
  return 0;
}

}  // namespace memtrace
