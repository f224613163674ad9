// Copyright 2026 The memtrace Authors.
//
// The Analyzer's answers about moments: the composition of live memory now, at the
// capture's high-water moment, and at each scope's own (analyzer.h).

#include <algorithm>
#include <functional>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"

namespace memtrace {
namespace {

// A composition's bytes by scope and by site, largest first (ties: the smaller id).
void SetLargestFirst(const absl::flat_hash_map<uint32_t, uint64_t>& scopes,
                     const absl::flat_hash_map<uint32_t, uint64_t>& sites,
                     PeakComposition* out) {
  out->by_scope.assign(scopes.begin(), scopes.end());
  out->by_site.assign(sites.begin(), sites.end());
  auto larger = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  std::sort(out->by_scope.begin(), out->by_scope.end(), larger);
  std::sort(out->by_site.begin(), out->by_site.end(), larger);
}

}  // namespace

PeakComposition Analyzer::Composition() const {
  return CompositionOf([](const AllocationRecord&) { return true; });
}

PeakComposition Analyzer::Composition(uint32_t only_scope) const {
  return CompositionOf(
      [only_scope](const AllocationRecord& b) { return b.scope == only_scope; });
}

PeakComposition Analyzer::CompositionOf(
    const std::function<bool(const AllocationRecord&)>& keep) const {
  PeakComposition out;
  out.event_index = events_seen_;
  out.t = last_t_;
  absl::flat_hash_map<uint32_t, uint64_t> scopes, sites;
  ledger_->ForEachLive([&](const AllocationRecord& b) {
    if (!keep(b)) return;
    scopes[b.scope] += b.size;
    sites[static_cast<uint32_t>(b.site)] += b.size;
    out.live_bytes += b.size;
  });
  SetLargestFirst(scopes, sites, &out);
  return out;
}

absl::StatusOr<PeakComposition> Analyzer::Peak(const std::string& path) {
  auto read = SummarizeWithPeaks(path);
  if (!read.ok()) return read.status();
  return std::move(read->peaks.global);
}

absl::StatusOr<std::vector<ScopePeak>> Analyzer::ScopePeaks(const std::string& path,
                                                           const std::vector<uint32_t>& scopes) {
  auto read = SummarizeWithPeaks(path);
  if (!read.ok()) return read.status();
  std::vector<ScopePeak> out = std::move(read->peaks.scopes);
  if (!scopes.empty()) {
    std::erase_if(out, [&](const ScopePeak& p) {
      return std::find(scopes.begin(), scopes.end(), p.scope) == scopes.end();
    });
  }
  return out;
}

absl::StatusOr<Analyzer::SummaryAndPeaks> Analyzer::SummarizeWithPeaks(
    const std::string& path, const Progress& progress) {
  Analyzer analyzer;
  analyzer.moments_ = std::make_unique<MomentLogs>();
  CaptureReadStats stats;
  if (absl::Status s = analyzer.ApplyFile(path, &stats, progress); !s.ok()) return s;
  // Before Finish(): it settles the last epoch (a change after every moment, which the
  // live set and the logs would both take in) and gives the summary away.
  SummaryAndPeaks out;
  out.peaks = analyzer.MomentPeaks();
  out.summary = analyzer.FinishFile(path, stats);
  return out;
}

Analyzer::Peaks Analyzer::MomentPeaks() const {
  // The live set now, by (scope, site): bytes and blocks.
  struct Live {
    int64_t bytes = 0;
    int64_t blocks = 0;
  };
  absl::flat_hash_map<uint64_t, Live> now;
  ledger_->ForEachLive([&](const AllocationRecord& b) {
    Live& l = now[(uint64_t{b.scope} << 32) | static_cast<uint32_t>(b.site)];
    l.bytes += static_cast<int64_t>(b.size);
    ++l.blocks;
  });
  // What was live at a moment: now, less what changed since (the log's current entries).
  // A (scope, site) held something then when it held a block then, whatever its bytes.
  auto composition = [&](const MomentLog& log, bool one_scope, uint32_t only_scope) {
    absl::flat_hash_map<uint64_t, Live> then;
    for (const auto& [key, l] : now) {
      if (!one_scope || key >> 32 == only_scope) then[key] = l;
    }
    for (const auto& [key, c] : log.changes) {
      if (c.generation != log.generation) continue;
      const uint64_t full = one_scope ? (uint64_t{only_scope} << 32) | key : key;
      Live& l = then[full];
      l.bytes -= c.bytes;
      l.blocks -= c.blocks;
    }
    PeakComposition out;
    out.event_index = log.event_index;
    out.t = log.t;
    absl::flat_hash_map<uint32_t, uint64_t> scopes, sites;
    for (const auto& [key, l] : then) {
      if (l.blocks <= 0) continue;
      const uint64_t bytes = static_cast<uint64_t>(l.bytes);
      scopes[static_cast<uint32_t>(key >> 32)] += bytes;
      sites[static_cast<uint32_t>(key)] += bytes;
      out.live_bytes += bytes;
    }
    SetLargestFirst(scopes, sites, &out);
    return out;
  };
  Peaks out;
  out.global = composition(moments_->global, false, 0);
  for (const auto& [scope, event] : main_.summary.scope_peak_event) {
    auto log = moments_->scopes.find(scope);
    if (log == moments_->scopes.end()) continue;  // not reached: a peak was logged
    out.scopes.push_back(ScopePeak{scope, event, log->second.t, log->second.total_live_bytes,
                                   composition(log->second, true, scope)});
  }
  std::sort(out.scopes.begin(), out.scopes.end(), [](const ScopePeak& a, const ScopePeak& b) {
    return a.composition.live_bytes != b.composition.live_bytes
               ? a.composition.live_bytes > b.composition.live_bytes
               : a.scope < b.scope;
  });
  return out;
}

absl::StatusOr<Analyzer::Peaks> Analyzer::PeaksOf(const std::string& path,
                                                  const CaptureSummary& summary,
                                                  const std::vector<uint32_t>& scopes,
                                                  const Progress& progress) {
  // The moments to stop at, in replay order: event index -> scopes peaking there.
  std::map<uint64_t, std::vector<uint32_t>> moments;
  for (const auto& [scope, event] : summary.scope_peak_event) {
    if (scopes.empty() || std::find(scopes.begin(), scopes.end(), scope) != scopes.end()) {
      moments[event].push_back(scope);
    }
  }
  const uint64_t global = summary.peak_event_index;
  uint64_t last = global;
  if (!moments.empty()) last = std::max(last, moments.rbegin()->first);
  Peaks out;
  Analyzer replay;
  // Nothing after the last moment matters (the rest of the file is still read and
  // checked).
  replay.StopAfter(last);
  bool global_taken = false;
  if (global == 0) {  // no event raised the high-water mark: the empty start
    out.global = replay.Composition();
    global_taken = true;
  }
  auto next = moments.begin();
  // Right after each event is applied, the replay's state is that after the event.
  uint64_t read = 0;
  auto at_moment = [&](const CaptureRecord& rec) {
    if (!IsEvent(rec.type)) return absl::OkStatus();
    ++read;
    if ((global_taken || read != global) && (next == moments.end() || read != next->first)) {
      return absl::OkStatus();
    }
    const uint64_t at = replay.events_applied();
    if (!global_taken && at == global) {
      out.global = replay.Composition();
      global_taken = true;
    }
    while (next != moments.end() && at == next->first) {
      const uint64_t total = replay.Composition().live_bytes;
      for (uint32_t scope : next->second) {
        out.scopes.push_back(
            ScopePeak{scope, next->first, replay.last_t_, total, replay.Composition(scope)});
      }
      ++next;
    }
    return absl::OkStatus();
  };
  CaptureReadStats stats;
  replay.SkipFileChecksum();  // the summary's pass checked the file
  absl::Status s = replay.ApplyFile(path, &stats, progress, at_moment);
  if (!s.ok()) return s;
  // A moment the replay never reached (the file changed since `summary` was made) is
  // left out rather than reported from the wrong state.
  if (!global_taken) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " has fewer events (", replay.events_applied(),
        ") than when it was summarized (high-water after event ", global,
        "); was it rewritten meanwhile? Run the command again"));
  }
  std::sort(out.scopes.begin(), out.scopes.end(), [](const ScopePeak& a, const ScopePeak& b) {
    return a.composition.live_bytes != b.composition.live_bytes
               ? a.composition.live_bytes > b.composition.live_bytes
               : a.scope < b.scope;
  });
  return out;
}

}  // namespace memtrace
