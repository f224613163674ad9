// Copyright 2026 The memtrace Authors.

#include "analysis/analyzer.h"

#include <algorithm>

namespace memtrace {
namespace {

uint64_t AddressKey(uint32_t layer, uint64_t addr) {
  return addr ^ (uint64_t{layer} << 56);
}

}  // namespace

std::vector<Difference> Compare(const CaptureSummary& before, const CaptureSummary& after) {
  std::map<std::string, Difference> by_path;
  auto path_of = [](const CaptureSummary& s, uint32_t id) {
    auto it = s.scope_paths.find(id);
    return it != s.scope_paths.end() ? it->second : std::string("(scope ") +
                                                        std::to_string(id) + ")";
  };
  for (const auto& [id, usage] : before.scopes) {
    Difference& d = by_path[path_of(before, id)];
    d.path = path_of(before, id);
    d.before = usage;
  }
  for (const auto& [id, usage] : after.scopes) {
    Difference& d = by_path[path_of(after, id)];
    d.path = path_of(after, id);
    d.after = usage;
  }
  std::vector<Difference> out;
  out.push_back(Difference{"TOTAL", before.totals, after.totals});
  std::vector<Difference> rows;
  for (auto& [path, d] : by_path) rows.push_back(d);
  std::sort(rows.begin(), rows.end(), [](const Difference& a, const Difference& b) {
    const int64_t la = a.live_delta() < 0 ? -a.live_delta() : a.live_delta();
    const int64_t lb = b.live_delta() < 0 ? -b.live_delta() : b.live_delta();
    if (la != lb) return la > lb;
    const int64_t ha = a.high_water_delta() < 0 ? -a.high_water_delta() : a.high_water_delta();
    const int64_t hb = b.high_water_delta() < 0 ? -b.high_water_delta() : b.high_water_delta();
    if (ha != hb) return ha > hb;
    return a.path < b.path;
  });
  out.insert(out.end(), rows.begin(), rows.end());
  return out;
}

absl::StatusOr<CaptureSummary> Analyzer::Summarize(const std::string& path,
                                                   uint64_t stop_after) {
  Analyzer analyzer;
  analyzer.StopAfter(stop_after);
  CaptureReadStats stats;
  absl::Status s = ReadCapture(
      path, [&](const CaptureRecord& rec) { return analyzer.Apply(rec); }, &stats);
  if (!s.ok()) return s;
  return analyzer.Finish(stats);
}

absl::StatusOr<CaptureSummary> Analyzer::SummarizeText(std::string_view text,
                                                       const std::string& name) {
  Analyzer analyzer;
  CaptureReadStats stats;
  absl::Status s = ReadCaptureText(
      text, name, [&](const CaptureRecord& rec) { return analyzer.Apply(rec); }, &stats);
  if (!s.ok()) return s;
  return analyzer.Finish(stats);
}

void Analyzer::Account(const Block& b, bool allocate) {
  UsageCounters* all[] = {&summary_.totals, &summary_.layers[b.layer], &summary_.scopes[b.scope],
                          &attribution_[AttributionKey{b.site, b.scope, b.layer}]};
  for (UsageCounters* c : all) {
    if (allocate) {
      c->Allocate(b.size);
    } else {
      c->Free(b.size);
    }
  }
  if (live_change_hook_) live_change_hook_(b.scope, b.layer);
}

void Analyzer::Allocate(uint64_t ticket, const Block& b) {
  live_[ticket] = b;
  by_address_[AddressKey(b.layer, b.addr)].push_back(ticket);
  Account(b, /*allocate=*/true);
}

bool Analyzer::Take(uint64_t of, uint32_t layer, uint64_t addr, Block* out) {
  auto it = live_.find(of);
  uint64_t ticket = of;
  if (it == live_.end() || it->second.addr != addr || it->second.layer != layer) {
    auto at = by_address_.find(AddressKey(layer, addr));
    if (at == by_address_.end() || at->second.empty()) return false;
    ticket = at->second.front();  // the oldest block at the address
    it = live_.find(ticket);
    if (it == live_.end()) return false;
  }
  *out = it->second;
  live_.erase(it);
  auto at = by_address_.find(AddressKey(layer, addr));
  if (at != by_address_.end()) {
    auto& tickets = at->second;
    tickets.erase(std::find(tickets.begin(), tickets.end(), ticket));
    if (tickets.empty()) by_address_.erase(at);
  }
  return true;
}

absl::Status Analyzer::Apply(const CaptureRecord& rec) {
  const bool is_event = rec.type >= LineType::kAlloc && rec.type <= LineType::kIntervalEnd;
  if (is_event) {
    if (events_seen_ >= stop_after_) return absl::OkStatus();
    ++events_seen_;
    last_t_ = rec.t;
    ++thread_events_[rec.thread];
  }
  const uint64_t high_water_before = summary_.totals.high_water_bytes;
  absl::Status s = ApplyLine(rec);
  if (summary_.totals.high_water_bytes > high_water_before) {
    summary_.peak_event_index = events_seen_;
    summary_.peak_t = last_t_;
  }
  return s;
}

absl::Status Analyzer::ApplyLine(const CaptureRecord& rec) {
  switch (rec.type) {
    case LineType::kHeader:
      summary_.pid = rec.pid;
      break;
    case LineType::kLayer:
      summary_.layer_names[rec.id] = rec.name;
      break;
    case LineType::kScope:
      summary_.scope_paths[rec.id] = rec.path;
      break;
    case LineType::kSite:
      summary_.site_addrs[rec.id] = rec.addr;
      break;
    case LineType::kModule:
      break;
    case LineType::kAlloc:
      Allocate(rec.ticket, Block{rec.addr, rec.size, rec.scope, rec.site, rec.layer,
                                 rec.thread, thread_events_[rec.thread]});
      NoteAllocation(rec.thread, rec.ticket);
      break;
    case LineType::kFree: {
      Block b;
      if (Take(rec.of, rec.layer, rec.addr, &b)) {
        Account(b, /*allocate=*/false);
        if (b.thread == rec.thread &&
            thread_events_[rec.thread] - b.thread_event <= kTemporaryEvents) {
          ++summary_.temporaries;
          summary_.temporary_bytes += b.size;
          ++temporaries_by_key_[(uint64_t{b.site} << 40) ^ (uint64_t{b.scope} << 8) ^ b.layer];
        }
      } else {
        ++summary_.unmatched_releases;
      }
      break;
    }
    case LineType::kResize: {
      Block b;
      if (!Take(rec.of, rec.layer, rec.addr, &b)) {
        ++summary_.unmatched_releases;
        break;
      }
      UsageCounters* all[] = {&summary_.totals, &summary_.layers[b.layer],
                              &summary_.scopes[b.scope]};
      for (UsageCounters* c : all) c->Resize(b.size, rec.size);
      attribution_[AttributionKey{b.site, b.scope, b.layer}].Resize(b.size, rec.size);
      if (live_change_hook_) live_change_hook_(b.scope, b.layer);
      b.size = rec.size;
      live_[rec.ticket] = b;  // the block answers to the resize's ticket now
      by_address_[AddressKey(b.layer, b.addr)].push_back(rec.ticket);
      break;
    }
    case LineType::kRemap: {
      Block b;
      Moving& m = moving_[rec.thread];
      m = Moving{};
      if (Take(rec.of, rec.layer, rec.addr, &b)) {
        Account(b, /*allocate=*/false);
        m = Moving{true, b.scope, b.site};
      } else {
        ++summary_.unmatched_releases;
      }
      break;
    }
    case LineType::kRemapTarget: {
      Moving& m = moving_[rec.thread];
      Block b{rec.addr, rec.size, rec.scope, rec.site, rec.layer};
      if (m.active) {
        b.scope = m.scope;
        b.site = m.site;
      }
      m = Moving{};
      Allocate(rec.ticket, b);
      break;
    }
    case LineType::kArenaReset: {
      std::vector<uint64_t> released;
      for (const auto& [ticket, b] : live_) {
        if (b.layer == rec.layer) released.push_back(ticket);
      }
      for (uint64_t ticket : released) {
        const Block b = live_[ticket];
        Block taken;
        Take(ticket, b.layer, b.addr, &taken);
        Account(b, /*allocate=*/false);
      }
      break;
    }
    case LineType::kScopeEnter:
      open_scopes_[rec.thread].push_back(OpenScope{rec.scope, {}});
      break;
    case LineType::kScopeExit:
      CloseScope(rec.thread, rec.scope);
      break;
    case LineType::kCensus:
      census_[rec.label] = rec.bytes;
      break;
    case LineType::kIntervalBegin:
    case LineType::kIntervalEnd:
      break;
    case LineType::kTrailer:
      summary_.has_trailer = true;
      summary_.trailer_complete = rec.complete;
      summary_.trailer = rec.raw;
      break;
  }
  return absl::OkStatus();
}

void Analyzer::NoteAllocation(uint32_t thread, uint64_t ticket) {
  auto it = open_scopes_.find(thread);
  if (it != open_scopes_.end() && !it->second.empty()) {
    it->second.back().tickets.push_back(ticket);
  }
}

void Analyzer::CloseScope(uint32_t thread, uint32_t scope) {
  auto it = open_scopes_.find(thread);
  if (it == open_scopes_.end()) return;
  auto& stack = it->second;
  // Exits are recorded innermost first; close up to and including `scope`.
  while (!stack.empty()) {
    OpenScope open = std::move(stack.back());
    stack.pop_back();
    Retention& r = retention_[open.scope];
    r.scope = open.scope;
    ++r.exits;
    uint64_t blocks = 0, bytes = 0;
    std::vector<uint64_t> survivors;
    for (uint64_t ticket : open.tickets) {
      auto live = live_.find(ticket);
      if (live != live_.end()) {
        ++blocks;
        bytes += live->second.size;
        survivors.push_back(ticket);
      }
    }
    // What outlived this scope was also allocated inside the enclosing one.
    if (!stack.empty()) {
      auto& parent = stack.back().tickets;
      parent.insert(parent.end(), survivors.begin(), survivors.end());
    }
    if (blocks > 0) ++r.exits_retaining;
    r.retained_blocks += blocks;
    r.retained_bytes += bytes;
    if (open.scope == scope) break;
  }
}

CaptureSummary Analyzer::Finish(const CaptureReadStats& stats) {
  for (const auto& [scope, r] : retention_) summary_.retention.push_back(r);
  summary_.events = stats.events;
  summary_.live_blocks = live_.size();
  for (const auto& [key, usage] : attribution_) {
    auto it = summary_.site_addrs.find(key.site);
    auto tmp = temporaries_by_key_.find((uint64_t{key.site} << 40) ^
                                        (uint64_t{key.scope} << 8) ^ key.layer);
    summary_.attribution.push_back(AllocationAttribution{
        key.site, it != summary_.site_addrs.end() ? it->second : 0, key.scope, key.layer,
        usage, tmp != temporaries_by_key_.end() ? tmp->second : 0});
  }
  Coverage& c = summary_.coverage;
  for (const auto& [scope, usage] : summary_.scopes) {
    (scope == 0 ? c.allocated_unscoped : c.allocated_scoped) += usage.allocated_bytes;
    (scope == 0 ? c.live_unscoped : c.live_scoped) += usage.live_bytes;
  }
  for (const auto& [label, bytes] : census_) c.census_bytes += bytes;
  c.census_entries = census_.size();
  return std::move(summary_);
}

PeakComposition Analyzer::Composition() const {
  PeakComposition out;
  out.event_index = events_seen_;
  out.t = last_t_;
  absl::flat_hash_map<uint32_t, uint64_t> scopes, sites;
  for (const auto& [ticket, b] : live_) {
    scopes[b.scope] += b.size;
    sites[b.site] += b.size;
    out.live_bytes += b.size;
  }
  out.by_scope.assign(scopes.begin(), scopes.end());
  out.by_site.assign(sites.begin(), sites.end());
  auto larger = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  std::sort(out.by_scope.begin(), out.by_scope.end(), larger);
  std::sort(out.by_site.begin(), out.by_site.end(), larger);
  return out;
}

absl::StatusOr<PeakComposition> Analyzer::Peak(const std::string& path) {
  auto summary = Summarize(path);
  if (!summary.ok()) return summary.status();
  Analyzer replay;
  replay.StopAfter(summary->peak_event_index);
  CaptureReadStats stats;
  absl::Status s = ReadCapture(
      path, [&](const CaptureRecord& rec) { return replay.Apply(rec); }, &stats);
  if (!s.ok()) return s;
  return replay.Composition();
}

}  // namespace memtrace
