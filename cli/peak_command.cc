// Copyright 2026 The memtrace Authors.
//
// `memtrace peak`: what held memory at the global high-water moment, and at each scope's.

#include "cli/analysis_commands.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/allocator_frames.h"
#include "analysis/analyzer.h"
#include "analysis/site_groups.h"
#include "analysis/symbolizer.h"
#include "analysis/trailer.h"
#include "cli/internal/analysis_common.h"
#include "cli/internal/site_namer.h"
#include "cli/progress_bar.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

ABSL_FLAG(std::string, scope, "",
          "only this scope's own high-water moment (a path like frame/render)");

namespace memtrace {

using cli_internal::JsonHead;
using cli_internal::Load;
using cli_internal::OneCapture;
using cli_internal::RowLimit;
using cli_internal::ParseAllocators;
using cli_internal::PrintSampledNote;
using cli_internal::PrintUnresolvedNote;
using cli_internal::ScopeName;
using cli_internal::Share;
using cli_internal::UtcTime;
using cli_internal::SiteNamer;
using cli_internal::Verdict;

const CommandSpec kPeakSpec = {
    "peak", "memtrace peak [flags] CAPTURE",
    "Finds the moment total live memory was highest and lists what held it, by scope and\n"
    "by call site; then, for each scope (largest first, --limit of them) or for --scope, its\n"
    "own high-water moment and what of it was live then, by site. Sites are named as in\n"
    "`memtrace top`, and stacks that share a name are one row, marked [N stacks]. Reads\n"
    "the capture three times.",
    {"json", "limit", "scope", "allocator"}};

int PeakCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kPeakSpec, argc, argv, &args)) return *exit;
  if (auto exit = OneCapture(kPeakSpec, args)) return *exit;
  size_t limit = 0;
  if (auto exit = RowLimit(kPeakSpec, &limit)) return *exit;
  AllocatorFunctions allocators;
  if (auto exit = ParseAllocators(kPeakSpec, &allocators)) return *exit;
  const std::string& path = args.positional[0];
  // One reading gives the summary and every moment's composition.
  absl::StatusOr<Analyzer::SummaryAndPeaks> read;
  {
    ProgressBar bar(path, "reading");
    read = Analyzer::SummarizeWithPeaks(path, [&bar](uint64_t bytes) { bar.Update(bytes); });
  }
  if (!read.ok()) return InputError(kPeakSpec, std::string(read.status().message()));
  const CaptureSummary* const s = &read->summary;
  if (s->snapshot_of.taken) {
    // Its events are one moment's live blocks: the high-water moment, before it, is not
    // among them.
    return InputError(
        kPeakSpec,
        absl::StrCat(path, " is a snapshot of pid ", s->pid, " at ",
                     UtcTime(s->snapshot_of.taken_unix_ns),
                     ": it holds the blocks live then, and the process's high-water mark (",
                     FormatBytes(s->totals.high_water_bytes),
                     ") came before, with what held it. `memtrace top --by=live ", path,
                     "` shows what was live at the snapshot; peak needs the process's own "
                     "capture (memtrace run -o FILE)"));
  }
  std::vector<uint32_t> only;
  std::string scope = absl::GetFlag(FLAGS_scope);
  while (scope.size() > 1 && scope.back() == '/') scope.pop_back();  // "work/" is "work"
  if (!scope.empty()) {
    for (const auto& [id, p] : s->scope_paths) {
      if (p == scope) only.push_back(id);
    }
    std::vector<std::string> known;  // the scopes with a high-water moment of their own
    for (const auto& [id, usage] : s->scopes) known.push_back(ScopeName(*s, id));
    if (only.empty()) {
      return InputError(kPeakSpec,
                        absl::StrCat("no scope '", scope, "' in ", path, " (its scopes that "
                                     "allocated: ", absl::StrJoin(known, ", "), ")"));
    }
    if (std::none_of(only.begin(), only.end(), [&](uint32_t id) { return s->scopes.count(id); })) {
      // A scope's counters are its own blocks', not its inner scopes': one that only
      // enclosed others has no moment to show.
      std::vector<std::string> inner;
      for (const std::string& k : known) {
        if (k.rfind(scope + "/", 0) == 0) inner.push_back(k);
      }
      return InputError(
          kPeakSpec,
          absl::StrCat("scope '", scope, "' in ", path, " allocated nothing itself, so it has "
                       "no high-water moment (a scope counts its own blocks, not those of the "
                       "scopes inside it)",
                       inner.empty() ? ""
                                     : absl::StrCat("; the scopes inside it that allocated: ",
                                                    absl::StrJoin(inner, ", "))));
    }
  }
  Analyzer::Peaks* const peaks = &read->peaks;
  if (!only.empty()) {
    std::erase_if(peaks->scopes, [&](const ScopePeak& p) {
      return std::find(only.begin(), only.end(), p.scope) == only.end();
    });
  }
  const PeakComposition* const peak = &peaks->global;
  const std::vector<ScopePeak>* const scope_peaks = &peaks->scopes;
  // The peaks' intervals (the Analyzer gives the replayed counters the trailer's). The
  // moment shown is the replayed peak's: the capture's order is the one the recorder
  // applied, so its high-water is that moment's live bytes.
  const UsageCounters& totals = s->totals;
  const std::map<uint32_t, UsageCounters>& scope_usage = s->scopes;
  // A capture that lacks operations the program made has no known peak (TrailerBlocks::
  // PeaksKnown()): the moment shown is the replay's, and said to be no more.
  bool peaks_known = true;
  if (s->has_trailer) {
    const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s->trailer);
    peaks_known = !t.ok() || t->PeaksKnown();
  }
  auto bound_json = [peaks_known](const UsageCounters& u) {
    if (!peaks_known) return std::string(",\"high_water_low_bytes\":null,\"high_water_high_bytes\":null");
    return absl::StrCat(",\"high_water_low_bytes\":", u.high_water_low_bytes,
                        ",\"high_water_high_bytes\":",
                        u.high_water_bounded() ? absl::StrCat(u.high_water_high_bytes)
                                               : std::string("null"));
  };
  auto bound_text = [peaks_known, sampled = s->sampled](const UsageCounters& u) {
    if (sampled) {
      return std::string("an estimate: the capture kept a sample, and its high-water is "
                         "scaled from it");
    }
    if (!peaks_known) {
      return std::string("unknown: the capture lacks operations the program made, so this is "
                         "the peak of the records it has (`memtrace summary` says what was lost)");
    }
    if (!u.high_water_bounded()) return std::string("no bound (the capture has none)");
    if (u.high_water_exact()) return std::string("exact");
    return absl::StrCat("the true peak lies in [", FormatBytes(u.high_water_low_bytes), ", ",
                        FormatBytes(u.high_water_high_bytes), "]");
  };
  auto scope_counters = [&](uint32_t id) {
    const auto it = scope_usage.find(id);
    return it == scope_usage.end() ? UsageCounters{} : it->second;
  };
  const size_t scopes_shown = std::min(limit, scope_peaks->size());
  const size_t kSitesPerScope = 5;
  SiteNamer names(*s, std::move(allocators));
  const auto name = [&](uint32_t site) { return names.Name(site); };
  const std::vector<NamedSiteBytes> peak_sites = GroupSiteBytesByName(peak->by_site, name);
  if (absl::GetFlag(FLAGS_json)) {
    auto scopes = [&](const std::vector<std::pair<uint32_t, uint64_t>>& v) {
      std::string out;
      for (const auto& [id, bytes] : v) {
        absl::StrAppend(&out, out.empty() ? "" : ",", "{\"scope\":",
                        JsonQuote(ScopeName(*s, id)), ",\"live_bytes\":", bytes, "}");
      }
      return out;
    };
    // "site": the group's largest stack; "sites": all of them.
    auto sites = [&](const std::vector<NamedSiteBytes>& v, size_t cap) {
      std::string out;
      for (size_t i = 0; i < v.size() && i < cap; ++i) {
        absl::StrAppend(&out, i == 0 ? "" : ",", "{\"site\":", v[i].sites.front(),
                        ",\"sites\":[", absl::StrJoin(v[i].sites, ","),
                        "],\"name\":", JsonQuote(v[i].name), ",\"live_bytes\":", v[i].bytes,
                        "}");
      }
      return out;
    };
    std::string per_scope;
    for (size_t i = 0; i < scopes_shown; ++i) {
      const ScopePeak& p = (*scope_peaks)[i];
      const std::vector<NamedSiteBytes> scope_sites = GroupSiteBytesByName(p.composition.by_site, name);
      absl::StrAppend(&per_scope, i == 0 ? "" : ",", "{\"scope\":", JsonQuote(ScopeName(*s, p.scope)),
                      ",\"event_index\":", p.event_index, ",\"t\":", p.t,
                      ",\"live_bytes\":", p.composition.live_bytes,
                      bound_json(scope_counters(p.scope)),
                      ",\"total_live_bytes\":", p.total_live_bytes, ",\"by_site\":[",
                      sites(scope_sites, kSitesPerScope), "],\"more_sites\":",
                      scope_sites.size() - std::min(kSitesPerScope, scope_sites.size()), "}");
    }
    printf("{%s,\"event_index\":%llu,\"t\":%lld,\"live_bytes\":%llu%s,\"by_scope\":[%s],"
           "\"by_site\":[%s],\"more_sites\":%zu,\"scope_peaks\":[%s],\"more_scopes\":%zu,"
           "\"unresolved\":%s}\n",
           JsonHead("peak", path, *s).c_str(), static_cast<unsigned long long>(peak->event_index),
           static_cast<long long>(peak->t), static_cast<unsigned long long>(peak->live_bytes),
           bound_json(totals).c_str(),
           scopes(peak->by_scope).c_str(), sites(peak_sites, limit).c_str(),
           peak_sites.size() - std::min(limit, peak_sites.size()), per_scope.c_str(),
           scope_peaks->size() - scopes_shown, UnresolvedJson(names.Unresolved()).c_str());
    return 0;
  }
  printf("memtrace peak of %s: capture %s\n", path.c_str(), Verdict(*s).c_str());
  PrintSampledNote(*s);
  printf("global high-water: %s live after event %llu of %llu; %s\n\n",
         FormatBytes(peak->live_bytes).c_str(), static_cast<unsigned long long>(peak->event_index),
         static_cast<unsigned long long>(s->events), bound_text(totals).c_str());
  printf("%-40s %11s %7s\n", "by scope", "live", "share");
  for (const auto& [id, bytes] : peak->by_scope) {
    printf("%-40s %11s %6.1f%%\n", ScopeName(*s, id).c_str(), FormatBytes(bytes).c_str(),
           Share(bytes, peak->live_bytes));
  }
  printf("\n%11s %7s  %s\n", "live", "share", "by call site");
  for (size_t i = 0; i < peak_sites.size() && i < limit; ++i) {
    const NamedSiteBytes& g = peak_sites[i];
    printf("%11s %6.1f%%  %s%s\n", FormatBytes(g.bytes).c_str(), Share(g.bytes, peak->live_bytes),
           g.name.c_str(), StacksNote(g.sites.size()).c_str());
  }
  if (peak_sites.size() > limit) {
    printf("(%zu more sites; --limit=N shows more)\n", peak_sites.size() - limit);
  }
  printf("\neach scope at its own high-water moment (scope's live bytes, by site)\n");
  for (size_t i = 0; i < scopes_shown; ++i) {
    const ScopePeak& p = (*scope_peaks)[i];
    printf("\n%s: %s live after event %llu (all scopes: %s); %s\n",
           ScopeName(*s, p.scope).c_str(), FormatBytes(p.composition.live_bytes).c_str(),
           static_cast<unsigned long long>(p.event_index), FormatBytes(p.total_live_bytes).c_str(),
           bound_text(scope_counters(p.scope)).c_str());
    const std::vector<NamedSiteBytes> sites = GroupSiteBytesByName(p.composition.by_site, name);
    for (size_t k = 0; k < sites.size() && k < kSitesPerScope; ++k) {
      printf("  %11s %6.1f%%  %s%s\n", FormatBytes(sites[k].bytes).c_str(),
             Share(sites[k].bytes, p.composition.live_bytes), sites[k].name.c_str(),
             StacksNote(sites[k].sites.size()).c_str());
    }
    if (sites.size() > kSitesPerScope) {
      printf("  (%zu more sites)\n", sites.size() - kSitesPerScope);
    }
  }
  if (scope_peaks->size() > scopes_shown) {
    printf("\n(%zu more scopes; --limit=N or --scope=PATH shows them)\n",
           scope_peaks->size() - scopes_shown);
  }
  PrintUnresolvedNote(names.Unresolved());
  return 0;
}

}  // namespace memtrace
