// Copyright 2026 The memtrace Authors.
//
// `memtrace top`: call sites by bytes, count, live bytes or temporaries, in one capture or
// added up over a process family's.

#include "cli/analysis_commands.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/allocator_frames.h"
#include "analysis/analyzer.h"
#include "analysis/capture_filters.h"
#include "analysis/site_groups.h"
#include "analysis/symbolizer.h"
#include "cli/internal/analysis_common.h"
#include "cli/internal/site_namer.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

ABSL_FLAG(std::string, by, "bytes", "order by: bytes, count, live, temporaries or short-lived");
ABSL_FLAG(bool, stacks, false, "print each site's whole call stack, symbolized");

namespace memtrace {

using cli_internal::FiltersOf;
using cli_internal::Hex;
using cli_internal::JsonHead;
using cli_internal::LayerName;
using cli_internal::Load;
using cli_internal::OneCapture;
using cli_internal::RowLimit;
using cli_internal::ParseAllocators;
using cli_internal::PrintFamilyFiltersNote;
using cli_internal::PrintSampledNote;
using cli_internal::PrintSnapshotNote;
using cli_internal::PrintUnresolvedNote;
using cli_internal::ScopeName;
using cli_internal::SharedSymbolizers;
using cli_internal::SiteNamer;
using cli_internal::Verdict;

const CommandSpec kTopSpec = {
    "top", "memtrace top [flags] CAPTURE | memtrace top [flags] CAPTURE CAPTURE...",
    "Lists call sites, each with the scope and layer it allocated in, largest first, with\n"
    "the site symbolized from the capture's module lines (function (file:line)).\n"
    "--by=bytes: bytes allocated; count: allocations; live: bytes live at the end (leaks at\n"
    "exit); temporaries: blocks freed or reallocated by their thread's next allocator call, no\n"
    "other allocation or release between (heaptrack's temporaries, per thread); short-lived:\n"
    "blocks their thread freed within its next 8 events.\n"
    "A site is named after the code that called the allocator (malloc, operator new, and\n"
    "the wrappers of common libraries; --allocator adds the program's own). Call stacks\n"
    "that share that name, scope and layer (one function reached from several callers)\n"
    "are one row, marked [N stacks]; --stacks prints the largest five of them, each with\n"
    "its own counts (--json lists them all).\n"
    "With several captures (the processes of one program: memtrace top NAME.mtb NAME.*),\n"
    "rows with the same site name, scope and layer are added up over the processes, and\n"
    "each says in how many it appeared. The blocks a forked child inherited are counted in\n"
    "the process that allocated them, not again in the child.",
    {"json", "by", "limit", "stacks", "allocator"}};

namespace {

// `memtrace top A B ...`: the rows of every capture added up by site name, scope and
// layer (addresses differ between programs, and between runs of one under ASLR; names do
// not). The scope "(inherited at fork)" is left out: those blocks were allocated by the
// parent, whose capture counts them.
int FamilyTop(const std::vector<std::string>& paths, const std::string& by, size_t limit,
              const AllocatorFunctions& allocators) {
  struct Row {
    std::string name;
    std::string scope;
    std::string layer;
    UsageCounters usage;
    uint64_t temporaries = 0;
    uint64_t short_lived = 0;
    size_t processes = 0;
    size_t last_capture = SIZE_MAX;  // the capture that last added to it
    std::vector<std::string> stack;  // symbolized, from the first capture that had it
  };
  const bool stacks = absl::GetFlag(FLAGS_stacks);
  std::map<std::tuple<std::string, std::string, std::string>, Row> rows;
  std::vector<std::string> errors;
  std::map<std::string, size_t> verdicts;
  std::vector<std::pair<std::string, CaptureFilters>> filtered;
  bool sampled = false;
  SharedSymbolizers symbolizers;
  for (size_t c = 0; c < paths.size(); ++c) {
    absl::StatusOr<CaptureSummary> s = Load(paths[c]);
    if (!s.ok()) {
      errors.push_back(std::string(s.status().message()));
      ++verdicts["unreadable"];
      continue;
    }
    ++verdicts[VerdictWord(*s)];
    if (CaptureFilters f = FiltersOf(*s); f.any()) filtered.emplace_back(paths[c], std::move(f));
    sampled = sampled || s->sampled;
    SiteNamer names(*s, allocators, symbolizers.For(*s));
    for (const AllocationAttribution& a : s->attribution) {
      const std::string scope = ScopeName(*s, a.scope);
      if (s->fork.forked && scope == "(inherited at fork)") continue;
      Row& row = rows[{names.Name(a.site), scope, LayerName(*s, a.layer)}];
      if (row.processes == 0) {
        row.name = names.Name(a.site);
        row.scope = scope;
        row.layer = LayerName(*s, a.layer);
      }
      if (row.last_capture != c) ++row.processes, row.last_capture = c;
      row.usage.AddCounts(a.usage);  // high-water unused: `top` shows none
      row.temporaries += a.temporaries;
      row.short_lived += a.short_lived;
      if (stacks && row.stack.empty()) {
        for (uint64_t pc : names.Frames(a.site)) row.stack.push_back(names.Describe(pc));
      }
    }
  }
  std::vector<const Row*> order;
  for (const auto& [key, row] : rows) order.push_back(&row);
  auto key = [&](const Row* r) {
    if (by == "count") return r->usage.allocated_count;
    if (by == "live") return r->usage.live_bytes;
    if (by == "temporaries") return r->temporaries;
    if (by == "short-lived") return r->short_lived;
    return r->usage.allocated_bytes;
  };
  // Ties in the map's (name, scope, layer) order: stable.
  std::stable_sort(order.begin(), order.end(),
                   [&](const Row* a, const Row* b) { return key(a) > key(b); });
  const size_t shown = std::min(limit, order.size());
  std::vector<std::string> counts;
  for (const auto& [word, n] : verdicts) counts.push_back(absl::StrCat(n, " ", word));
  if (absl::GetFlag(FLAGS_json)) {
    std::string out;
    for (size_t i = 0; i < shown; ++i) {
      const Row& r = *order[i];
      std::vector<std::string> frames;
      for (const std::string& f : r.stack) frames.push_back(JsonQuote(f));
      absl::StrAppend(&out, i == 0 ? "" : ",", "{\"name\":", JsonQuote(r.name),
                      stacks ? absl::StrCat(",\"frames\":[", absl::StrJoin(frames, ","), "]")
                             : "",
                      ",\"scope\":", JsonQuote(r.scope), ",\"layer\":", JsonQuote(r.layer),
                      ",\"processes\":", r.processes, ",\"usage\":", JsonUsage(r.usage),
                      ",\"temporaries\":", r.temporaries, ",\"short_lived\":", r.short_lived,
                      "}");
    }
    std::vector<std::string> quoted;
    for (const std::string& p : paths) quoted.push_back(JsonQuote(p));
    std::vector<std::string> quoted_errors;
    for (const std::string& e : errors) quoted_errors.push_back(JsonQuote(e));
    printf("{\"command\":\"top\",\"captures\":[%s],\"sampled\":%s,\"by\":%s,"
           "\"rows\":[%s],\"more_rows\":%zu,\"errors\":[%s]}\n",
           absl::StrJoin(quoted, ",").c_str(), sampled ? "true" : "false",
           JsonQuote(by).c_str(), out.c_str(), order.size() - shown,
           absl::StrJoin(quoted_errors, ",").c_str());
    return errors.empty() ? 0 : 2;
  }
  printf("memtrace top of %zu captures by %s, added up over the processes: %s\n", paths.size(),
         by.c_str(), absl::StrJoin(counts, ", ").c_str());
  PrintFamilyFiltersNote(filtered);
  if (sampled) {
    printf("sampled estimate: some captures kept a sample; their bytes and counts are "
           "scaled\n");
  }
  printf("\n");
  const char* row = "%11s %10s %10s %11s %9s %11s %11s %9s  %-28s %-10s %s\n";
  printf(row, "allocated", "allocs", "calls", "live", "blocks", "temporaries", "short-lived",
         "processes", "scope", "layer", "site");
  for (size_t i = 0; i < shown; ++i) {
    const Row& r = *order[i];
    printf(row, FormatBytes(r.usage.allocated_bytes).c_str(),
           absl::StrCat(r.usage.allocated_count).c_str(),
           absl::StrCat(r.usage.allocation_calls).c_str(),
           FormatBytes(r.usage.live_bytes).c_str(), absl::StrCat(r.usage.live_count).c_str(),
           absl::StrCat(r.temporaries).c_str(), absl::StrCat(r.short_lived).c_str(),
           absl::StrCat(r.processes).c_str(), r.scope.c_str(), r.layer.c_str(), r.name.c_str());
    for (size_t f = 0; f < r.stack.size(); ++f) printf("    #%-2zu %s\n", f, r.stack[f].c_str());
  }
  if (order.size() > shown) printf("(%zu more rows; --limit=N shows more)\n", order.size() - shown);
  PrintUnresolvedNote(symbolizers.Unresolved());
  for (const std::string& e : errors) printf("memtrace top: %s\n", e.c_str());
  return errors.empty() ? 0 : 2;
}

}  // namespace

int TopCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kTopSpec, argc, argv, &args)) return *exit;
  // Before the capture: `top --by CAPTURE` took the capture for the ordering.
  const std::string by = absl::GetFlag(FLAGS_by);
  if (by != "bytes" && by != "count" && by != "live" && by != "temporaries" &&
      by != "short-lived") {
    return UsageError(kTopSpec, absl::StrCat("--by must be bytes, count, live, temporaries or "
                                             "short-lived, not '", by, "'"));
  }
  if (args.positional.size() <= 1 || args.dashdash) {
    if (auto exit = OneCapture(kTopSpec, args)) return *exit;
  }
  size_t limit = 0;
  if (auto exit = RowLimit(kTopSpec, &limit)) return *exit;
  AllocatorFunctions allocators;
  if (auto exit = ParseAllocators(kTopSpec, &allocators)) return *exit;
  if (args.positional.size() > 1) return FamilyTop(args.positional, by, limit, allocators);
  const std::string& path = args.positional[0];
  auto s = Load(path);
  if (!s.ok()) return InputError(kTopSpec, std::string(s.status().message()));
  auto key = [&](const UsageCounters& usage, uint64_t temporaries, uint64_t short_lived) {
    if (by == "count") return usage.allocated_count;
    if (by == "live") return usage.live_bytes;
    if (by == "temporaries") return temporaries;
    if (by == "short-lived") return short_lived;
    return usage.allocated_bytes;
  };
  SiteNamer names(*s, std::move(allocators));
  constexpr size_t kStacksPerRow = 5;  // --stacks: the largest of a row's stacks
  // Stacks that read the same (one function, reached from several callers) are one row
  // (analysis/site_groups.h), its stacks largest first.
  const std::vector<SiteGroup> groups = GroupSitesByName(
      s->attribution, [&](uint32_t site) { return names.Name(site); }, key);
  const bool stacks = absl::GetFlag(FLAGS_stacks);
  const size_t shown = std::min(limit, groups.size());
  if (absl::GetFlag(FLAGS_json)) {
    auto frames = [&](uint32_t site) {
      std::string out;
      for (uint64_t pc : names.Frames(site)) {
        absl::StrAppend(&out, out.empty() ? "" : ",", names.JsonFrame(pc));
      }
      return absl::StrCat("[", out, "]");
    };
    std::string out;
    for (size_t i = 0; i < shown; ++i) {
      const SiteGroup& g = groups[i];
      const AllocationAttribution& first = g.stacks.front();
      std::string members;
      std::string first_frames;  // --stacks: the largest stack's, kept for the row itself
      for (const AllocationAttribution& a : g.stacks) {
        std::string f;
        if (stacks) {
          f = absl::StrCat(",\"frames\":", frames(a.site));
          if (first_frames.empty()) first_frames = f;
        }
        absl::StrAppend(&members, members.empty() ? "" : ",", "{\"site\":", a.site,
                        ",\"addr\":\"", Hex(a.site_addr), "\"", f,
                        ",\"usage\":", JsonUsage(a.usage), ",\"temporaries\":", a.temporaries,
                        ",\"short_lived\":", a.short_lived, "}");
      }
      // "site", "addr" and "frames": the group's largest stack, as before groups.
      absl::StrAppend(&out, i == 0 ? "" : ",", "{\"site\":", first.site, ",\"addr\":\"",
                      Hex(first.site_addr), "\",\"name\":", JsonQuote(g.name), first_frames,
                      ",\"scope\":", JsonQuote(ScopeName(*s, g.scope)),
                      ",\"layer\":", JsonQuote(LayerName(*s, g.layer)),
                      ",\"usage\":", JsonUsage(g.usage, g.stacks.size() == 1),
                      ",\"temporaries\":", g.temporaries,
                      ",\"short_lived\":", g.short_lived, ",\"stacks\":[", members, "]}");
    }
    printf("{%s,\"by\":%s,\"rows\":[%s],\"more_rows\":%zu,\"unresolved\":%s}\n",
           JsonHead("top", path, *s).c_str(), JsonQuote(by).c_str(), out.c_str(),
           groups.size() - shown, UnresolvedJson(names.Unresolved()).c_str());
    return 0;
  }
  printf("memtrace top of %s by %s: capture %s\n", path.c_str(), by.c_str(), Verdict(*s).c_str());
  PrintSampledNote(*s);
  PrintSnapshotNote(*s);
  printf("\n");
  const char* row = "%11s %10s %10s %11s %9s %11s %11s  %-28s %-10s %s\n";
  printf(row, "allocated", "allocs", "calls", "live", "blocks", "temporaries", "short-lived",
         "scope", "layer", "site");
  auto print_frames = [&](uint32_t site) {
    const std::vector<uint64_t> frames = names.Frames(site);
    for (size_t f = 0; f < frames.size(); ++f) {
      // The functions inlined into this frame's, innermost first, as gdb lists them.
      for (const InlinedFrame& in : names.Inlined(frames[f])) {
        printf("    #%-2zu %s [inlined]\n", f, DescribeInlined(in).c_str());
      }
      printf("    #%-2zu %s\n", f, names.Describe(frames[f]).c_str());
    }
    if (s->StackMayBeCut(frames.size(), [&] { return names.Describe(frames.back()); })) {
      printf("    %s\n", s->CutStackFrame().c_str());
    }
  };
  for (size_t i = 0; i < shown; ++i) {
    const SiteGroup& g = groups[i];
    printf(row, FormatBytes(g.usage.allocated_bytes).c_str(),
           absl::StrCat(g.usage.allocated_count).c_str(),
           absl::StrCat(g.usage.allocation_calls).c_str(),
           FormatBytes(g.usage.live_bytes).c_str(), absl::StrCat(g.usage.live_count).c_str(),
           absl::StrCat(g.temporaries).c_str(), absl::StrCat(g.short_lived).c_str(),
           ScopeName(*s, g.scope).c_str(), LayerName(*s, g.layer).c_str(),
           (g.name + StacksNote(g.stacks.size())).c_str());
    if (!stacks) continue;
    if (g.stacks.size() == 1) {
      print_frames(g.stacks[0].site);
      continue;
    }
    const size_t listed = std::min(g.stacks.size(), kStacksPerRow);
    for (size_t k = 0; k < listed; ++k) {
      const AllocationAttribution& a = g.stacks[k];
      printf("  stack %zu of %zu: %s in %llu allocations, %s in %llu blocks live, "
             "%llu temporaries, %llu short-lived\n",
             k + 1, g.stacks.size(), FormatBytes(a.usage.allocated_bytes).c_str(),
             static_cast<unsigned long long>(a.usage.allocated_count),
             FormatBytes(a.usage.live_bytes).c_str(),
             static_cast<unsigned long long>(a.usage.live_count),
             static_cast<unsigned long long>(a.temporaries),
             static_cast<unsigned long long>(a.short_lived));
      print_frames(a.site);
    }
    if (listed < g.stacks.size()) {
      UsageCounters rest;
      for (size_t k = listed; k < g.stacks.size(); ++k) rest.AddCounts(g.stacks[k].usage);
      printf("  (%zu more stacks, %s in %llu allocations: --json lists them all, memtrace "
             "export --format=folded gives every stack's bytes)\n",
             g.stacks.size() - listed, FormatBytes(rest.allocated_bytes).c_str(),
             static_cast<unsigned long long>(rest.allocated_count));
    }
  }
  if (groups.size() > shown) {
    printf("(%zu more rows; --limit=N shows more)\n", groups.size() - shown);
  }
  PrintUnresolvedNote(names.Unresolved());
  return 0;
}

}  // namespace memtrace
